"""The depth and node-count bounds of yaml_limits.py, checked on PyYAML's event stream before a
document is built, and the safe loader every parse uses. A module of its own so that what only
reads files, or a manifest's data from the check cache, does not import PyYAML."""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from flowrun.yaml_limits import MAX_DEPTH, MAX_NODES, Refusal

Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _refuse(event: yaml.Event, message: str, hint: str, code: str = "too-large") -> Refusal:
    mark = event.start_mark
    line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    return Refusal(message, hint, code, line, column)


@dataclass(slots=True)
class _Open:
    """A mapping or list whose end has not been seen yet."""

    size: int
    anchor: str | None


class _Budget:
    """The running count of nodes as the composed data would hold them (aliases expanded)."""

    def __init__(self) -> None:
        self.total = 0
        self.anchors: dict[str, int] = {}  # anchor -> expanded size, once its node is complete
        self.open: list[_Open] = []

    def add(self, size: int, anchor: str | None) -> None:
        if anchor:
            self.anchors[anchor] = size
        if self.open:
            self.open[-1].size += size


def scan_events(text: str) -> Refusal | None:
    """Walk the parser's events once and refuse the document at the first limit it crosses.
    YAML syntax errors are left to the composer, which reports them with their position."""
    budget = _Budget()
    try:
        for event in yaml.parse(text, Loader=Loader):
            refusal = _step(budget, event)
            if refusal is not None:
                return refusal
    except yaml.YAMLError:
        return None
    return None


def _step(budget: _Budget, event: yaml.Event) -> Refusal | None:
    if isinstance(event, yaml.DocumentStartEvent):
        budget.anchors.clear()
        return None
    if isinstance(event, yaml.CollectionStartEvent):
        budget.open.append(_Open(1, event.anchor))
        budget.total += 1
        if len(budget.open) > MAX_DEPTH:
            return _refuse(event, f"nesting deeper than {MAX_DEPTH} levels", "flatten the structure")
    elif isinstance(event, yaml.CollectionEndEvent):
        done = budget.open.pop()
        budget.add(done.size, done.anchor)
    elif isinstance(event, yaml.ScalarEvent):
        budget.total += 1
        budget.add(1, event.anchor)
    elif isinstance(event, yaml.AliasEvent):
        size = budget.anchors.get(str(event.anchor))
        if size is None:
            recursive = any(entry.anchor == event.anchor for entry in budget.open)
            what = "refers to a node that contains it" if recursive else "has no anchor defined before it"
            return _refuse(event, f"alias *{event.anchor} {what}", "define `&name` before `*name`", "alias")
        budget.total += size
        budget.add(size, None)
    if budget.total > MAX_NODES:
        return _refuse(
            event,
            f"more than {MAX_NODES:,} values once aliases are expanded",
            "a manifest this large is a mistake (or an alias bomb): write it out plainly",
        )
    return None
