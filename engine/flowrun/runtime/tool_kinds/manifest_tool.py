"""What python and command tools share: a `tools.d` manifest whose defaults, limits and the
agent's per-tool config become the bound tool's config."""

from __future__ import annotations

from typing import Any

from flowrun.manifest.specs import DashboardContext, ToolManifest
from flowrun.runtime.loop.contracts import BindRequest


def merged_config(manifest: ToolManifest, request: BindRequest) -> dict[str, Any]:
    """The manifest's defaults with the agent's config over them, key by key. An agent's deny
    patterns add to the tool's own; they never lift them. update_dashboard gets the agent's
    dashboards."""
    defaults = manifest.defaults
    config = request.config
    merged = {**defaults, **config}
    if isinstance(defaults.get("deny"), list) and isinstance(config.get("deny"), list):
        merged["deny"] = [*defaults["deny"], *(p for p in config["deny"] if p not in defaults["deny"])]
    context = request.agent.context
    if isinstance(context, DashboardContext) and not merged.get("dashboards"):
        merged["dashboards"] = dict(context.dashboards)
    return merged


def limits_of(manifest: ToolManifest) -> dict[str, Any]:
    return manifest.limits.model_dump(exclude_none=True)
