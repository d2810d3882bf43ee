"""Read a YAML file into plain data plus the line and column of every key and value, so any
later check can point at file:line:column."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from flowrun.manifest.diagnostics import Diagnostic, yaml_path

Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
PathKey = tuple[str | int, ...]


@dataclass(slots=True)
class Source:
    """A parsed YAML file: its data and where each piece of it sits."""

    path: Path
    display: str  # the path as diagnostics print it
    data: Any = None
    values: dict[PathKey, tuple[int, int]] = field(default_factory=dict)
    keys: dict[PathKey, tuple[int, int]] = field(default_factory=dict)
    text: str = ""
    # paths of an effective manifest -> where they are written (e.g. an agent's merged
    # `tools[3]` -> `tools.add[0]`, or an inherited entry -> `extends`)
    remap: dict[PathKey, PathKey] = field(default_factory=dict)

    def written_at(self, parts: PathKey) -> PathKey:
        """`parts` as written in this file (see `remap`)."""
        parts = tuple(parts)
        for n in range(len(parts), 0, -1):
            target = self.remap.get(parts[:n])
            if target is not None:
                return (*target, *parts[n:])
        return parts

    def position(self, parts: PathKey, *, key: bool = False) -> tuple[int, int]:
        """Line and column of the deepest known node on `parts` (1-based)."""
        parts = self.written_at(parts)
        while parts:
            table = self.keys if key and parts in self.keys else self.values
            if parts in table:
                return table[parts]
            parts = parts[:-1]
            key = False
        return self.values.get((), (1, 1))

    def diag(
        self,
        parts: PathKey,
        message: str,
        hint: str = "",
        code: str = "invalid",
        *,
        key: bool = False,
        severity: str = "error",
    ) -> Diagnostic:
        line, col = self.position(parts, key=key)
        shown = yaml_path(self.written_at(parts))
        return Diagnostic(self.display, line, col, shown, message, hint, code, severity)  # type: ignore[arg-type]


def _walk(node: yaml.Node, parts: PathKey, src: Source, dupes: list[Diagnostic]) -> Any:
    mark = node.start_mark
    src.values[parts] = (mark.line + 1, mark.column + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                merged = _walk(value_node, parts, src, dupes)
                for item in merged if isinstance(merged, list) else [merged]:
                    if isinstance(item, dict):
                        out = {**item, **out}
                src.values[parts] = (mark.line + 1, mark.column + 1)
                continue
            key = _scalar(key_node) if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            here = (*parts, key)
            if key in out:
                line = key_node.start_mark.line + 1
                dupes.append(
                    Diagnostic(
                        src.display,
                        line,
                        key_node.start_mark.column + 1,
                        yaml_path(here),
                        f"duplicate key '{key}' (the later value would silently win)",
                        "remove one of the two entries",
                        "duplicate-key",
                    )
                )
            src.keys[here] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            out[key] = _walk(value_node, here, src, dupes)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_walk(child, (*parts, i), src, dupes) for i, child in enumerate(node.value)]
    return _scalar(node)


_constructor = yaml.SafeLoader("")


def _scalar(node: yaml.Node) -> Any:
    return _constructor.construct_object(node, deep=True)


def load_source(path: Path, display: str | None = None) -> tuple[Source, list[Diagnostic]]:
    """Parse `path`. Problems (unreadable file, YAML syntax, duplicate keys) come back as
    diagnostics; `source.data` is None when the file could not be parsed."""
    src = Source(path=path, display=display or str(path))
    try:
        src.text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return src, [Diagnostic(src.display, 1, 1, "", f"cannot read file: {e}", "check the path", "io")]
    try:
        node = yaml.compose(src.text, Loader=Loader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = e.problem or str(e)
        context = f" {e.context}" if e.context else ""
        return src, [
            Diagnostic(
                src.display,
                line,
                col,
                "",
                f"YAML syntax error: {problem}{context}",
                "check indentation and quoting on this line and the one before it "
                "(a value with ': ' or '#' needs quotes)",
                "yaml-syntax",
            )
        ]
    except yaml.YAMLError as e:
        return src, [Diagnostic(src.display, 1, 1, "", f"YAML error: {e}", "", "yaml-syntax")]
    if node is None:
        src.data = None
        return src, [Diagnostic(src.display, 1, 1, "", "the file is empty", "add a manifest", "empty")]
    dupes: list[Diagnostic] = []
    src.data = _walk(node, (), src, dupes)
    return src, dupes
