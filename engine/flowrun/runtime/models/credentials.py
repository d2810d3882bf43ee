"""Which keys a run would need and does not have, checked before anything runs."""

from __future__ import annotations

from flowrun.manifest.graph import run_agents
from flowrun.manifest.project import Project
from flowrun.manifest.specs import WorkflowManifest
from flowrun.providers.base import ModelConfig
from flowrun.providers.registry import PROVIDERS, provider_class
from flowrun.runtime.models.calls import ModelChoice


def missing_credentials(
    project: Project, workflow: WorkflowManifest, choice: ModelChoice
) -> dict[str, list[str]]:
    """env var → agents that need it, for every model the run would call that lacks its key."""
    missing: dict[str, list[str]] = {}
    for name in sorted(run_agents(workflow, project)):
        agent = project.agents[name].spec
        for ref in [agent.model, *agent.model_choices]:
            if ref is None and agent.model is not None:
                continue
            config = choice.config(ref, name)
            for needed in [config, *(choice.config(f, name) for f in config.fallback)]:
                variable = missing_key(needed)
                if variable is not None:
                    missing.setdefault(variable, []).append(name)
    return missing


def missing_key(config: ModelConfig) -> str | None:
    """The variable (or variables) a model needs and lacks, or None."""
    entry = provider_class(config.provider) if config.provider in PROVIDERS else None
    if (entry is not None and not entry.needs_key) or config.options.get("key_optional"):
        return None
    if any(config.secret(env) for env in (config.api_key_env, config.auth_token_env, config.token_env)):
        return None
    needed = config.api_key_env or "?"
    return f"{needed} (or {config.token_env})" if config.token_env else needed
