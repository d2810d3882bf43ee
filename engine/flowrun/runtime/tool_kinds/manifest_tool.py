"""What python and command tools share: a `tools.d` manifest whose defaults, limits and the
agent's per-tool config become the bound tool's config."""

from __future__ import annotations

from typing import Any

from flowrun.manifest.kinds import context_kind
from flowrun.manifest.specs import ToolManifest
from flowrun.runtime.loop.contracts import BindRequest


def merged_config(manifest: ToolManifest, request: BindRequest) -> dict[str, Any]:
    """The manifest's defaults with the agent's config over them, key by key. An agent's deny
    patterns add to the tool's own; they never lift them. The agent's context strategy fills
    keys both leave unset (a `dashboard` context gives update_dashboard its dashboards)."""
    defaults = manifest.defaults
    config = request.config
    merged = {**defaults, **config}
    if isinstance(defaults.get("deny"), list) and isinstance(config.get("deny"), list):
        merged["deny"] = [*defaults["deny"], *(p for p in config["deny"] if p not in defaults["deny"])]
    context = request.agent.context
    for key, value in context_kind(context).tool_defaults(context).items():
        if not merged.get(key):
            merged[key] = value
    return merged


def limits_of(manifest: ToolManifest) -> dict[str, Any]:
    return manifest.limits.model_dump(exclude_none=True)
