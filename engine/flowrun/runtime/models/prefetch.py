"""Start importing the SDKs a run will call before it calls them: `flowrun.load` (and the
command line, once it knows the run is not a dry run) names the providers of the models the
workflow's agents use once its manifests are checked, and each SDK (with its HTTP transport) is
imported in a background thread while the caller goes on: building the run, setting up its
folder (files written in worker threads), until the first request. Python runs one thread at a
time, so what overlaps is what waits (disk, network), not the checking itself. The first call
still imports through `providers/clients.import_sdk`, which waits for that thread and raises
what the import raises, exactly as without the head start."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable

from flowrun.manifest.graph import run_agents, tool_entries
from flowrun.manifest.project import Project
from flowrun.manifest.specs import WorkflowManifest
from flowrun.plain_schema import compile_schema
from flowrun.providers import prices
from flowrun.providers.base import ModelConfig
from flowrun.providers.clients import http_transport, prefetch_sdk, transport_modules
from flowrun.providers.registry import PROVIDERS, provider_class
from flowrun.runtime.models.calls import ModelChoice


def models_used(project: Project, workflow: WorkflowManifest, choice: ModelChoice) -> list[ModelConfig]:
    """Every model (fallbacks included) the run's agents would call."""
    found: list[ModelConfig] = []
    for name in sorted(run_agents(workflow, project)):
        agent = project.agents[name].spec
        for ref in {agent.model, *agent.model_choices}:
            config = choice.config(ref, name)
            found += [config, *(choice.config(f, name) for f in config.fallback)]
    return found


def sdks_used(models: list[ModelConfig]) -> list[str]:
    """The SDK modules those models' calls import."""
    found = {
        sdk
        for config in models
        if config.provider in PROVIDERS and (sdk := provider_class(config.provider).sdk) is not None
    }
    return sorted(found)


def sdk_needs(
    project: Project, workflow: WorkflowManifest, choice: ModelChoice
) -> tuple[list[str], tuple[str, ...], bool]:
    """What the run's first calls import and load: the SDK modules, the HTTP client's modules,
    and whether an answer is priced from the table (genai-prices). Raises what resolving the
    models raises (a model that cannot be resolved, a wrongly chosen transport)."""
    models = models_used(project, workflow, choice)
    sdks = sdks_used(models)
    extra = transport_modules(http_transport()) if sdks else ()
    priced = any(prices.maybe_priced(m) for m in models if not prices.has_manifest_price(m))
    return sdks, extra, priced


def prefetch(project: Project, workflow: WorkflowManifest, choice: ModelChoice) -> None:
    """Start the background imports of the run's SDKs. Never raises: a model that cannot be
    resolved, or a transport that is wrongly chosen, is reported where it always was, when
    the run starts."""
    try:
        sdks, extra, priced = sdk_needs(project, workflow, choice)
        then = _first_answer_needs(priced, _checks_need_jsonschema(project, workflow))
    except Exception:  # the run's own checks report it, with their context
        return
    for sdk in sdks:  # after the first SDK, while the first request waits
        prefetch_sdk(sdk, *extra, then=then if sdk == sdks[0] else None)


def _first_answer_needs(priced: bool, tools: bool) -> Callable[[], None] | None:
    """What comes right after the first answer, loaded while it is awaited: the price table
    (to price the answer) and, when `tools`, jsonschema (to check the arguments of the first
    tool call: its import is 20-100 ms the run would otherwise wait for there)."""
    if not (priced or tools):
        return None

    def load() -> None:
        if priced:
            with contextlib.suppress(Exception):  # its own first use reports what fails
                prices.warm()
        if tools:
            importlib.import_module("jsonschema")

    return load


def _checks_need_jsonschema(project: Project, workflow: WorkflowManifest) -> bool:
    """Whether checking a call's arguments may need jsonschema: a tool of the run's agents has
    a schema plain_schema.py does not check, or one known only once it is bound (an MCP
    server's tool, a remote agent's). An agent called as a tool has a plain one."""
    for name in run_agents(workflow, project):
        for _, tool, _ in tool_entries(project.agents[name].spec):
            if tool in project.tools:
                if compile_schema(project.tools[tool].spec.parameters) is None:
                    return True
            elif tool not in project.agents:
                return True
    return False
