"""Markdown files with YAML front matter (Claude Code agents, a skill's SKILL.md): the front
matter read with the line and column of every key in the file itself, and the body."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.yaml_source import Source, parse_text
from flowrun.yaml_limits import read_limited


@dataclass(slots=True)
class Document:
    source: Source  # the front matter (positions are the file's lines)
    body: str  # the Markdown after the closing ---
    body_line: int  # the file line the body starts on


def load_document(path: Path, display: str) -> tuple[Document, list[Diagnostic]]:
    """`path` split into its front matter and body. Problems (an unreadable or oversized file,
    no front matter, YAML syntax, the YAML limits, duplicate keys) come back as diagnostics;
    `source.data` is None when the front matter cannot be read."""
    src = Source(path=path, display=display)
    text = read_limited(path)
    if not isinstance(text, str):
        return Document(src, "", 1), [
            Diagnostic(display, text.line, text.column, "", text.message, text.hint, text.code)
        ]
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        message = "no YAML front matter: the file must start with a line `---`"
        return Document(src, text, 1), [
            Diagnostic(display, 1, 1, "", message, "add ---, name:, description:, ---", "no-front-matter")
        ]
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        message = "the front matter is not closed by a line `---`"
        hint = "add a line ---"
        return Document(src, "", 1), [Diagnostic(display, 1, 1, "", message, hint, "no-front-matter")]
    doc = Document(src, "\n".join(lines[end + 1 :]).strip("\n"), end + 2)
    # padded with one empty line, so the YAML reader's lines are the file's
    src.text = "\n" + "\n".join(lines[1:end]) + "\n"
    if not src.text.strip():
        src.data = {}
        return doc, []
    problems = parse_text(src)
    if src.data is not None and not isinstance(src.data, dict):
        problems.append(src.diag((), "the front matter must be a mapping of keys", "", "not-a-mapping"))
        src.data = None
    return doc, problems
