"""Markdown files with YAML front matter (Claude Code agents, a skill's SKILL.md): the front
matter read with the line and column of every key in the file itself, and the body."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.yaml_source import Loader, Source, _walk


@dataclass(slots=True)
class Document:
    source: Source  # the front matter (positions are the file's lines)
    body: str  # the Markdown after the closing ---
    body_line: int  # the file line the body starts on


def load_document(path: Path, display: str) -> tuple[Document, list[Diagnostic]]:
    """`path` split into its front matter and body. Problems (no front matter, YAML syntax,
    duplicate keys) come back as diagnostics; `source.data` is None when unreadable."""
    src = Source(path=path, display=display)
    try:
        src.text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return Document(src, "", 1), [Diagnostic(display, 1, 1, "", f"cannot read file: {e}", "", "io")]
    lines = src.text.splitlines()
    if not lines or lines[0].strip() != "---":
        message = "no YAML front matter: the file must start with a line `---`"
        return Document(src, src.text, 1), [
            Diagnostic(display, 1, 1, "", message, "add ---, name:, description:, ---", "no-front-matter")
        ]
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        message = "the front matter is not closed by a line `---`"
        return Document(src, "", 1), [
            Diagnostic(display, 1, 1, "", message, "add a line ---", "no-front-matter")
        ]
    body = "\n".join(lines[end + 1 :]).strip("\n")
    doc = Document(src, body, end + 2)
    # padded with one empty line, so the YAML reader's lines are the file's
    text = "\n" + "\n".join(lines[1:end]) + "\n"
    try:
        node = yaml.compose(text, Loader=Loader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        message = f"YAML syntax error in the front matter: {e.problem or e}"
        hint = "a value with ': ' or '#' needs quotes"
        return doc, [Diagnostic(display, line, col, "", message, hint, "yaml-syntax")]
    except yaml.YAMLError as e:
        return doc, [Diagnostic(display, 1, 1, "", f"YAML error in the front matter: {e}", "", "yaml-syntax")]
    if node is None:
        src.data = {}
        return doc, []
    dupes: list[Diagnostic] = []
    src.data = _walk(node, (), src, dupes)
    if not isinstance(src.data, dict):
        return doc, [*dupes, src.diag((), "the front matter must be a mapping of keys", "", "not-a-mapping")]
    return doc, dupes
