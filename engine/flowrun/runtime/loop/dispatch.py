"""Running a step's tool calls: concurrently (a `sequential` tool alone), each checked first
(unknown name, unreadable or invalid arguments), each answered from the ledger when a resumed
run already has its result, and never raising into the loop: timeouts and exceptions become
`status: error` results the model can correct."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from flowrun import surrogates
from flowrun.errors import BudgetExceeded, FlowrunError, HookStopped
from flowrun.events import Event, ToolCallEvent, ToolIntentEvent, ToolResultEvent
from flowrun.plain_schema import parameters_check
from flowrun.redaction import Redactor
from flowrun.runtime.durable.ledger import Ledger
from flowrun.runtime.durable.run_folder import PROTECTED
from flowrun.runtime.guardrails.book import Guardrails
from flowrun.runtime.hooks.moments import HookMoments
from flowrun.runtime.loop.approvals import Approvals
from flowrun.runtime.loop.contracts import (
    AgentInstance,
    BoundTool,
    Invocation,
    RunServices,
    parameters_validator,
)
from flowrun.runtime.loop.decisions import Decisions, LiveAnswer, RunWaiting
from flowrun.runtime.loop.deferred import not_loaded, note_loaded
from flowrun.runtime.loop.sandboxes import SandboxPolicies
from flowrun.tools.base import RunState, ToolContext, ToolServices
from flowrun.tools.sandbox import SandboxPolicy
from flowrun.types import ToolCall, ToolError, ToolResult

ERROR_DETAIL_CHARS = 500  # exception text shown to the model: never flood its context


@dataclass
class ToolEnvironment:
    """What every tool call of a run shares."""

    workspace: Path  # resolved (Run.workspace): each call's context starts with it walked
    run_dir: Path
    search_path: list[Path]
    interactive: bool = False  # questions are answered (live, or waited for)
    ask_user: LiveAnswer | None = None  # the live one: the terminal, the API's callback
    state: RunState = field(default_factory=RunState)  # run-scoped tool state (background jobs, ...)
    sandboxes: SandboxPolicies | None = None  # None: the default policy (required, no network)
    redactor: Redactor = field(default_factory=Redactor)  # applied to every result
    approvals: Approvals | None = None  # None: no entry's `approve:` is honoured (tests)
    decisions: Decisions | None = None  # None: nothing waits (tests)
    dry_run: bool = False  # tools that declare `in_dry_run: simulate` are answered, not run
    hooks: HookMoments | None = None  # PreToolUse and PostToolUse hooks (runtime/hooks/)
    guardrails: Guardrails | None = None  # the calls its tool guardrails refused (runtime/guardrails/)


class ToolDispatcher:
    def __init__(
        self,
        run: RunServices,
        env: ToolEnvironment,
        max_concurrency: int,
        emit: Callable[[Event], None],
        ledger: Ledger | None = None,
    ) -> None:
        self.run = run
        self.env = env
        self.max_concurrency = max_concurrency
        self.emit = emit
        self.ledger = ledger
        self.services = ToolServices(emit=emit)  # a call's own add its questions (_services)

    async def execute_calls(self, inst: AgentInstance, calls: list[ToolCall]) -> list[ToolResult]:
        """Results come back in the order the model asked for them. Calls run concurrently, but
        a `sequential` tool's call runs alone where the model placed it: after every call
        before it, before any call after it."""
        # per step, not per run: a sub-agent's own calls must never wait on its caller's slot
        semaphore = asyncio.Semaphore(self.max_concurrency)
        results: list[ToolResult | None] = [None] * len(calls)

        async def one(i: int) -> None:
            async with semaphore:
                results[i] = await self.call_tool(inst, calls[i])

        for batch in _batches(inst, calls):
            try:
                async with asyncio.TaskGroup() as group:
                    for i in batch:
                        group.create_task(one(i))
            except BaseExceptionGroup as failures:
                # e.g. a budget crossed by one of several concurrent sub-agents: the group
                # cancelled the others (what they did so far is in the log); the run stops on
                # the first reason
                raise run_stopper(failures) from None
        # a call whose task something else cancelled has no result: it still gets its turn (the
        # history stays well-formed), as an error the model can act on
        lost = "the call was cancelled before it returned a result"
        return [r if r is not None else ToolResult.fail("INTERNAL", lost) for r in results]

    def _unknown(self, inst: AgentInstance, call: ToolCall) -> str:
        """What the model reads for a tool it does not have; a prompt written for a
        `call_agent(agent_type=...)` tool, or naming another agent, learns how agents are offered."""
        names = ", ".join(inst.tools) or "(none)"
        text = f"there is no tool named '{call.name}'."
        mine = [name for name, bound in inst.tools.items() if bound.delegates]
        if call.name == "call_agent" or call.name in self.run.project.agents:
            offered = ", ".join(mine) if mine else "none are offered to you"
            text += f" Agents are offered as tools by their own names (yours: {offered})"
            wanted = call.arguments.get("agent_type") or call.arguments.get("agent")
            if call.name == "call_agent" and isinstance(wanted, str) and wanted in mine:
                text += f": call `{wanted}` with {{task: ...}} instead"
            text += "."
        return f"{text} Available tools: {names}."

    async def call_tool(self, inst: AgentInstance, call: ToolCall) -> ToolResult:
        self.emit(
            ToolCallEvent(
                agent=inst.name, agent_id=inst.id, call_id=call.id, tool=call.name, arguments=call.arguments
            )
        )
        bound = inst.tools.get(call.name)
        refused = inst.repeats.refusal(call.id)  # the loop guard's (runtime/loop/repeats.py)
        if refused is None and self.env.guardrails is not None:
            refused = self.env.guardrails.refusal(inst, call.id)
        if refused is not None:
            result = refused
        elif bound is None:
            result = not_loaded(inst, call) or ToolResult.fail("UNKNOWN_TOOL", self._unknown(inst, call))
        else:
            result = await self._checked_call(inst, bound, call)
        note_loaded(inst, result)  # tools a search found are offered from the next model call
        # the protocol's context.cwd: where relative paths started, relative to the agents' root
        if "cwd" not in result.context:
            result.context["cwd"] = _relative_cwd(inst.cwd, self.env.workspace)
        # what the model and the event log see: no secret, nor a shell-made form of one
        result = self.env.redactor.result(result)
        written = result.context.get("path_resolved")
        if bound is not None and bound.files == "write" and result.status != "error" and written:
            inst.written.add(str(written))
        self.emit(
            ToolResultEvent(agent=inst.name, agent_id=inst.id, call_id=call.id, tool=call.name, result=result)
        )
        return result

    async def _checked_call(self, inst: AgentInstance, bound: BoundTool, call: ToolCall) -> ToolResult:
        problem = check_arguments(bound, call)
        if problem is not None:
            return problem
        recorded = self._recorded_result(inst, bound, call)
        if recorded is not None and self._skip_execution(bound):
            return recorded
        if self.ledger is not None and self.ledger.started_unfinished(inst.id, call.id):
            return effect_unknown(bound)
        gate = await self._pre_hooks(inst, bound, call)
        if isinstance(gate, ToolResult):
            return gate
        bound, call = gate
        arguments = prepared_arguments(bound, call.arguments)
        if isinstance(arguments, ToolResult):
            return arguments
        if self.env.dry_run and bound.in_dry_run == "simulate":
            return simulated(bound, arguments)
        if self.env.approvals is not None:
            refusal = await self.env.approvals.refusal(inst, bound, call)
            if refusal is not None:
                return refusal
        invocation = Invocation(self.tool_context(inst, bound, call), arguments, inst, call, self.run)
        drain = self.env.decisions.drain if self.env.decisions is not None else None
        # parked instead while the run stops to wait for a decision; in flight until it returns
        # (an agent called as a tool is not: its own calls are)
        async with drain.work(counted=not bound.delegates) if drain else contextlib.nullcontext():
            if not bound.repeat_safe(arguments):
                intent = ToolIntentEvent(agent=inst.name, agent_id=inst.id, call_id=call.id, tool=bound.name)
                self.emit(intent)
            result = await invoke(bound, invocation)
        # on replay the model must see exactly what it saw then (the hooks' notes included); the
        # call ran for its files
        if recorded is not None:
            return recorded
        if self.env.hooks is not None:
            result = await self.env.hooks.post_tool(inst, bound, call, result)
        return result

    async def _pre_hooks(
        self, inst: AgentInstance, bound: BoundTool, call: ToolCall
    ) -> ToolResult | tuple[BoundTool, ToolCall]:
        """PreToolUse: a refusal for the model, or the call as it runs (its arguments as a hook
        changed them; `ask`: a person approves it; `allow`: no `approve: ask` question)."""
        if self.env.hooks is None:
            return bound, call
        verdict = await self.env.hooks.pre_tool(inst, bound, call)
        if verdict.decision == "deny":
            return ToolResult.fail("HOOK_BLOCKED", f"a PreToolUse hook blocked this call: {verdict.reason}")
        if verdict.updated_input is not None:
            # a new call object: the model's own call, in its history, keeps what it asked
            call = replace(call, arguments={**call.arguments, **verdict.updated_input})
            problem = check_arguments(bound, call)
            if problem is not None:
                problem.text = f"a PreToolUse hook changed the arguments: {problem.text}"
                return problem
        if verdict.decision == "ask" and bound.approve != "never":
            bound = replace(bound, approve="ask")
        elif verdict.decision == "allow" and bound.approve == "ask":
            bound = replace(bound, approve="always")
        return bound, call

    def _recorded_result(self, inst: AgentInstance, bound: BoundTool, call: ToolCall) -> ToolResult | None:
        # a sub-agent always runs again (from its recorded model calls) to rebuild its state
        if self.ledger is None or bound.delegates:
            return None
        return self.ledger.tool_result(inst.id, call.id)

    def _skip_execution(self, bound: BoundTool) -> bool:
        """A resume re-uses every recorded result; a replay only those of `replay: recorded`
        tools (the network, a person), and runs the others again for their files."""
        assert self.ledger is not None
        return self.ledger.mode == "resume" or bound.replay == "recorded"

    def hook_context(self, inst: AgentInstance | None) -> ToolContext:
        """Where a hook command of `inst` (None: of the run) runs: as its tools' processes do."""
        env, spec = self.env, inst.spec if inst is not None else None
        return ToolContext(
            workspace=env.workspace,
            base_dir=env.workspace,
            cwd=inst.cwd if inst is not None else env.workspace,
            run_dir=env.run_dir,
            agent_name=inst.name if inst is not None else "",
            agent_id=inst.id if inst is not None else "",
            search_path=list(env.search_path),
            protected=PROTECTED,
            sandbox=env.sandboxes.hook_policy(spec) if env.sandboxes else SandboxPolicy(),
            write_within=inst.write_within if inst is not None else None,
        )

    def tool_context(self, inst: AgentInstance, bound: BoundTool, call: ToolCall) -> ToolContext:
        env = self.env
        base = env.workspace
        if bound.config.get("base_dir"):
            base = (env.workspace / bound.config["base_dir"]).resolve()
        return ToolContext(
            workspace=env.workspace,
            base_dir=base,
            cwd=inst.cwd,
            run_dir=env.run_dir,
            agent_name=inst.name,
            agent_id=inst.id,
            call_id=call.id,
            tool_name=bound.name,
            config=dict(bound.config),
            limits=dict(bound.limits),
            search_path=list(env.search_path),
            state=env.state,
            services=self._services(inst, call),
            interactive=env.interactive,
            dry_run=env.dry_run,
            protected=PROTECTED,
            sandbox=env.sandboxes.policy(inst.spec, bound) if env.sandboxes else SandboxPolicy(),
            write_within=inst.write_within,
            resolved={env.workspace: env.workspace, base: base},
        )

    def _services(self, inst: AgentInstance, call: ToolCall) -> ToolServices:
        """The hooks of one call: its questions are answered from the log, live, or waited for
        (each question of the call has its own id: the call's, then CALL#2, ...)."""
        decisions = self.env.decisions
        if decisions is None or not self.env.interactive:
            return self.services
        asked = 0

        async def ask_user(question: str) -> str:
            nonlocal asked
            asked += 1
            qid = call.id if asked == 1 else f"{call.id}#{asked}"
            return await decisions.answer(inst.name, inst.id, qid, question, self.env.ask_user)

        return ToolServices(ask_user=ask_user, emit=self.emit)


def effect_unknown(bound: BoundTool) -> ToolResult:
    """What the model gets for a call not safe to repeat that a stopped attempt had started
    but not finished: it is not run a second time."""
    return ToolResult.fail(
        "EFFECT_UNKNOWN",
        f"this {bound.name} call was started, but the run was stopped (crash, kill or interrupt) "
        "before it returned, so whether it took effect is unknown; it was not run again. Check "
        "the current state (read the file, list the folder, run a read-only command) before "
        "deciding whether to call it again.",
    )


def simulated(bound: BoundTool, arguments: dict[str, object]) -> ToolResult:
    """A dry run's answer for a tool it must not run: made from the tool's result schema when
    it declares one, as the test provider makes a model's answers."""
    from flowrun.providers.schema_samples import Unavailable, sample_value

    text = (
        f"(dry run) {bound.name} was not run: it may change something outside the run, so a dry "
        "run answers it without calling it"
    )
    data: dict[str, object] = {"simulated": True}
    if bound.result_schema:
        try:
            data["structured"] = sample_value("result", bound.result_schema, {"tool": bound.name})
        except Unavailable:
            pass
        else:
            text += ". A result of its shape: " + json.dumps(data["structured"], ensure_ascii=False)
    result = ToolResult.ok(text, **data)
    result.stats["time_ms"] = 0
    result.context["params_input"] = arguments
    return result


def run_stopper(failures: BaseExceptionGroup[BaseException]) -> BaseException:
    """The exception a group of concurrent calls stops the run with: a budget first (the run
    ends `budget_exceeded`), then any other flowrun error, an interrupt, a run folder that
    cannot be written, the run stopping to wait for a decision; else the group itself (a bug)."""
    leaves: list[BaseException] = []

    def flatten(group: BaseExceptionGroup[BaseException]) -> None:
        for exc in group.exceptions:
            if isinstance(exc, BaseExceptionGroup):
                flatten(exc)
            else:
                leaves.append(exc)

    flatten(failures)
    for wanted in (BudgetExceeded, FlowrunError, KeyboardInterrupt, OSError, RunWaiting):
        found = next((e for e in leaves if isinstance(e, wanted)), None)
        if found is not None:
            return found
    return failures


def _relative_cwd(cwd: Path, workspace: Path) -> str:
    if cwd == workspace:  # the usual case, without resolving both (two realpath walks per call)
        return "."
    try:
        return cwd.resolve().relative_to(workspace.resolve()).as_posix() or "."
    except ValueError:
        return str(cwd)


def _batches(inst: AgentInstance, calls: list[ToolCall]) -> list[list[int]]:
    """The calls' indexes in the groups that run one after the other: each run of calls that
    may go together, and each `sequential` tool's call alone, in the model's order."""
    out: list[list[int]] = [[]]
    for i, call in enumerate(calls):
        bound = inst.tools.get(call.name)
        if bound is not None and bound.sequential:
            out += [[i], []]
        else:
            out[-1].append(i)
    return [batch for batch in out if batch]


def check_arguments(bound: BoundTool, call: ToolCall) -> ToolResult | None:
    """An INVALID_PARAM result when the call's arguments are unusable, else None."""
    if call.parse_error:
        raw = (call.raw_arguments or "")[:200]
        return ToolResult.fail(
            "INVALID_PARAM",
            f"could not read the arguments of {call.name}: {call.parse_error}. Received: {raw!r}. "
            "Send the arguments as one JSON object.",
        )
    broken = surrogates.find(call.arguments)
    if broken is not None:
        return ToolResult.fail(
            "INVALID_PARAM",
            f"the arguments of {call.name} hold text that is not valid Unicode ({broken}): "
            "a lone surrogate escape such as \\ud800. Send plain UTF-8 text.",
        )
    if bound.surely_valid(call.arguments):
        return None
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


def prepared_arguments(bound: BoundTool, arguments: Mapping[str, object]) -> dict[str, object] | ToolResult:
    """The arguments a call runs with: the model's as it sent them, with each `default` of the
    schema filled in where it left the argument out and the default is valid against its own
    schema (JSON Schema's `default` is a note: a descriptive "None" or "N/A" is not a value;
    an MCP server applies its own), and an argument the schema does not declare passed on where
    the schema allows it (`additionalProperties` not false) and the tool can take it; an
    INVALID_PARAM result naming it where the tool cannot (never dropped silently)."""
    schema = bound.spec.parameters
    props = schema.get("properties")
    if not isinstance(props, dict):
        return dict(arguments)
    undeclared = [k for k in arguments if k not in props]
    allowed = schema.get("additionalProperties")
    if undeclared and not (allowed not in (None, False) or (allowed is None and bound.takes_undeclared)):
        names = ", ".join(repr(k) for k in undeclared)
        takes = ", ".join(props) or "none"
        return ToolResult.fail(
            "INVALID_PARAM",
            f"{bound.name} takes no argument {names} (its arguments: {takes}). Call it again without it.",
        )
    out = dict(arguments)
    if bound.fills_defaults:
        for name, prop in props.items():
            if name not in out and isinstance(prop, dict) and "default" in prop and valid_default(prop):
                out[name] = prop["default"]
    return out


def valid_default(prop: Mapping[str, object]) -> bool:
    """Whether a property's `default` is a value its own schema accepts, and not the text "None"
    (Python's None, written down by a schema made from a signature: a note, never a name)."""
    if prop["default"] == "None":
        return False
    own = {k: v for k, v in prop.items() if k != "default"}
    own_json = json.dumps(own, sort_keys=True, default=str)
    if parameters_check(own_json)(prop["default"]):  # a plain schema's yes needs no jsonschema
        return True
    try:
        validator = parameters_validator(own_json)
        return bool(validator.is_valid(cast(Any, prop["default"])))  # (any JSON value)
    except Exception:  # a schema jsonschema cannot read (validate says so): never filled in
        return False


async def invoke(bound: BoundTool, call: Invocation) -> ToolResult:
    """Run one validated call through its kind; exceptions and timeouts become error results."""
    started = time.perf_counter()
    timeout = bound.limits.get("timeout_s")
    try:
        coro = bound.kind.invoke(bound, call)
        result = await (asyncio.wait_for(coro, timeout) if timeout else coro)
    except TimeoutError:
        result = ToolResult.fail("TIMEOUT", f"{bound.name} did not finish within {timeout} s")
    except (BudgetExceeded, RunWaiting, HookStopped):
        raise  # the run stops (or waits); not something the model can fix
    except Exception as e:  # a tool never raises into the agent loop
        detail = str(e) if len(str(e)) <= ERROR_DETAIL_CHARS else str(e)[:ERROR_DETAIL_CHARS] + "…"
        message = f"{bound.name} failed: {type(e).__name__}: {detail}"
        result = ToolResult("error", message, error=ToolError("INTERNAL", detail))
    if not isinstance(result, ToolResult):
        result = ToolResult.fail(
            "INTERNAL", f"{bound.name} returned {type(result).__name__}, not a ToolResult"
        )
    result.stats.setdefault("time_ms", round((time.perf_counter() - started) * 1000, 2))
    result.context.setdefault("params_input", call.arguments)
    return result
