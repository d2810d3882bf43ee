"""The worst case of a workflow before anything is sent: how many model calls and how many
dollars each agent, each sub-agent tree and the whole run may take at most, from the manifests
alone (`flowrun cost`, `flowrun run --estimate`, validate's warnings, evaluations).

The figures are ceilings, not forecasts:
- one model call sends at most the model's `context_window` input tokens (priced at the dearer
  of its input and cache-write prices) and gets at most `max_tokens` output tokens; an agent's
  call costs at most the dearest of the models it may use (its own, its selectable models and
  their fallbacks);
- an agent makes at most `max_steps` calls (an entry's `max_steps` replaces it for that caller),
  plus `output_repairs` when it has an `output_schema`;
- one step of a caller may start any number of sub-agent calls, so a sub-agent's calls are
  unbounded unless its entry sets `max_calls`, and each call's tree is capped by the entry's
  per-call `budget:` (plus the one model call in flight when it is reached);
- a loop step multiplies its body by `max_iterations`; a foreach step by its items (unknown
  before the run: unbounded);
- the workflow's `limits` cap the whole run: `max_total_steps` times the dearest call,
  `max_total_tokens` at the dearest token, `max_cost_usd` (plus the calls in flight).

A model the manifests do not price and the price table does not know has no dollar figure: the
totals count what can be priced and name the models left out (`unpriced`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from flowrun.errors import ManifestError
from flowrun.manifest.graph import tool_entries, walk_steps
from flowrun.manifest.kinds import StepAt, step_kind, tool_kind_for
from flowrun.manifest.project import Project
from flowrun.manifest.specs import WorkflowManifest
from flowrun.providers.base import ModelConfig
from flowrun.providers.prices import cost_usd, has_manifest_price
from flowrun.types import Usage

# (model reference or None for the agent's default, agent name) -> the model a run would use
Resolve = Callable[[str | None, str], ModelConfig]
INF = math.inf


@dataclass(frozen=True, slots=True)
class CallCeiling:
    """The most one call of a model can cost."""

    model: str  # the workflow's name for it
    input_tokens: int
    output_tokens: int
    usd: float | None  # None: no price for it
    unpriced: tuple[str, ...] = ()  # models it may use that have no price

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def call_ceiling(config: ModelConfig, table: bool = True) -> CallCeiling:
    """A full context window in (at the dearer of input and cache-write prices), `max_tokens` out;
    without `table`, only a manifest `price:` counts (the price table is not imported)."""
    window, out = config.context_window, config.max_tokens
    if not table and not has_manifest_price(config):
        return CallCeiling(config.name, window, out, None)
    costs = [
        cost_usd(Usage(input_tokens=window, output_tokens=out), config),
        cost_usd(Usage(cache_write_tokens=window, output_tokens=out), config),
    ]
    known = [c for c in costs if c is not None]
    return CallCeiling(config.name, window, out, max(known) if known else None)


@dataclass(slots=True)
class Ceiling:
    """Model calls, tokens and dollars at most (inf: nothing bounds it)."""

    calls: float = 0.0
    tokens: float = 0.0
    usd: float = 0.0  # the priced part
    unpriced: set[str] = field(default_factory=set)  # models with no price in it

    def __add__(self, other: Ceiling) -> Ceiling:
        return Ceiling(
            self.calls + other.calls,
            self.tokens + other.tokens,
            self.usd + other.usd,
            self.unpriced | other.unpriced,
        )

    def times(self, n: float) -> Ceiling:
        return Ceiling(_mul(self.calls, n), _mul(self.tokens, n), _mul(self.usd, n), set(self.unpriced))

    @property
    def bounded(self) -> bool:
        return math.isfinite(self.usd) and math.isfinite(self.calls)


def _mul(a: float, b: float) -> float:
    return 0.0 if a == 0 or b == 0 else a * b  # 0 * inf: nothing, not nan


@dataclass(slots=True)
class SubCall:
    """An agent-as-tool entry: how often it may be called and what caps each call."""

    agent: str
    max_calls: int | None  # None: unbounded
    max_steps: int | None  # the entry's override of the callee's max_steps
    budget: dict[str, float]  # the entry's per-call budget
    per_call: Ceiling  # one call's tree, capped by its budget
    total: Ceiling  # all its calls


@dataclass(slots=True)
class AgentCeiling:
    agent: str
    max_steps: int
    call: CallCeiling  # its dearest model's call
    own: Ceiling  # its own calls
    tree: Ceiling  # its own and every sub-agent's
    subcalls: list[SubCall]


@dataclass(slots=True)
class Preview:
    """The worst case of a run of one workflow."""

    workflow: str
    roots: list[tuple[str, float]]  # (agent the workflow starts, times it may run)
    agents: dict[str, AgentCeiling]  # every agent reached, its tree at its own max_steps
    uncapped: Ceiling  # the run before the workflow's limits
    limits: dict[str, float]  # the workflow's limits that apply
    capped: Ceiling  # the run under them
    dearest_call: CallCeiling | None

    @property
    def has_run_limit(self) -> bool:
        return any(k in self.limits for k in ("max_cost_usd", "max_total_tokens", "max_total_steps"))


class _Walker:
    def __init__(self, project: Project, resolve: Resolve, table: bool) -> None:
        self.project = project
        self.resolve = resolve
        self.table = table
        self.agents: dict[str, AgentCeiling] = {}
        self.calls: dict[str, CallCeiling] = {}

    def dearest(self, agent: str, selectable: list[str] | None = None) -> CallCeiling:
        spec = self.project.agents[agent].spec
        refs: list[str | None] = [spec.model, *(selectable if selectable is not None else spec.model_choices)]
        found: list[CallCeiling] = []
        for ref in refs:
            config = self.resolve(ref, agent)
            found.append(self._call(config))
            for fallback in config.fallback:
                found.append(self._call(self.resolve(fallback, agent)))
        # a model without a price counts in calls and tokens, not in dollars
        unpriced = tuple(sorted({c.model for c in found if c.usd is None}))
        top = max(found, key=lambda c: (c.usd or 0.0, c.tokens))
        tokens = max(c.tokens for c in found)
        return CallCeiling(top.model, tokens - top.output_tokens, top.output_tokens, top.usd, unpriced)

    def _call(self, config: ModelConfig) -> CallCeiling:
        if config.name not in self.calls:
            self.calls[config.name] = call_ceiling(config, self.table)
        return self.calls[config.name]

    def tree(
        self,
        agent: str,
        max_steps: int | None = None,
        selectable: list[str] | None = None,
        above: tuple[str, ...] = (),
    ) -> AgentCeiling:
        spec = self.project.agents[agent].spec
        above = (*above, agent)
        steps = max_steps or spec.max_steps  # an entry's max_steps replaces the agent's
        if spec.output_schema is not None:  # repair turns do not count toward max_steps
            steps += spec.output_repairs
        call = self.dearest(agent, selectable)
        own = _calls(call, steps)
        total, subcalls = own, []
        for _, name, config in tool_entries(spec):
            kind = tool_kind_for(name, self.project)
            if kind is None or not kind.agents_called(name, self.project) or name not in self.project.agents:
                continue
            if name in above:  # a cycle (validate reports it): nothing bounds it
                total = total + Ceiling(INF, INF, INF)
                continue
            sub = self._subcall(name, config, above)
            subcalls.append(sub)
            total = total + sub.total
        return AgentCeiling(agent, steps, call, own, total, subcalls)

    def _subcall(self, name: str, config: dict[str, object], above: tuple[str, ...]) -> SubCall:
        steps = config.get("max_steps")
        chosen = config.get("selectable_models")
        selectable = [str(m) for m in chosen] if isinstance(chosen, list) else None
        child = self.tree(name, int(steps) if isinstance(steps, int) else None, selectable, above)
        if name not in self.agents:
            own = steps is None and selectable is None
            self.agents[name] = child if own else self.tree(name, above=above)
        raw = config.get("budget")
        budget = {str(k): float(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
        per_call = _capped(child.tree, budget, self._dearest_in(child))
        max_calls = config.get("max_calls")
        calls = int(max_calls) if isinstance(max_calls, int) else None
        total = per_call.times(INF if calls is None else float(calls))
        return SubCall(name, calls, int(steps) if isinstance(steps, int) else None, budget, per_call, total)

    def _dearest_in(self, tree: AgentCeiling) -> CallCeiling:
        """The dearest call anywhere in a tree."""
        found, todo, seen = [tree.call], list(tree.subcalls), {tree.agent}
        while todo:
            sub = todo.pop()
            if sub.agent in seen or sub.agent not in self.agents:
                continue
            seen.add(sub.agent)
            found.append(self.agents[sub.agent].call)
            todo += self.agents[sub.agent].subcalls
        return max(found, key=lambda c: (c.usd or 0.0, c.tokens))


def _calls(call: CallCeiling, n: float) -> Ceiling:
    unpriced = set(call.unpriced) | ({call.model} if call.usd is None else set())
    return Ceiling(n, _mul(call.tokens, n), _mul(call.usd or 0.0, n), unpriced)


def _capped(tree: Ceiling, budget: dict[str, float], dearest: CallCeiling) -> Ceiling:
    """A tree under a budget: each limit, plus the one call in flight when it is reached."""
    out = Ceiling(tree.calls, tree.tokens, tree.usd, set(tree.unpriced))
    if "max_steps" in budget:
        out.calls = min(out.calls, budget["max_steps"])
        out.tokens = min(out.tokens, _mul(out.calls, dearest.tokens))
        out.usd = min(out.usd, _mul(out.calls, dearest.usd or 0.0))
    if "max_tokens" in budget:
        out.tokens = min(out.tokens, budget["max_tokens"] + dearest.tokens)
        out.usd = min(out.usd, _mul(out.tokens, _usd_per_token(dearest)))
    if "max_cost_usd" in budget:
        out.usd = min(out.usd, budget["max_cost_usd"] + (dearest.usd or 0.0))
    return out


def _usd_per_token(call: CallCeiling) -> float:
    """The dearest token of a call (output tokens cost the most)."""
    return (call.usd or 0.0) / call.tokens if call.tokens else 0.0


def step_roots(spec: WorkflowManifest, inputs: Mapping[str, object]) -> list[tuple[str, float]]:
    """(agent, at most how many times it runs) for the entry agent and every step's agent."""
    if spec.entry:
        return [(spec.entry, 1.0)]
    out: list[tuple[str, float]] = []
    times: dict[tuple[object, ...], float] = {}
    for at in walk_steps(spec.steps):
        outer = _enclosing(at, times)
        kind = step_kind(at.step)
        times[at.parts] = _mul(outer, kind.repeats(at.step, inputs))
        out += [(name, outer) for name, _ in kind.agents(at.step)]
    return out


def _enclosing(at: StepAt, times: dict[tuple[object, ...], float]) -> float:
    """How often the step holding `at` repeats its body (1 at the top)."""
    holders = [parts for parts in times if at.parts[: len(parts)] == parts and parts != at.parts]
    return times[max(holders, key=len)] if holders else 1.0


def preview(
    spec: WorkflowManifest,
    project: Project,
    resolve: Resolve,
    inputs: Mapping[str, object] | None = None,
    table: bool = True,
) -> Preview:
    """The worst case of a run of `spec` with the models `resolve` picks and the `inputs` known
    so far (a foreach over a list input); ManifestError for a model that does not resolve.
    `table`: price models without `price:` from the price table (validate does not)."""
    walker = _Walker(project, resolve, table)
    roots = [(name, n) for name, n in step_roots(spec, inputs or {}) if name in project.agents]
    uncapped = Ceiling()
    for name, n in roots:
        tree = walker.tree(name)
        walker.agents[name] = tree
        uncapped = uncapped + tree.tree.times(n)
    limits = {
        key: float(value)
        for key in ("max_cost_usd", "max_total_tokens", "max_total_steps")
        if (value := getattr(spec.limits, key)) is not None
    }
    calls = list(walker.calls.values())
    dearest = max(calls, key=lambda c: (c.usd or 0.0, c.tokens)) if calls else None
    capped = uncapped
    if dearest is not None:
        budget = {"max_steps": limits["max_total_steps"]} if "max_total_steps" in limits else {}
        if "max_total_tokens" in limits:
            budget["max_tokens"] = limits["max_total_tokens"]
        if "max_cost_usd" in limits:
            budget["max_cost_usd"] = limits["max_cost_usd"]
        capped = _capped(uncapped, budget, dearest)
    return Preview(spec.name, roots, walker.agents, uncapped, limits, capped, dearest)


def manifest_resolver(spec: WorkflowManifest, project: Project, folder: Path) -> Resolve:
    """The models a run would use, from the manifests alone (no --model override)."""
    from flowrun.manifest.model_config import config_from_shorthand, config_from_spec

    named = {**{n: loaded.spec for n, loaded in project.models.items()}, **spec.models}
    default = spec.default_model or project.default_model

    def resolve(ref: str | None, agent: str) -> ModelConfig:
        ref = ref or default
        if ref is None:
            raise ManifestError(f"agent '{agent}' names no model", "set the workflow's `default_model:`")
        if ref in named:
            return config_from_spec(ref, named[ref], folder, strict_env=False)
        return config_from_shorthand(ref, folder)

    return resolve


def iter_trees(result: Preview) -> Iterator[AgentCeiling]:
    """The agents that call sub-agents, the workflow's own first."""
    roots = [name for name, _ in result.roots]
    for name in [*roots, *sorted(set(result.agents) - set(roots))]:
        if result.agents[name].subcalls:
            yield result.agents[name]
