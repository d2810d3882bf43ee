"""validate's cost warnings: a USD budget over a model nobody can price (the manifest has no
`price:` and the bundled price table does not know it), and a sub-agent tree whose worst case
no budget caps (manifest/ceiling.py). The price table is consulted only for workflows with a
USD budget and a model without `price:` (the tree warning's figure uses manifest prices only)."""

from __future__ import annotations

import math

from flowrun.errors import FlowrunError
from flowrun.manifest.ceiling import Preview, Resolve, iter_trees, manifest_resolver, preview
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.graph import tool_entries
from flowrun.manifest.project import Loaded, Project
from flowrun.manifest.specs import WorkflowManifest
from flowrun.providers.base import ModelConfig


def check_costs(wf: Loaded[WorkflowManifest], project: Project, agents: set[str]) -> list[Diagnostic]:
    spec = wf.spec
    budget = _usd_budget(spec, project, agents)
    delegates = any(
        name in project.agents for agent in agents for _, name, _ in tool_entries(project.agents[agent].spec)
    )
    run_limit = any(
        getattr(spec.limits, k) is not None for k in ("max_cost_usd", "max_total_tokens", "max_total_steps")
    )
    out: list[Diagnostic] = []
    resolve = manifest_resolver(spec, project, wf.source.path.parent)
    if budget is not None:
        out += _unpriced(wf, project, agents, resolve, budget)
    if delegates and not run_limit:
        try:
            found = preview(spec, project, resolve, table=False)  # validate stays fast
        except FlowrunError:  # a model that does not resolve: reported by the model checks
            return out
        out += _uncapped(wf, found)
    return out


def _usd_budget(spec: WorkflowManifest, project: Project, agents: set[str]) -> str | None:
    """Where the workflow's runs have a USD budget: `limits.max_cost_usd`, or an entry's."""
    if spec.limits.max_cost_usd is not None:
        return "limits.max_cost_usd"
    for agent in sorted(agents):
        for _, name, config in tool_entries(project.agents[agent].spec):
            budget = config.get("budget")
            if isinstance(budget, dict) and "max_cost_usd" in budget:
                return f"the budget of {agent}'s `{name}` entry"
    return None


def _unpriced(
    wf: Loaded[WorkflowManifest],
    project: Project,
    agents: set[str],
    resolve: Resolve,
    budget: str,
) -> list[Diagnostic]:
    from flowrun.providers.prices import price_source

    out: list[Diagnostic] = []
    seen: set[str] = set()
    for agent in sorted(agents):
        spec = project.agents[agent].spec
        for ref in [spec.model, *spec.model_choices]:
            try:
                config = resolve(ref, agent)
                configs = [config, *(resolve(f, agent) for f in config.fallback)]
            except FlowrunError:
                continue
            for found in configs:
                if found.name in seen or price_source(found) != "unknown":
                    continue
                if _price_lost(wf, project, found.name):
                    continue
                seen.add(found.name)
                out.append(_unpriced_diag(wf, project, found, budget))
    return out


def _price_lost(wf: Loaded[WorkflowManifest], project: Project, name: str) -> bool:
    """Whether what flowrun would price is not known: the model's declaration was partly
    unreadable, or names no provider (their errors say so)."""
    loaded = project.models.get(name)
    own = wf.spec.models.get(name)
    found = (wf.source, own) if own is not None else (loaded.source, loaded.spec) if loaded else None
    if found is None:
        return False
    src, spec = found
    return src.cut_within(("models", name)) or (spec.provider is None and spec.preset is None)


def _unpriced_diag(
    wf: Loaded[WorkflowManifest], project: Project, config: ModelConfig, budget: str
) -> Diagnostic:
    message = (
        f"model '{config.name}' ({config.provider}:{config.model}) has no price and the price table "
        f"does not know it: {budget} cannot count its calls"
    )
    hint = f"add `price: {{input: ..., output: ...}}` (USD per million tokens) under models.{config.name}"
    if config.name in wf.spec.models:
        return wf.source.diag(("models", config.name), message, hint, "unpriced-model", severity="warning")
    loaded = project.models.get(config.name)
    if loaded is not None and not loaded.builtin:
        return loaded.source.diag(
            ("models", config.name), message, hint, "unpriced-model", severity="warning"
        )
    hint = "name it under the workflow's `models:` with `price: {input: ..., output: ...}`"
    return wf.source.diag(("limits",), message, hint, "unpriced-model", severity="warning")


def _uncapped(wf: Loaded[WorkflowManifest], found: Preview) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    roots = {name for name, _ in found.roots}
    for tree in iter_trees(found):
        if tree.agent not in roots:
            continue
        called = ", ".join(sub.agent for sub in tree.subcalls)
        worst = tree.tree
        if math.isinf(worst.calls):
            figure = f"unbounded ({called} may be called any number of times)"
        else:
            priced = worst.usd and not worst.unpriced  # manifest prices only: the table is not read
            figure = f"{worst.calls:g} model calls" + (f", ${worst.usd:,.2f}" if priced else "")
        message = (
            f"the worst case of {tree.agent}'s sub-agent tree ({called}) is {figure}, and no budget caps it"
        )
        hint = (
            "set limits.max_cost_usd (or max_total_steps) in the workflow, or `budget:` or "
            "`max_calls` on the entries; `flowrun cost` shows the figures"
        )
        where = ("entry",) if wf.spec.entry else ("steps",)
        out.append(wf.source.diag(where, message, hint, "uncapped-tree", severity="warning"))
    return out
