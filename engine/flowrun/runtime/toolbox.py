"""The tools an agent is offered, and calling one safely: unknown names, malformed or invalid
arguments, timeouts and exceptions all become `status: error` results the model can correct."""

from __future__ import annotations

import asyncio
import importlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flowrun.manifest.crossref import tool_entries
from flowrun.tools.base import ToolContext, ToolFunction
from flowrun.types import ToolCall, ToolError, ToolResult, ToolSpec

if TYPE_CHECKING:
    from flowrun.manifest.project import Project

AGENT_TOOL_SUFFIX = (
    " It works in its own conversation, writes long output to files in the workspace, "
    "and returns a short summary plus the list of files it wrote."
)


@dataclass
class BoundTool:
    """One entry of an agent's allowlist, ready to call."""

    name: str
    spec: ToolSpec
    kind: str  # python | command | agent
    config: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)
    sequential: bool = False
    func: ToolFunction | None = None
    command: dict[str, Any] | None = None
    _validator: Any = None

    def validator(self) -> Any:
        if self._validator is None:
            from jsonschema import Draft202012Validator

            self._validator = Draft202012Validator(self.spec.parameters)
        return self._validator


def import_function(dotted: str) -> ToolFunction:
    module_name, _, func_name = dotted.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, func_name)


def agent_tool_parameters(callee: Any, selectable: list[str]) -> dict[str, Any]:
    props: dict[str, Any] = {
        "task": {"type": "string", "description": "What to do, with everything the agent needs to know."},
        "context_files": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Workspace files it should read first.",
        },
        "output_dir": {
            "type": "string",
            "description": "Workspace folder for the files it writes (optional).",
        },
    }
    if selectable:
        props["model"] = {"enum": selectable, "description": "Which model the agent uses for this task."}
    return {"type": "object", "properties": props, "required": ["task"], "additionalProperties": False}


def bind_tools(project: Project, agent_spec: Any, search_path: list[Path]) -> dict[str, BoundTool]:
    bound: dict[str, BoundTool] = {}
    dashboards = dict(agent_spec.context.dashboards or {}) if agent_spec.context else {}
    for _, name, config in tool_entries(agent_spec):
        if name in project.tools:
            bound[name] = _bind_manifest_tool(project.tools[name].spec, config, dashboards, search_path)
        elif name in project.agents:
            callee = project.agents[name].spec
            selectable = list(config.get("selectable_models") or callee.selectable_models or [])
            description = (callee.description or f"The {name} agent.").strip() + AGENT_TOOL_SUFFIX
            spec = ToolSpec(name, description, agent_tool_parameters(callee, selectable))
            bound[name] = BoundTool(name, spec, "agent", config=config)
    return bound


def _bind_manifest_tool(
    manifest: Any, config: dict[str, Any], dashboards: dict[str, str], search_path: list[Path]
) -> BoundTool:
    defaults = manifest.defaults or {}
    merged = {**defaults, **config}
    if isinstance(defaults.get("deny"), list) and isinstance(config.get("deny"), list):
        # an agent's deny patterns add to the tool's own; they never lift them
        merged["deny"] = [*defaults["deny"], *(p for p in config["deny"] if p not in defaults["deny"])]
    if dashboards and not merged.get("dashboards"):
        merged["dashboards"] = dashboards
    limits = manifest.limits.to_dict() if manifest.limits else {}
    impl = manifest.implementation
    parameters = manifest.parameters
    func = None
    command = None
    if hasattr(impl, "python"):
        func = import_function(impl.python)
        dynamic = getattr(func, "dynamic_parameters", None)
        if dynamic is not None:
            parameters = dynamic(search_path, merged) or parameters
        kind = "python"
    else:
        command = impl.to_dict()
        kind = "command"
    spec = ToolSpec(manifest.name, manifest.description.strip(), parameters)
    return BoundTool(
        manifest.name, spec, kind, merged, limits, bool(manifest.sequential), func=func, command=command
    )


def check_arguments(bound: BoundTool, call: ToolCall) -> ToolResult | None:
    """An INVALID_PARAM result when the call's arguments are unusable, else None."""
    if call.parse_error:
        raw = (call.raw_arguments or "")[:200]
        return ToolResult.fail(
            "INVALID_PARAM",
            f"could not read the arguments of {call.name}: {call.parse_error}. Received: {raw!r}. "
            "Send the arguments as one JSON object.",
        )
    problems = []
    for err in bound.validator().iter_errors(call.arguments):
        where = "/".join(str(p) for p in err.absolute_path) or "arguments"
        problems.append(f"{where}: {err.message}")
    if problems:
        return ToolResult.fail(
            "INVALID_PARAM",
            f"invalid arguments for {call.name}: " + "; ".join(problems[:5]) + ". Fix them and call again.",
        )
    return None


def declared_arguments(bound: BoundTool, arguments: dict[str, Any]) -> dict[str, Any]:
    props = bound.spec.parameters.get("properties")
    if not isinstance(props, dict):
        return dict(arguments)
    return {k: v for k, v in arguments.items() if k in props}


async def invoke(
    bound: BoundTool, ctx: ToolContext, arguments: dict[str, Any], agent_call: Any
) -> ToolResult:
    """Run one validated call; exceptions and timeouts become error results."""
    started = time.perf_counter()
    timeout = bound.limits.get("timeout_s")
    try:
        if bound.kind == "agent":
            coro = agent_call(bound, arguments)
        elif bound.kind == "command":
            from flowrun.tools.command import run_command

            assert bound.command is not None
            coro = run_command(
                ctx,
                argv=bound.command["command"],
                arguments=arguments,
                cwd=bound.command.get("cwd"),
                env=bound.command.get("env"),
            )
        else:
            assert bound.func is not None
            coro = bound.func(ctx, **arguments)
        result = await (asyncio.wait_for(coro, timeout) if timeout else coro)
    except TimeoutError:
        result = ToolResult.fail("TIMEOUT", f"{bound.name} did not finish within {timeout} s")
    except Exception as e:  # a tool never raises into the agent loop
        if _is_engine_stop(e):
            raise
        detail = str(e) if len(str(e)) <= 500 else str(e)[:500] + "…"  # never flood the context
        message = f"{bound.name} failed: {type(e).__name__}: {detail}"
        result = ToolResult("error", message, error=ToolError("INTERNAL", detail))
    if not isinstance(result, ToolResult):
        result = ToolResult.fail(
            "INTERNAL", f"{bound.name} returned {type(result).__name__}, not a ToolResult"
        )
    result.stats.setdefault("time_ms", round((time.perf_counter() - started) * 1000, 2))
    result.context.setdefault("params_input", arguments)
    return result


def _is_engine_stop(error: BaseException) -> bool:
    from flowrun.errors import BudgetExceeded

    return isinstance(error, BudgetExceeded)
