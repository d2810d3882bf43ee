"""The keys of one foreign object, sorted the way every format treats them: keys flowrun maps
(the format's converter reads them), keys that only change how the other framework shows or
logs things (a note), keys whose behaviour flowrun does not reproduce (a warning and a note),
and unknown keys (an error when they look like a misspelling of a known one, else a warning)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from flowrun.manifest.foreign.conversion import Conversion
from flowrun.manifest.schema.check import did_you_mean
from flowrun.manifest.yaml_source import PathKey, Source


@dataclass(frozen=True)
class KeyTable:
    """What a format does with each key of one kind of object (`what`: "a CrewAI task")."""

    what: str
    used: tuple[str, ...]
    cosmetic: tuple[str, ...] = ()  # how the framework logs or shows it: nothing a run depends on
    dropped: Mapping[str, str] = field(default_factory=dict)  # key -> what flowrun does instead

    @property
    def known(self) -> tuple[str, ...]:
        return (*self.used, *self.cosmetic, *self.dropped)


def sort_keys(
    conv: Conversion, src: Source, base: PathKey, data: Mapping[str, object], table: KeyTable
) -> None:
    """Notes and problems for the keys of `data` (found at `base` in `src`) that `table` does not
    map; the mapped ones are noted by the converter that reads them."""
    for key in data:
        where = (*base, key)
        if key in table.used:
            continue
        if key in table.cosmetic:
            conv.note(src, where, "not used: it only changes what the framework prints", "dropped")
        elif key in table.dropped:
            why = table.dropped[key]
            conv.note(src, where, f"not used: {why}", "dropped")
            conv.problem(
                src,
                where,
                f"'{key}' of {table.what} is not used: {why}",
                "",
                "ignored-key",
                severity="warning",
                key=True,
            )
        else:
            _unknown(conv, src, where, str(key), table)


def _unknown(conv: Conversion, src: Source, where: PathKey, key: str, table: KeyTable) -> None:
    guess = did_you_mean(key, table.known)
    if guess:
        conv.problem(src, where, f"unknown key '{key}' in {table.what}", guess, "unknown-key", key=True)
        return
    conv.note(src, where, "unknown key: ignored", "dropped")
    message = f"unknown key '{key}' in {table.what}; it is ignored"
    hint = "known keys: " + ", ".join(table.used)
    conv.problem(src, where, message, hint, "ignored-key", severity="warning", key=True)


def mapping(conv: Conversion, src: Source, where: PathKey, value: object, what: str) -> Mapping[str, object]:
    """`value` when it is a mapping; else an error at `where` and an empty mapping."""
    if isinstance(value, Mapping):
        return value
    conv.problem(
        src, where, f"{what} must be a mapping of keys, not {type(value).__name__}", "", "wrong-type"
    )
    return {}


def text(conv: Conversion, src: Source, where: PathKey, value: object, what: str) -> str | None:
    """`value` when it is text (a number is taken as its text); else an error and None."""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    conv.problem(src, where, f"{what} must be text, not {type(value).__name__}", "", "wrong-type")
    return None


def strings(conv: Conversion, src: Source, where: PathKey, value: object, what: str) -> list[str]:
    """`value` when it is a list of texts; else an error and what of it is text."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    conv.problem(src, where, f"{what} must be a list of names", "", "wrong-type")
    return (
        [v for v in value if isinstance(v, str)]
        if isinstance(value, Iterable) and not isinstance(value, str | bytes)
        else []
    )
