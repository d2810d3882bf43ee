"""The kinds flowrun has registered, listed for the docs from their registries, so no page lists
them by hand: reference.py turns `<!-- generated: NAME -->` into `generate(NAME)` for each NAME of
`NAMES`: `kinds` (every family below), or one family (`tool-kinds`, `presets`, ...). Each kind
is described by the first sentence of its module's docstring (a provider: of its class's, when
it has one), and named with the file it lives in."""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
Cell = Callable[[str], str]  # text for a table cell (reference.py's `cell`)
Table = tuple[str, str, str, list[str], list[list[str]]]  # title, anchor, intro, header, rows


def generate(name: str, cell: Cell) -> str:
    families = list(FAMILIES.values()) if name == "kinds" else [FAMILIES[name]]
    return "\n".join(render(family(), cell) for family in families)


def tool_kinds() -> Table:
    from flowrun.runtime.kinds import TOOL_KINDS

    rows = []
    for name, kind in TOOL_KINDS.items():
        declared = f"`implementation: {{{name}: ...}}`" if kind.implementation is not None else "(no tools.d)"
        rows.append([f"`{name}`", declared, described(kind), where(kind)])
    return (
        "Tool kinds",
        "tool-kinds",
        "How an agent's tools run, in the order they claim a tool entry's name.",
        ["kind", "in `tools.d`", "what it runs", "module"],
        rows,
    )


def step_kinds() -> Table:
    from flowrun.runtime.kinds import STEP_KINDS

    rows = [[f"`{name}:`", described(kind), where(kind)] for name, kind in STEP_KINDS.items()]
    return (
        "Step kinds",
        "step-kinds",
        "A workflow's `steps:`, each told by its key; every step takes `if:`.",
        ["step", "what it does", "module"],
        rows,
    )


def context_strategies() -> Table:
    from flowrun.runtime.kinds import STRATEGIES

    rows = [[f"`{name}`", described(kind), where(kind)] for name, kind in STRATEGIES.items()]
    return (
        "Context strategies",
        "context-strategies",
        "An agent's `context: {strategy: NAME}`.",
        ["strategy", "what it does to the conversation", "module"],
        rows,
    )


def graders() -> Table:
    from flowrun.evals.grader_kinds import GRADERS

    rows = [[f"`{name}:`", described(kind), where(kind)] for name, kind in GRADERS.items()]
    return (
        "Graders",
        "graders",
        "An eval set's `graders:`, each told by its key.",
        ["grader", "what it checks", "module"],
        rows,
    )


def providers() -> Table:
    from flowrun.providers.registry import PROVIDERS, provider_class

    rows = []
    for name in PROVIDERS:
        cls = provider_class(name)
        key = f"`{cls.key_env}`" if cls.key_env else "the model's `api_key_env`"
        key = key if cls.needs_key else "none: it calls no service"
        rows.append([f"`{name}`", _shorthand(name, cls), key, described(cls), where(cls)])
    return (
        "Providers",
        "providers",
        "A model's `provider:`; `--model` and an agent's `model:` take `PROVIDER:MODEL` where a "
        "model id is enough.",
        ["provider", "shorthand", "key variable", "what it is", "module"],
        rows,
    )


def presets() -> Table:
    from flowrun.providers.presets import PRESETS

    rows = []
    for name, preset in PRESETS.items():
        key = f"`{preset.api_key_env}`" + (f" (or `{preset.key_alias}`)" if preset.key_alias else "")
        key += " (optional)" if preset.key_optional else ""
        priced = f"`{preset.price_table}`" if preset.price_table else "no (give the model a `price:`)"
        thinking = f"`{json.dumps(preset.thinking_off)}`" if preset.thinking_off else ""
        rows.append([f"`{name}`", f"`{name}:MODEL`", f"`{preset.base_url}`", key, priced, thinking])
    return (
        "Presets",
        "presets",
        "OpenAI-compatible services a model names with `preset:` (`providers/presets.py`); "
        "`thinking_off` is the body that switches a model's thinking off (`thinking_on`: the same "
        "switched on).",
        ["preset", "shorthand", "base_url", "key variable", "in the price table", "`thinking_off`"],
        rows,
    )


FAMILIES: dict[str, Callable[[], Table]] = {
    "tool-kinds": tool_kinds,
    "step-kinds": step_kinds,
    "context-strategies": context_strategies,
    "graders": graders,
    "providers": providers,
    "presets": presets,
}
NAMES = ("kinds", *FAMILIES)


def _shorthand(name: str, cls: Any) -> str:
    """`NAME:MODEL` (the id goes to `model:`), `scripted:SCRIPT`, or what else a model needs."""
    keys = cls.shorthand("\0")
    if keys is None:
        return "no: needs " + ", ".join(f"`{key}`" for key in cls.requires)
    taken_by = next(key for key, value in keys.items() if value == "\0")
    return f"`{name}:{taken_by.upper()}`"


def render(table: Table, cell: Cell) -> str:
    title, anchor, intro, header, rows = table
    lines = [f"## {title} {{#{anchor}}}", "", intro, ""]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(text) for text in row) + " |" for row in rows]
    return "\n".join([*lines, ""])


def described(kind: object) -> str:
    """The first sentence of the kind's own class docstring, else of its module's."""
    cls = kind if isinstance(kind, type) else type(kind)
    text = cls.__dict__.get("__doc__") or inspect.getdoc(sys.modules[cls.__module__]) or ""
    first = " ".join(text.strip().split("\n\n")[0].split())
    return first.split(". ")[0].rstrip(".") + "."


def where(kind: object) -> str:
    """The file a kind lives in, from the repository's root (flowrun's: from engine/flowrun)."""
    cls = kind if isinstance(kind, type) else type(kind)
    path = Path(inspect.getsourcefile(cls) or cls.__module__).resolve()
    for root in (REPO / "engine" / "flowrun", REPO):
        if path.is_relative_to(root):
            return f"`{path.relative_to(root).as_posix()}`"
    return f"`{cls.__module__}`"
