"""What of a manifest with schema errors can still be checked: its data without the values the
errors are about (an unknown key, a value of the wrong type, an entry missing a required key,
a list item of the wrong shape), so the cross-reference checks run on the rest and `validate`
reports every problem in one pass. The schema errors themselves are reported as they are; the
values cut here are recorded on the source (`Source.cut`, as written), and checks leave out
what follows from their absence alone (an agent whose unreadable `prompt` would otherwise
have "no prompt")."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.schema.check import did_you_mean, likeliest_branch, validator_for
from flowrun.manifest.spec_base import NAME
from flowrun.manifest.specs import KINDS, Strict
from flowrun.manifest.yaml_source import PathKey, Source

if TYPE_CHECKING:
    from jsonschema import ValidationError

ROUNDS = 25  # each round cuts at least one value; a file with more problems is not salvaged


def salvage(kind: str, src: Source) -> tuple[Strict | None, Source]:
    """The typed spec of what `src` holds that its kind's JSON Schema and model accept, and the
    source with that data and what was cut; (None, src) when nothing sensible is left (the
    file is not a mapping, a top-level key that cannot be guessed is missing, a rule over the
    whole file)."""
    if not isinstance(src.data, dict):
        return None, src
    done = Found()
    for _ in range(ROUNDS):
        kept, remap = without(src.data, done.cuts, done.renames)
        data = cast("dict[str, object]", kept) | done.fills  # (a mapping stays one)
        spec, found = _attempt(kind, {**data, "kind": kind}, src)
        if spec is not None:  # a key filled in counts as cut: what it names cannot be known
            cut = tuple(sorted(done.cuts | {(key,) for key in done.fills}, key=str))
            return spec, dataclasses.replace(src, data=data, remap={**src.remap, **remap}, cut=cut)
        if found is None or not done.add(found, remap):
            return None, src  # nothing to cut, or the same problem again
    return None, src


@dataclass
class Found:
    """What to change in a manifest's data to read the rest: values to cut and keys to rename
    (written paths), top-level keys to fill in."""

    cuts: set[PathKey] = field(default_factory=set)
    renames: dict[PathKey, str] = field(default_factory=dict)  # a misspelt key -> the key it means
    fills: dict[str, object] = field(default_factory=dict)
    missing: list[PathKey] = field(default_factory=list)  # (as in the data) required keys not there

    def add(self, found: Found, remap: dict[PathKey, PathKey]) -> bool:
        """Take what a round found (in the paths of its data); False when it is nothing new."""
        cuts = {_written(c, remap) for c in found.cuts}
        renames = {_written(k, remap): v for k, v in found.renames.items()}
        new = cuts - self.cuts or renames.items() - self.renames.items()
        if not new and found.fills.items() <= self.fills.items():
            return False
        self.cuts |= cuts
        self.renames |= renames
        self.fills |= found.fills
        return True


def _attempt(kind: str, data: dict[str, object], src: Source) -> tuple[Strict | None, Found | None]:
    """The spec of `data` when its JSON Schema and model accept it, else what to change (None:
    nothing can be)."""
    from pydantic import ValidationError

    found = Found()
    for err in validator_for(kind).iter_errors(cast("Any", data)):  # (JSON: yaml_source made it)
        if not _schema_cuts(err, found):
            return None, None
    if not _settle_missing(found, src):
        return None, None
    if found.cuts or found.renames or found.fills:
        return None, found
    try:
        return KINDS[kind].model_validate(data), None
    except ValidationError as e:
        for problem in e.errors():  # what the JSON Schema let through (pydantic's own rules)
            at = _match(data, tuple(problem["loc"]))
            if not at:
                return None, None
            found.cuts.add(at)
        return None, found


def _schema_cuts(err: ValidationError, found: Found) -> bool:
    """Add to `found` what the JSON Schema error `err` is about; False when it is about the
    file as a whole."""
    path = tuple(err.absolute_path)
    schema = err.schema if isinstance(err.schema, dict) else {}
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = set(schema.get("properties", {}))
        patterns = list(schema.get("patternProperties", {}))
        extra = [k for k in err.instance if k not in allowed and not any(re.search(p, k) for p in patterns)]
        for key in extra:
            meant = did_you_mean(key, allowed - set(err.instance)).removeprefix("did you mean '")
            if meant:  # read its value as the key it misspells
                found.renames[(*path, key)] = meant.removesuffix("'?")
            else:
                found.cuts.add((*path, key))
        return True
    if err.validator == "required":
        required = err.validator_value if isinstance(err.validator_value, list) else []
        found.missing += [(*path, key) for key in required if key not in err.instance]
        return True
    if err.validator in ("anyOf", "oneOf") and err.context:
        if all(_schema_cuts(c, found) for c in likeliest_branch(err)):
            return True
    if not path:
        return False
    found.cuts.add(path)
    return True


def _settle_missing(found: Found, src: Source) -> bool:
    """A required key not there: one a misspelt key is renamed to is there next round; else a
    top-level one is filled in and an inner one's mapping cut. False when a top-level key
    cannot be filled in."""
    coming = {(*key[:-1], meant) for key, meant in found.renames.items()}
    for at in found.missing:
        if at in coming:
            continue
        key = str(at[-1])
        if len(at) > 1:
            found.cuts.add(at[:-1])
        elif (fill := _fill(key, src)) is None:
            return False
        else:
            found.fills[key] = fill
    return True


def _fill(key: str, src: Source) -> object | None:
    """A value for a missing (or unreadable) top-level key that the rest can be checked with:
    the format version, and a name from the file's name."""
    if key == "version":
        return 1
    if key == "models":  # a models manifest's whole mapping
        return {}
    if key == "name" and re.match(NAME, src.path.stem):
        return src.path.stem
    return None


def _match(value: object, loc: tuple[object, ...]) -> PathKey:
    """The longest path into `value` that `loc` (pydantic's, which names a union's member or a
    value's type between the keys) spells; of equally long ones, the one matching later parts
    (a member's tag can be a key of the value as well)."""
    if not loc:
        return ()
    head, rest = loc[0], loc[1:]
    best = _match(value, rest)  # `head` a tag
    inner: object = None
    if isinstance(value, dict) and isinstance(head, str) and head in value:
        inner = value[head]
    elif isinstance(value, list) and isinstance(head, int) and 0 <= head < len(value):
        inner = value[head]
    else:
        return best
    deeper: PathKey = (head, *_match(inner, rest))
    return deeper if len(deeper) > len(best) else best


def without(
    data: object,
    cuts: set[PathKey],
    renames: dict[PathKey, str],
    written: PathKey = (),
    effective: PathKey = (),
) -> tuple[object, dict[PathKey, PathKey]]:
    """`data` without the values at `cuts` and with the keys `renames` names under the keys
    they misspell (both by written path), and where each renamed key or moved list item is
    written (effective path -> written path, the shape of `Source.remap`)."""
    remap: dict[PathKey, PathKey] = {}
    if isinstance(data, dict):
        out: dict[object, object] = {}
        for key, value in data.items():  # (a manifest's keys are text: yaml_source makes them so)
            name = renames.get((*written, key), str(key))
            if name != key:  # kept even when its value is cut: the key it means was written
                remap[(*effective, name)] = (*written, key)
            if (*written, key) not in cuts:
                out[name], inner = without(value, cuts, renames, (*written, key), (*effective, name))
                remap |= inner
        return out, remap
    if isinstance(data, list):
        items: list[object] = []
        for i, value in enumerate(data):
            if (*written, i) in cuts:
                continue
            at = (*effective, len(items))
            if at != (*written, i):
                remap[at] = (*written, i)
            kept, inner = without(value, cuts, renames, (*written, i), at)
            remap |= inner
            items.append(kept)
        return items, remap
    return data, remap


def _written(parts: PathKey, remap: dict[PathKey, PathKey]) -> PathKey:
    """An effective path of the salvaged data as written in the file."""
    for n in range(len(parts), 0, -1):
        target = remap.get(parts[:n])
        if target is not None:
            return (*target, *parts[n:])
    return parts


ANY_NAME = "*"  # among names: the whole mapping was unreadable, so any name may be one of them


def unreadable(src: Source, key: str) -> set[str]:
    """The names written under the mapping `key` whose entries (or the whole mapping) a schema
    error made unreadable: they exist, so a reference to one is not reported as unknown. When
    `key` holds no mapping at all, ANY_NAME: what it would name cannot be told."""
    names = {str(p[1]) for p in src.keys if len(p) == 2 and p[0] == key and src.was_cut(p)}
    return names or ({ANY_NAME} if src.was_cut((key,)) else set())


def among(name: str, names: AbstractSet[str]) -> bool:
    """Whether `name` is one of `names`, or may be (they hold ANY_NAME: see `unreadable`)."""
    return name in names or ANY_NAME in names


def follow_ons(cut: dict[str, tuple[PathKey, ...]], found: list[Diagnostic]) -> list[Diagnostic]:
    """`found` without the problems at or under a value cut from its file (`cut`: file as
    diagnostics name it -> the paths cut there): the schema error there says it."""
    from flowrun.manifest.diagnostics import yaml_path

    shown = {file: [yaml_path(p) for p in paths] for file, paths in cut.items() if paths}
    return [d for d in found if not any(_under(d.path, p) for p in shown.get(d.file, []))]


def _under(path: str, cut: str) -> bool:
    return path == cut or path.startswith((cut + ".", cut + "["))
