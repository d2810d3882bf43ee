"""Agents as tools: an agent listed in another's `tools` runs in its own conversation (fresh per
call, or one persistent instance per caller), keeps long output in workspace files, and hands
its caller a short summary (framed as data: it may carry what a page or a server told the
agent), the files it wrote, its step count and its instance id."""

from __future__ import annotations

import contextlib
import itertools
import stat
import time
import weakref
from dataclasses import replace
from pathlib import Path
from typing import Any

from flowrun.errors import FlowrunError, GuardrailFailed, HookBlocked, OutputInvalid, ProviderError
from flowrun.events import AgentEndEvent, AgentStartEvent, CallBudgetExceededEvent
from flowrun.foreign_text import frame
from flowrun.manifest.checks.tools import config_problems, entry_key_problems
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.kinds import EntryRef
from flowrun.manifest.project import Project
from flowrun.manifest.specs import AgentManifest
from flowrun.pinned import walk
from flowrun.runtime.loop.agent import run_agent
from flowrun.runtime.loop.contracts import (
    AgentInstance,
    BindRequest,
    BoundTool,
    Invocation,
    Outcome,
    RunServices,
    ToolKind,
)
from flowrun.runtime.loop.prompt_version import frames_foreign_text
from flowrun.runtime.models.subtrees import SubtreeBudgetExceeded
from flowrun.types import Status, ToolCall, ToolResult, ToolSpec

AGENT_TOOL_SUFFIX = (
    " It works in its own conversation, writes long output to files in the workspace, "
    "and returns a short summary plus the list of files it wrote."
)

MAX_FILES_SHOWN = 100  # output files a sub-agent's result lists for the model
MAX_FILES_KEPT = 1000  # in its data and its agent_end event
MAX_WALKED = 100_000  # entries of an output_dir looked at for what changed


def agent_tool_parameters(selectable: list[str], max_steps: int = 10_000) -> dict[str, object]:
    props: dict[str, object] = {
        "task": {"type": "string", "description": "What to do, with everything the agent needs to know."},
        "context_files": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Workspace files it should read first.",
        },
        "output_dir": {
            "type": "string",
            "description": "Workspace folder it writes into: its writes are confined to it (optional).",
        },
        "max_steps": {
            "type": "integer",
            "minimum": 1,
            "maximum": max_steps,
            "description": f"Most model calls it may make for this task (default and cap: {max_steps}).",
        },
        "return_full_output": {
            "type": "boolean",
            "description": "Return its whole final answer instead of a summary cut to size (optional).",
        },
    }
    if selectable:
        props["model"] = {"enum": selectable, "description": "Which model the agent uses for this task."}
    return {"type": "object", "properties": props, "required": ["task"], "additionalProperties": False}


# the per-agent config of an entry that names an agent
CONFIG_SCHEMA: dict[str, object] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "session": {"enum": ["fresh", "persistent"], "description": "Override the sub-agent's session mode."},
        "max_calls": {"type": "integer", "minimum": 1, "description": "Calls allowed (a round limit)."},
        "max_steps": {"type": "integer", "minimum": 1, "description": "Override the sub-agent's max_steps."},
        "selectable_models": {"type": "array", "items": {"type": "string"}},
        "budget": {
            "type": "object",
            "additionalProperties": False,
            "minProperties": 1,
            "description": "A budget for each call of this agent and every agent it calls, capped at "
            "what the caller's own budget has left; used up, the call returns partial.",
            "properties": {
                "max_cost_usd": {"type": "number", "exclusiveMinimum": 0},
                "max_tokens": {"type": "integer", "minimum": 1},
                "max_steps": {"type": "integer", "minimum": 1, "description": "Model calls of the sub-tree."},
            },
        },
    },
}


class AgentKind(ToolKind):
    name = "agent"
    implementation = None  # agents are declared in agents.d, not tools.d

    def claims(self, name: str, project: Project) -> bool:
        return name in project.agents and name not in project.tools

    def check_entry(self, entry: EntryRef) -> list[Diagnostic]:
        out = entry_key_problems(
            replace(entry, config={k: v for k, v in entry.config.items() if k != "sandbox"})
        )
        if "sandbox" in entry.config:
            message = f"'{entry.name}' is an agent: its tools are confined by its own `sandbox:`"
            hint = f"set `sandbox:` in {entry.name}'s manifest"
            out.append(entry.src.diag(entry.where("sandbox"), message, hint, "bad-config"))
        return out + config_problems(entry, CONFIG_SCHEMA)

    def agents_called(self, name: str, project: Project) -> list[str]:
        return [name]

    def bind(self, request: BindRequest) -> list[BoundTool]:
        callee = request.project.agents[request.name].spec
        selectable = list(request.config.get("selectable_models") or callee.model_choices)
        description = callee.tool_description + AGENT_TOOL_SUFFIX
        cap = int(request.config.get("max_steps") or callee.max_steps)
        spec = ToolSpec(request.name, description, agent_tool_parameters(selectable, cap))
        bound = BoundTool(request.name, spec, self, dict(request.config), target=callee, delegates=True)
        bound.foreign_text = True  # its answer is framed as data (`answered`)
        return [bound]

    async def invoke(self, bound: BoundTool, call: Invocation) -> ToolResult:
        return await call_agent(call.run, call.caller, bound, call.arguments, call.call)

    async def aclose(self, run: RunServices) -> None:
        _PERSISTENT.pop(run, None)  # the run's persistent sub-agents and their conversations


KIND = AgentKind()


async def call_agent(
    run: RunServices, caller: AgentInstance, bound: BoundTool, args: dict[str, Any], call: ToolCall
) -> ToolResult:
    name = bound.name
    callee: AgentManifest = bound.target
    refusal = _refusal(run, caller, bound)
    if refusal is not None:
        return refusal
    confined = _output_dir(run, caller, args.get("output_dir"))
    if isinstance(confined, ToolResult):
        return confined
    caller.calls_made[name] = caller.calls_made.get(name, 0) + 1
    session = bound.config.get("session") or callee.session
    inst = _sub_instance(run, caller, name, session, call, args.get("model"))
    inst.written = set()
    inst.arguments = dict(args)
    inst.write_within = confined if confined is not None else caller.write_within
    inst.tree = run.subtrees.open(name, inst.id, call.id, caller.tree, bound.config.get("budget"))
    task = _sub_task(args)
    started = time.time()
    run.emit(
        AgentStartEvent(
            agent=name,
            agent_id=inst.id,
            parent=caller.id,
            task=task,
            model=inst.model.name,
            session=session,
            budget=dict(inst.tree.budget) or None,
        )
    )
    cap = int(bound.config.get("max_steps") or callee.max_steps)
    steps = min(int(args.get("max_steps") or cap), cap)
    try:
        outcome = await run_agent(run, inst, task, steps)
    except SubtreeBudgetExceeded as e:
        files = sorted(inst.written | _changed_under(run, args.get("output_dir"), started))
        caller.written |= set(files)
        return budget_partial(run, inst, e, files)
    except (ProviderError, OutputInvalid, HookBlocked, GuardrailFailed) as e:
        return _failed(run, inst, e)
    files = sorted(inst.written | _changed_under(run, args.get("output_dir"), started))
    caller.written |= set(files)
    run.emit(
        AgentEndEvent(
            agent=name,
            agent_id=inst.id,
            status=outcome.status,
            steps=outcome.steps,
            output_files=files[:MAX_FILES_KEPT],
        )
    )
    full = bool(args.get("return_full_output"))
    return _sub_result(inst, callee, outcome, files, full, frames_foreign_text(run))


# why a sub-agent failed, as its caller reads it: a refused task (a hook) or a guardrail that
# stopped it, the caller can word otherwise
FAILURE_CODES: tuple[tuple[type[FlowrunError], str], ...] = (
    (ProviderError, "AGENT_FAILED"),
    (OutputInvalid, "OUTPUT_INVALID"),
    (HookBlocked, "HOOK_BLOCKED"),
    (GuardrailFailed, "GUARDRAIL_FAILED"),
)


def _failed(run: RunServices, inst: AgentInstance, e: FlowrunError) -> ToolResult:
    """A sub-agent that failed: its end recorded, and the caller's tool result saying why."""
    code = next(code for kind, code in FAILURE_CODES if isinstance(e, kind))
    provider = isinstance(e, ProviderError)  # said whole (with its hint), and who failed
    error, message = (str(e), f"{inst.name} failed: {e}") if provider else (e.message, e.message)
    run.emit(AgentEndEvent(agent=inst.name, agent_id=inst.id, status="failed", error=error))
    return ToolResult.fail(code, message)


def _output_dir(run: RunServices, caller: AgentInstance, folder: object) -> Path | ToolResult | None:
    """The folder a sub-agent's writes are confined to (created), None when not given, or an
    error when it leaves the workspace or the caller's own confinement."""
    if not folder:
        return None
    text = str(folder)
    if "\x00" in text:
        return ToolResult.fail("INVALID_PARAM", "output_dir contains a NUL byte")
    try:
        target = (run.workspace / text).resolve()
    except (OSError, RuntimeError, ValueError) as e:
        return ToolResult.fail("INVALID_PARAM", f"cannot use output_dir {text[:100]!r}: {e}")
    if text.startswith(("/", "\\")) or not target.is_relative_to(run.workspace.resolve()):
        return ToolResult.fail(
            "ACCESS_DENIED", f"output_dir {text!r} leaves the workspace; give a relative folder"
        )
    if caller.write_within is not None and not target.is_relative_to(caller.write_within):
        inside = caller.write_within.relative_to(run.workspace.resolve()).as_posix()
        return ToolResult.fail(
            "PERMISSION_DENIED", f"output_dir {text!r} is outside {inside}/, where this agent may write"
        )
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return ToolResult.fail("INVALID_PARAM", f"cannot create output_dir {text!r}: {e.strerror or e}")
    return target


def _refusal(run: RunServices, caller: AgentInstance, bound: BoundTool) -> ToolResult | None:
    name = bound.name
    max_depth = run.limits.max_depth
    if caller.depth + 1 > max_depth:
        return ToolResult.fail(
            "DEPTH_EXCEEDED", f"cannot call {name}: agents may nest at most {max_depth} deep"
        )
    if name in (segment.split("@")[0] for segment in caller.id.split("/")):
        return ToolResult.fail(
            "CYCLE", f"{name} is already running above {caller.name}; agents may not call themselves"
        )
    max_calls = bound.config.get("max_calls")
    if max_calls is not None and caller.calls_made.get(name, 0) >= max_calls:
        return ToolResult.fail(
            "LIMIT_REACHED", f"{name} may be called at most {max_calls} times; finish with what you have"
        )
    return None


# each run's persistent sub-agents by "caller id/name": one instance (and conversation) per caller
_PERSISTENT: weakref.WeakKeyDictionary[RunServices, dict[str, AgentInstance]] = weakref.WeakKeyDictionary()


def _sub_instance(
    run: RunServices, caller: AgentInstance, name: str, session: str, call: ToolCall, model: str | None
) -> AgentInstance:
    if session == "persistent":
        key, persistent = f"{caller.id}/{name}", _PERSISTENT.setdefault(run, {})
        inst = persistent.get(key)
        if inst is None:
            inst = persistent[key] = run.new_instance(name, key, caller.depth + 1, model_ref=model)
        elif model and model != inst.model.name:
            run.use_model(inst, model)
        return inst
    return run.new_instance(name, f"{caller.id}/{name}@{call.id}", caller.depth + 1, model_ref=model)


def _sub_task(args: dict[str, Any]) -> str:
    parts = [str(args.get("task", ""))]
    if args.get("context_files"):
        parts.append("Read these workspace files first: " + ", ".join(map(str, args["context_files"])))
    if args.get("output_dir"):
        parts.append(f"Write your output files under {args['output_dir']}/.")
    return "\n\n".join(parts)


def _changed_under(run: RunServices, folder: str | None, since: float) -> set[str]:
    if not folder:
        return set()
    root = (run.workspace / folder).resolve()
    if not root.is_relative_to(run.workspace) or not root.is_dir():
        return set()
    changed: set[str] = set()
    # (an agent's tree: as deep and as full as it made it; MAX_WALKED entries are looked at)
    for p in itertools.islice(walk(root), MAX_WALKED):
        with contextlib.suppress(OSError):
            info = p.stat()  # (one stat: the type and the time)
            if stat.S_ISREG(info.st_mode) and info.st_mtime >= since - 1:
                changed.add(p.relative_to(run.workspace).as_posix())
    return changed


def _listing(files: list[str]) -> str:
    """The output files for the model: the first MAX_FILES_SHOWN, and how many more."""
    shown = "\n".join(f"- {f}" for f in files[:MAX_FILES_SHOWN]) or "(none)"
    more = len(files) - MAX_FILES_SHOWN
    return f"{shown}\n[and {more} more]" if more > 0 else shown


def _kept(files: list[str]) -> dict[str, object]:
    """The output files a result's data and the agent_end event keep (a sub-agent can make a
    million): the first MAX_FILES_KEPT, and the total when there are more."""
    if len(files) <= MAX_FILES_KEPT:
        return {"output_files": files}
    return {"output_files": files[:MAX_FILES_KEPT], "output_files_total": len(files)}


def answered(inst: AgentInstance, text: str, framed: bool) -> str:
    """A sub-agent's words as its caller's model reads them: framed as data naming the agent
    (flowrun/foreign_text.py: they may carry what a page or a server told it), unless the run
    was recorded before flowrun framed them (runtime/loop/prompt_version.py)."""
    if not text:
        return f"{inst.name} ended without a summary."
    return frame(text, f"agent '{inst.name}', its answer") if framed else text


def _sub_result(
    inst: AgentInstance, spec: AgentManifest, outcome: Outcome, files: list[str], full: bool, framed: bool
) -> ToolResult:
    cap = spec.summary_max_chars
    answer = outcome.text.strip()
    cut = len(answer) > cap and not full
    summary = answered(inst, answer[:cap] if cut else answer, framed)
    if cut:
        summary += f"\n[summary cut at {cap} characters; details are in the files]"
    listing = _listing(files)
    text = f"{summary}\n\nOutput files:\n{listing}"
    if outcome.status == "max_steps":
        text = f"{inst.name} stopped at its step limit ({outcome.steps}) before finishing.\n\n{text}"
    if outcome.status == "repeated_call":  # the loop guard: the text says why; what it wrote follows
        text = f"{outcome.text}.\n\nOutput files:\n{listing}"
    status: Status = "partial" if (cut or outcome.status in ("max_steps", "repeated_call")) else "success"
    data = {
        **_kept(files),
        "steps_used": outcome.steps,
        "agent_id": inst.id,
        "outcome": outcome.status,
    }
    if outcome.data is not None:
        data["output"] = outcome.data  # the parsed answer of an agent with an output_schema
    if full:
        data["full_output"] = outcome.text
    return ToolResult(status, text, data)


def budget_partial(
    run: RunServices, inst: AgentInstance, e: SubtreeBudgetExceeded, files: list[str]
) -> ToolResult:
    """A sub-agent whose budget ran out: what it wrote, as a partial result its caller can use."""
    tree = inst.tree
    assert tree is not None
    whose = "its per-call budget" if e.tree is tree else f"the budget of {e.tree.agent} above it"
    message = f"{inst.name} stopped: {whose} is used up ({e.limit} {e.tree.budget[e.limit]:g})"
    cost = round(tree.cost_usd, 6)
    run.emit(
        CallBudgetExceededEvent(
            agent=inst.name,
            agent_id=inst.id,
            limit=e.limit,
            message=message,
            tokens=tree.tokens,
            cost_usd=cost,
            model_calls=tree.model_calls,
        )
    )
    run.emit(
        AgentEndEvent(
            agent=inst.name,
            agent_id=inst.id,
            status="budget_exceeded",
            steps=inst.model_calls,
            output_files=files[:MAX_FILES_KEPT],
            error=message,
        )
    )
    listing = _listing(files)
    last = inst.last_text.strip()
    last = answered(inst, last, frames_foreign_text(run)) if last else "(it wrote no answer yet)"
    text = f"{message}. Its last words:\n{last}\n\nOutput files:\n{listing}"
    data = {
        **_kept(files),
        "steps_used": inst.model_calls,
        "agent_id": inst.id,
        "outcome": "budget_exceeded",
        "budget": dict(tree.budget),
        "spent": {"tokens": tree.tokens, "cost_usd": cost, "model_calls": tree.model_calls},
    }
    return ToolResult("partial", text, data)
