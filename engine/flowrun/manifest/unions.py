"""The manifest unions whose members are kinds: a tool manifest's `implementation:`, a workflow
step, an agent's `context:`, an eval set's grader; and the manifest choices that are a
registry's names: a model's `provider` and `preset`. Neither is listed in specs.py: each kind's
module brings its spec model and registers it (manifest/kinds.py), each provider and preset is a
line of its table (providers/), and the union or choice is built from what is registered when
pydantic first builds a model that holds it. A kind registered later (a plugin, a test's
throw-away kind) makes every model be built again, so it is parsed like a built-in one.

`generation` counts the changes, so caches of what the unions decide (the JSON Schema a manifest
is checked against) can tell that they are stale.

The built-in kinds are registered by importing flowrun.runtime.kinds (tools, steps, contexts)
and flowrun.evals.grader_kinds (graders), which the API does; the CLI instead names those
imports with `on_first_use`, so a command that reads no manifest (or answers from the check
cache) never imports every kind. This module imports nothing heavy."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Union

if TYPE_CHECKING:
    from pydantic import BaseModel, GetCoreSchemaHandler
    from pydantic_core import CoreSchema

Tagger = Callable[[Any], str | None]
_INSTALLERS: list[tuple[frozenset[str], Callable[[], object]]] = []  # (the families it registers, it)

_MEMBERS: dict[str, dict[str, type[BaseModel]]] = {}  # family -> tag -> spec model
_TAGGERS: dict[str, Tagger] = {}
_CHOICES: dict[str, tuple[str, ...]] = {}  # family -> the names the models were last told of
_STATE = {"generation": 0, "extended": 0}
# typing's special forms, subscripted with models known only at run time
_ANNOTATED: Any = Annotated
_UNION: Any = Union


class KindUnion:
    """`Annotated[Base, KindUnion("step")]`: a field whose value is one of the spec models
    registered for the family, told apart by `tagger` (which key a step has, a context's
    `strategy`). The static type is the family's base class."""

    def __init__(self, family: str, tagger: Tagger) -> None:
        self.family = family
        _TAGGERS[family] = tagger

    def __get_pydantic_core_schema__(self, source: object, handler: GetCoreSchemaHandler) -> CoreSchema:
        from pydantic import Discriminator, Tag

        found = members(self.family)
        if not found:
            raise RuntimeError(
                f"no {self.family} kinds are registered: import flowrun.runtime.kinds and "
                "flowrun.evals.grader_kinds before reading manifests (the CLI and the API do)"
            )
        tagged = tuple(_ANNOTATED[model, Tag(tag)] for tag, model in found.items())
        union = tagged[0] if len(tagged) == 1 else _UNION[tagged]
        return handler.generate_schema(_ANNOTATED[union, Discriminator(_TAGGERS[self.family])])


class KindChoice:
    """`Annotated[str, KindChoice(names)]`: a text that must be one of a registry's names (the
    providers, the presets), read when pydantic builds the model; `set_choices` tells the
    models when the names change."""

    def __init__(self, names: Callable[[], Iterable[str]]) -> None:
        self.names = names

    def __get_pydantic_core_schema__(self, source: object, handler: GetCoreSchemaHandler) -> CoreSchema:
        from pydantic_core import core_schema

        return core_schema.literal_schema(list(self.names()))


def key_tagger(keys: Callable[[], list[str]]) -> Tagger:
    """A union told apart by which of its members' keys a value has (`agent:`, `loop:`...)."""

    def tag(value: object) -> str | None:
        for key in keys():
            if (isinstance(value, dict) and key in value) or getattr(value, key, None) is not None:
                return key
        return None

    return tag


def on_first_use(installer: Callable[[], object], *families: str) -> None:
    """`installer` registers the built-in kinds of `families` (the CLI: it imports
    flowrun.runtime.kinds); it runs the first time one of their unions is needed and none of
    its kinds is registered."""
    _INSTALLERS.append((frozenset(families), installer))


def ensure(family: str) -> None:
    """Run the pending installers of `family` while none of its kinds is registered."""
    for entry in [e for e in _INSTALLERS if family in e[0]]:
        if family in _MEMBERS:
            return
        _INSTALLERS.remove(entry)
        entry[1]()


def members(family: str) -> Mapping[str, type[BaseModel]]:
    """The spec models of a family, its built-in kinds registered first when none are."""
    ensure(family)
    return _MEMBERS.get(family, {})


def set_members(family: str, found: Mapping[str, type[BaseModel]], extension: bool) -> None:
    """The spec models of a family. `extension`: beyond the built-in kinds (the committed
    schema files no longer describe every kind)."""
    if _MEMBERS.get(family) == dict(found):
        return
    _MEMBERS[family] = dict(found)
    _STATE["generation"] += 1
    if extension:
        _STATE["extended"] = 1


def set_choices(family: str, names: Iterable[str], extension: bool) -> None:
    """The names a choice of `family` now takes (a registry changed): like `set_members`."""
    found = tuple(names)
    if _CHOICES.get(family) == found:
        return
    _CHOICES[family] = found
    _STATE["generation"] += 1
    if extension:
        _STATE["extended"] = 1


def generation() -> int:
    return _STATE["generation"]


def extended() -> bool:
    """Whether a kind beyond the built-in ones is registered."""
    return bool(_STATE["extended"])


def rebuild(models: list[type[BaseModel]]) -> None:
    """Build `models` again with the current members (each of them, since a model's schema
    holds the schemas of the models inside it)."""
    for model in models:
        model.model_rebuild(force=True)
