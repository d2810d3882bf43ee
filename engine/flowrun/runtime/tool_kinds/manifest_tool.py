"""What python and command tools share: a `tools.d` manifest whose defaults, limits and the
agent's per-tool config become the bound tool's config, and whose declared properties (over the
function's own, for python tools) become the bound tool's."""

from __future__ import annotations

from flowrun.manifest.kinds import context_kind
from flowrun.manifest.specs import ToolManifest
from flowrun.runtime.loop.contracts import BindRequest, BoundTool
from flowrun.tools.base import ToolProperties


def merged_config(manifest: ToolManifest, request: BindRequest) -> dict[str, object]:
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


def limits_of(manifest: ToolManifest) -> dict[str, object]:
    return manifest.limits.model_dump(exclude_none=True)


def declare(bound: BoundTool, manifest: ToolManifest, own: ToolProperties, idempotent: bool) -> BoundTool:
    """`bound` with the properties the manifest declares, else those its function declares
    (`own`, from @tool), else the defaults: not sequential, no file use, run again on replay,
    and `idempotent` as the kind decides. Whether its results frame foreign text only the
    function says."""
    bound.sequential = bool(manifest.sequential if manifest.sequential is not None else own.sequential)
    bound.files = manifest.files or own.files
    bound.replay = manifest.replay or own.replay or "run"
    bound.foreign_text = own.foreign_text
    if manifest.idempotent is not None:
        bound.idempotent = manifest.idempotent
    else:
        bound.idempotent = own.idempotent if own.idempotent is not None else idempotent
    return bound
