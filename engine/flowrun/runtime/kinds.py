"""Every kind a run uses, registered, and how a run finds one. A new tool kind, step kind or
context strategy is its module plus one line in the tuples below; a provider is a line of
providers/registry.py and a preset one of providers/presets.py (graders: evals/grader_kinds.py).
From outside flowrun, each is one `register_*` call before loading a workflow. Registering a kind
also registers its manifest side with manifest/kinds.py, so `validate`, the schema, the
`PROVIDER:model` shorthand and the dry run know it as well.

Importing this module is what makes workflows readable: the CLI and the API import it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowrun.manifest import kinds as manifest_kinds
from flowrun.manifest.project import Project
from flowrun.manifest.sandboxing import split_entry, tool_layers
from flowrun.manifest.specs import StepSpec, StrategySpec
from flowrun.providers.presets import PRESETS, Preset
from flowrun.providers.registry import PROVIDERS
from flowrun.runtime.context import compact, dashboard, full
from flowrun.runtime.durable.ledger import KindRecord
from flowrun.runtime.loop.contracts import (
    AgentInstance,
    BindRequest,
    BoundTool,
    ContextStrategy,
    Outcome,
    RunServices,
    ToolKind,
)
from flowrun.runtime.loop.deferred import load_noted
from flowrun.runtime.loop.instructions import RecordedInstructions
from flowrun.runtime.loop.prompt_version import RecordedPrompts
from flowrun.runtime.steps import agent as agent_step
from flowrun.runtime.steps import foreach, loop, parallel
from flowrun.runtime.steps.base import StepConditions, StepContext, StepKind
from flowrun.runtime.tool_kinds import a2a, agent, command, function, mcp, memory, python

# in the order they are asked to claim a tool name
BUILTIN_TOOL_KINDS: tuple[ToolKind, ...] = (
    python.KIND,
    function.KIND,
    command.KIND,
    agent.KIND,
    mcp.KIND,
    a2a.KIND,
    memory.KIND,
)
BUILTIN_STEP_KINDS: tuple[StepKind, ...] = (
    agent_step.KIND,
    loop.KIND,
    parallel.KIND,
    foreach.KIND,
)
BUILTIN_STRATEGIES: tuple[ContextStrategy, ...] = (
    full.STRATEGY,
    dashboard.STRATEGY,
    compact.STRATEGY,
)

TOOL_KINDS: dict[str, ToolKind] = {kind.name: kind for kind in BUILTIN_TOOL_KINDS}
STEP_KINDS: dict[str, StepKind] = {kind.name: kind for kind in BUILTIN_STEP_KINDS}
STRATEGIES: dict[str, ContextStrategy] = {kind.name: kind for kind in BUILTIN_STRATEGIES}
manifest_kinds.install(BUILTIN_TOOL_KINDS, BUILTIN_STEP_KINDS, BUILTIN_STRATEGIES, builtin=True)


Unregister = Callable[[], None]


def register_tool_kind(kind: ToolKind) -> Unregister:
    """Add a tool kind (asked to claim names after the ones before it); returns what undoes it."""
    TOOL_KINDS[kind.name] = kind
    manifest_kinds.install(tools=[kind])
    return lambda: _drop(TOOL_KINDS, "tool", kind.name)


def register_step_kind(kind: StepKind) -> Unregister:
    STEP_KINDS[kind.name] = kind
    manifest_kinds.install(steps=[kind])
    return lambda: _drop(STEP_KINDS, "step", kind.name)


def register_context_strategy(strategy: ContextStrategy) -> Unregister:
    STRATEGIES[strategy.name] = strategy
    manifest_kinds.install(contexts=[strategy])
    return lambda: _drop(STRATEGIES, "context", strategy.name)


def register_provider(name: str, target: str) -> Unregister:
    """Add a provider type: `target` is its `Provider` subclass as "module:Class" (imported when
    a model of it is first resolved)."""
    PROVIDERS[name] = target
    manifest_kinds.refresh()
    return lambda: _drop(PROVIDERS, "provider", name)


def register_preset(name: str, preset: Preset) -> Unregister:
    """Add an OpenAI-compatible service by name (`preset: NAME`, `--model NAME:MODEL`)."""
    PRESETS[name] = preset
    manifest_kinds.refresh()
    return lambda: _drop(PRESETS, "preset", name)


def _drop(table: dict[str, Any], family: str, name: str) -> None:
    table.pop(name, None)
    manifest_kinds.uninstall(family, name)


def kind_records() -> list[type[KindRecord]]:
    """What the registered kinds keep of a recorded run, for `Ledger.from_events` to fold the
    log into (and the `if:` every step kind takes, the project instructions agents read and the
    version of flowrun's words around prompts)."""
    kinds: list[ToolKind | StepKind] = [*TOOL_KINDS.values(), *STEP_KINDS.values()]
    own = [StepConditions, RecordedInstructions, RecordedPrompts]
    return [*own, *(record for kind in kinds for record in kind.records)]


# ---------------------------------------------------------------- tools


def kind_for(name: str, project: Project) -> ToolKind | None:
    return next((kind for kind in TOOL_KINDS.values() if kind.claims(name, project)), None)


def bind_tools(requests: list[BindRequest]) -> dict[str, BoundTool]:
    """Each entry bound by the kind that claims it (a name nothing claims is skipped:
    validation has reported it). The entry keys every tool takes (`approve`, `sandbox`) are
    taken out of the config the kind sees."""
    bound: dict[str, BoundTool] = {}
    for request in requests:
        kind = kind_for(request.name, request.project)
        if kind is None:
            continue
        entry = split_entry(request.name, request.config)
        own = BindRequest(request.name, entry.config, request.agent, request.project)
        for tool in kind.bind(own):
            tool.approve = entry.approve
            tool.sandbox_layers = tool_layers(request.project, entry)
            bound[tool.name] = tool
    return bound


async def prepare_tools(inst: AgentInstance, run: RunServices) -> bool:
    """Before an agent's model call, every kind finishes binding its tools (MCP starts its
    servers); True when the agent's tools changed."""
    changed = load_noted(inst)  # deferred tools a search found (runtime/loop/deferred.py)
    for kind in TOOL_KINDS.values():
        changed = await kind.prepare(inst, run) or changed
    return changed


async def close_tools(run: RunServices) -> None:
    """At the end of a run, every kind releases what it holds."""
    for kind in TOOL_KINDS.values():
        await kind.aclose(run)


# ---------------------------------------------------------------- steps and contexts


async def run_steps(steps: list[StepSpec], prefix: str, ctx: StepContext) -> Outcome:
    """Run steps in order, each unless its `if:` is not met; the outcome is the last run step's."""
    last = Outcome("completed", "", 0)
    for index, step in enumerate(steps):
        if ctx.condition_met(step, f"{prefix}step{index}"):
            last = await STEP_KINDS[step.kind].run(step, index, prefix, ctx)
    return last


def strategy_for(spec: StrategySpec) -> ContextStrategy:
    return STRATEGIES[spec.strategy]
