"""Read a YAML file into plain data plus the line and column of every key and value, so any
later check can point at file:line:column.

No file can make loading slow, big or crash: only regular files are read, at most
MAX_FILE_BYTES of them; the event stream is scanned before anything is built, so nesting
deeper than MAX_DEPTH, more than MAX_NODES nodes once aliases are expanded (the "billion laughs")
and recursive or undefined aliases are refused at the line where they occur (yaml_limits.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flowrun.manifest.diagnostics import Diagnostic, yaml_path
from flowrun.yaml_limits import Refusal, read_limited

if TYPE_CHECKING:  # PyYAML is imported when a file is parsed: a run answered from the check cache parses none
    import yaml

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
    # written paths of values a schema error made unreadable, left out of `data` so the rest can
    # still be checked (schema/salvage.py)
    cut: tuple[PathKey, ...] = ()

    def written_at(self, parts: PathKey) -> PathKey:
        """`parts` as written in this file (see `remap`)."""
        parts = tuple(parts)
        for n in range(len(parts), 0, -1):
            target = self.remap.get(parts[:n])
            if target is not None:
                return (*target, *parts[n:])
        return parts

    def was_cut(self, parts: PathKey) -> bool:
        """Whether the value at `parts` (or one holding it) was unreadable and left out: what
        follows from its absence alone (a missing prompt, an unknown name) is not a problem
        of its own."""
        written = self.written_at(parts)
        return any(written[: len(c)] == c for c in self.cut)

    def lost(self, parts: PathKey, *keys: str) -> bool:
        """Whether one of `keys` under `parts` was unreadable and left out: a rule over which of
        them are present ("exactly one of ...") cannot be judged."""
        return any(self.was_cut((*parts, key)) for key in keys)

    def cut_within(self, parts: PathKey) -> bool:
        """Whether anything at, above or under `parts` was unreadable and left out."""
        written = self.written_at(parts)
        return self.was_cut(parts) or any(c[: len(written)] == written for c in self.cut)

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


COLLECTION_TAGS = ("tag:yaml.org,2002:map", "tag:yaml.org,2002:seq")


def _shape(node: yaml.Node) -> str:
    """PyYAML's name for what a node is: "mapping", "sequence" or "scalar"."""
    return str(getattr(node, "id", ""))


def _at_node(node: yaml.Node, src: Source, path: str, message: str, hint: str) -> Diagnostic:
    """A `yaml-value` diagnostic at where `node` starts."""
    mark = node.start_mark
    return Diagnostic(src.display, mark.line + 1, mark.column + 1, path, message, hint, "yaml-value")


def _walk(node: yaml.Node, parts: PathKey, src: Source, dupes: list[Diagnostic]) -> object:
    mark = node.start_mark
    src.values[parts] = (mark.line + 1, mark.column + 1)
    shape = _shape(node)
    if shape in ("mapping", "sequence") and node.tag not in COLLECTION_TAGS:
        dupes.append(
            _at_node(
                node,
                src,
                yaml_path(parts),
                f"the tag {node.tag} is not supported in manifests",
                "remove the tag: a plain mapping or list is all a manifest needs",
            )
        )
    if shape == "mapping":
        out: dict[object, object] = {}
        merged: dict[object, object] = {}  # `<<: *anchor`'s keys: the mapping's own keys win
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                merged = _merge(value_node, parts, src, dupes, merged)
                src.values[parts] = (mark.line + 1, mark.column + 1)
                continue
            key = _key(key_node, src, dupes)
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
        return {**merged, **out} if merged else out
    if shape == "sequence":
        return [_walk(child, (*parts, i), src, dupes) for i, child in enumerate(node.value)]
    return _scalar(node, src, dupes)


def _merge(
    node: yaml.Node, parts: PathKey, src: Source, problems: list[Diagnostic], merged: dict[object, object]
) -> dict[object, object]:
    """`merged` with what a merge key (`<<: *anchor`, or a list of them) brings: a key already
    there, or in an earlier mapping of the list, wins (YAML's merge); anything but mappings
    is reported."""
    value = _walk(node, parts, src, problems)
    items = value if isinstance(value, list) else [value]
    for item in items:
        if not isinstance(item, dict):
            problems.append(
                _at_node(
                    node,
                    src,
                    yaml_path(parts),
                    "`<<` merges a mapping (an alias *name of one) or a list of them",
                    "point it at an anchored mapping: `base: &base {...}` then `<<: *base`",
                )
            )
            break
        merged = {**item, **merged}
    return merged


def _key(node: yaml.Node, src: Source, problems: list[Diagnostic]) -> str:
    """A mapping key as text, as JSON (and so the schema) has them: `0: x` and `true: x` have
    the keys "0" and "true". A list or mapping used as a key is reported."""
    if _shape(node) != "scalar":
        problems.append(
            _at_node(
                node,
                src,
                "",
                "a list or mapping used as a key",
                "keys are names: write `name: value`",
            )
        )
        return f"<{'mapping' if _shape(node) == 'mapping' else 'list'} key>"
    key = _scalar(node, src, problems)
    return key if isinstance(key, str) else str(node.value)


@cache
def _constructor() -> yaml.SafeLoader:
    import yaml

    return yaml.SafeLoader("")


def _scalar(node: yaml.Node, src: Source | None = None, problems: list[Diagnostic] | None = None) -> object:
    """A scalar's value by the safe loader's rules. A value its tag cannot hold (`!!int abc`,
    a 13th month, an unknown `!tag`) is a diagnostic, and its text is kept in its place."""
    try:
        return _constructor().construct_object(node, deep=True)
    except Exception as e:  # the constructors raise KeyError, ValueError, binascii errors, ...
        if src is not None and problems is not None:
            reason = getattr(e, "problem", None) or str(e)
            problems.append(
                _at_node(
                    node,
                    src,
                    "",
                    f"cannot read the value {str(node.value)[:60]!r} as {node.tag}: {reason}",
                    "quote the value to make it text, or write it in the form the tag expects",
                )
            )
        return str(node.value)


def _syntax_error(e: yaml.MarkedYAMLError, line: str) -> tuple[str, str]:
    """What a YAML syntax error on `line` says, and the hint that fits it."""
    problem = e.problem or str(e)
    if e.context == "expected a single document in the stream":
        message = "a manifest file holds one YAML document, and another one starts here"
        return message, "put each manifest in a file of its own (a `---` line starts a document)"
    context = f" {e.context}" if e.context else ""
    if "\t" in line[: len(line) - len(line.lstrip())] or "tab character" in problem:
        hint = "YAML indents with spaces, never tabs: replace the tab at the start of the line"
    else:
        hint = "check indentation and quoting on this line and the one before it"
        hint += " (a value with ': ' or '#' needs quotes)"
    return f"YAML syntax error: {problem}{context}", hint


def load_source(path: Path, display: str | None = None) -> tuple[Source, list[Diagnostic]]:
    """Parse `path`. Problems (unreadable, special or oversized file, YAML syntax, a limit of
    yaml_limits.py, duplicate keys) come back as diagnostics; `source.data` is None when the
    file could not be parsed."""
    src = Source(path=path, display=display or str(path))
    text = read_limited(path)
    if not isinstance(text, str):
        return src, [_refusal(src, text)]
    src.text = text
    return src, parse_text(src)


def parse_text(src: Source) -> list[Diagnostic]:
    """Parse `src.text` into `src.data` (None when it cannot be parsed) and its positions."""
    import yaml

    from flowrun.yaml_scan import Loader, scan_events

    refusal = scan_events(src.text)
    if refusal is not None:
        return [_refusal(src, refusal)]
    try:
        node = yaml.compose(src.text, Loader=Loader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        lines = src.text.splitlines()
        message, hint = _syntax_error(e, lines[line - 1] if 0 < line <= len(lines) else "")
        return [Diagnostic(src.display, line, col, "", message, hint, "yaml-syntax")]
    except yaml.YAMLError as e:
        return [
            Diagnostic(src.display, 1, 1, "", f"YAML error: {' '.join(str(e).split())}", "", "yaml-syntax")
        ]
    if node is None:
        src.data = None
        return [Diagnostic(src.display, 1, 1, "", "the file is empty", "add a manifest", "empty")]
    problems: list[Diagnostic] = []
    src.data = _walk(node, (), src, problems)
    return problems


def _refusal(src: Source, refusal: Refusal) -> Diagnostic:
    return Diagnostic(
        src.display, refusal.line, refusal.column, "", refusal.message, refusal.hint, refusal.code
    )
