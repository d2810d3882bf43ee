"""The moments of a run where Claude Code's hook events fire, what each hook is told (the JSON
on its stdin) and what flowrun does with the verdict:

- PreToolUse, before a tool call runs: `deny` (or exit 2) refuses it with the reason as the
  model's tool result; `ask` puts it to a person through the approval flow; `allow` skips an
  `approve: ask` (never an `approve: never`); `updatedInput` changes its arguments.
- PostToolUse, after it returned: `decision: block` (or exit 2) and `additionalContext` are
  added to the result the model reads.
- UserPromptSubmit, before an agent reads its task or a user message: `additionalContext` (or
  plain stdout) is added to it; a block refuses the task (HookBlocked: the run fails, or the
  caller of an agent called as a tool gets an error).
- Stop / SubagentStop, when an agent is about to give its final answer: a block makes it go on
  with the reason as a new user message (`stop_hook_active` is then true).
- SessionStart / SessionEnd: the run's start and end (an agent's own: its conversation's);
  SessionStart's context joins the first message of the workflow's agents (an agent's own: of
  that agent). Notification: a decision waits for a person.
- `continue: false` anywhere stops the run (HookStopped) with its `stopReason`."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from flowrun.errors import HookBlocked, HookStopped
from flowrun.events import DecisionPendingEvent
from flowrun.runtime.hooks.answers import Verdict
from flowrun.runtime.hooks.book import Dialect, HookBook, Selected
from flowrun.runtime.hooks.claude_tools import (
    claude_input,
    claude_name,
    claude_response,
    flowrun_input,
    flowrun_response,
    names_of,
)
from flowrun.runtime.loop.contracts import AgentInstance, BoundTool, Outcome
from flowrun.types import ToolCall, ToolResult


class HookMoments:
    def __init__(self, book: HookBook, run_id: str, run_dir: Path, workspace: Path) -> None:
        self.book = book
        self.run_id = run_id
        self.transcript = str(run_dir / "events.jsonl")
        self.workspace = workspace
        self.session_context: list[str] = []  # the run's SessionStart context, for its own agents
        self.started: set[str] = set()  # agent instances whose own SessionStart fired

    def _base(self, event: str, inst: AgentInstance | None) -> dict[str, object]:
        out: dict[str, object] = {
            "session_id": self.run_id,
            "transcript_path": self.transcript,
            "cwd": str(inst.cwd if inst is not None else self.workspace),
            "hook_event_name": event,
            "permission_mode": "default",
        }
        if inst is not None:
            out["agent_id"] = inst.id
            out["agent_type"] = inst.name
        return out

    # ------------------------------------------------------------ tool calls

    async def pre_tool(self, inst: AgentInstance, bound: BoundTool, call: ToolCall) -> Verdict:
        names = names_of(bound.name, bound.delegates)
        selected = self.book.select("PreToolUse", inst, names)
        if not selected:
            return Verdict()

        def payload(dialect: Dialect) -> dict[str, object]:
            return {**self._base("PreToolUse", inst), **self._tool(dialect, inst, bound, call)}

        def back(dialect: Dialect, updated: dict[str, object]) -> dict[str, object]:
            if dialect == "flowrun":
                return updated
            return flowrun_input(bound.name, bound.delegates, updated, inst.cwd, self.workspace)

        verdict = await self.book.fire("PreToolUse", inst, f"pre:{call.id}", payload, selected, back)
        _stop_on(verdict)
        return verdict

    async def post_tool(
        self, inst: AgentInstance, bound: BoundTool, call: ToolCall, result: ToolResult
    ) -> ToolResult:
        selected = self.book.select("PostToolUse", inst, names_of(bound.name, bound.delegates))
        if not selected:
            return result

        def payload(dialect: Dialect) -> dict[str, object]:
            response = (
                claude_response(bound.name, bound.delegates, result)
                if dialect == "claude"
                else flowrun_response(result)
            )
            return {
                **self._base("PostToolUse", inst),
                **self._tool(dialect, inst, bound, call),
                "tool_response": response,
            }

        verdict = await self.book.fire("PostToolUse", inst, f"post:{call.id}", payload, selected)
        _stop_on(verdict)
        notes = (
            [f"PostToolUse hook: {verdict.reason}"] if verdict.decision == "block" else []
        ) + verdict.context
        if not notes:
            return result
        return replace(result, text="\n\n".join([result.text, *notes]))

    def _tool(
        self, dialect: Dialect, inst: AgentInstance, bound: BoundTool, call: ToolCall
    ) -> dict[str, object]:
        if dialect == "flowrun":
            return {"tool_name": bound.name, "tool_input": dict(call.arguments), "tool_use_id": call.id}
        return {
            "tool_name": claude_name(bound.name, bound.delegates),
            "tool_input": claude_input(bound.name, bound.delegates, call.arguments, inst.cwd),
            "tool_use_id": call.id,
        }

    # ------------------------------------------------------------ prompts and answers

    async def prompt(self, inst: AgentInstance, text: str, opening: bool) -> str:
        """The task or user message as the agent reads it (with the hooks' context); raises
        HookBlocked when a hook refuses it."""
        context: list[str] = []
        if opening and inst.depth == 0:
            context += self.session_context
        if inst.id not in self.started:
            self.started.add(inst.id)
            context += await self._agent_session_start(inst)
        selected = self.book.select("UserPromptSubmit", inst)
        if selected:
            moment = f"prompt:{inst.model_calls}"

            def payload(dialect: Dialect) -> dict[str, object]:
                return {**self._base("UserPromptSubmit", inst), "prompt": text}

            verdict = await self.book.fire("UserPromptSubmit", inst, moment, payload, selected)
            _stop_on(verdict)
            if verdict.decision == "block":
                raise HookBlocked(
                    f"a UserPromptSubmit hook refused the task of {inst.name}: {verdict.reason}",
                    "the hook's own message says why; change the task or the hook",
                )
            context += verdict.context
        return "\n\n".join([text, *context]) if context else text

    async def _agent_session_start(self, inst: AgentInstance) -> list[str]:
        selected = self.book.select("SessionStart", inst, ("startup",), run_scope=False)
        if not selected:
            return []

        def payload(dialect: Dialect) -> dict[str, object]:
            return {**self._base("SessionStart", inst), "source": "startup"}

        verdict = await self.book.fire("SessionStart", inst, "session-start", payload, selected)
        _stop_on(verdict)
        return verdict.context

    async def stop(self, inst: AgentInstance, outcome: Outcome, active: bool) -> str | None:
        """The reason the agent must go on (a new user message), or None: it may answer."""
        called = inst.depth > 0
        run_event = "SubagentStop" if called else "Stop"
        selected = self.book.select(run_event, inst)
        if called:  # its own Stop hooks apply wherever it runs
            own = self.book.select("Stop", inst, run_scope=False)
            selected += [s for s in own if s not in selected]
        if not selected:
            await self.agent_end(inst, outcome.status)
            return None

        def payload(dialect: Dialect) -> dict[str, object]:
            return {
                **self._base(run_event, inst),
                "stop_hook_active": active,
                "last_assistant_message": outcome.text,
            }

        verdict = await self.book.fire(run_event, inst, f"stop:{inst.model_calls}", payload, selected)
        _stop_on(verdict)
        if verdict.decision == "block":
            return verdict.reason or "Continue."
        await self.agent_end(inst, outcome.status)
        return None

    async def agent_end(self, inst: AgentInstance, status: str) -> None:
        """An agent's own SessionEnd hooks, once it answers."""
        selected = self.book.select("SessionEnd", inst, run_scope=False)
        if selected:
            await self._end(inst, status, selected)

    # ------------------------------------------------------------ the run

    async def session_start(self, resumed: bool) -> None:
        source = "resume" if resumed else "startup"
        selected = self.book.select("SessionStart", None, (source,))
        if not selected:
            return

        def payload(dialect: Dialect) -> dict[str, object]:
            return {**self._base("SessionStart", None), "source": source}

        verdict = await self.book.fire("SessionStart", None, "session-start", payload, selected)
        _stop_on(verdict)
        self.session_context = verdict.context

    async def session_end(self, status: str) -> None:
        selected = self.book.select("SessionEnd", None)
        if selected:
            await self._end(None, status, selected)

    async def _end(self, inst: AgentInstance | None, status: str, selected: list[Selected]) -> None:
        def payload(dialect: Dialect) -> dict[str, object]:
            return {**self._base("SessionEnd", inst), "reason": status}

        await self.book.fire("SessionEnd", inst, "session-end", payload, selected)

    async def notify(self, request: DecisionPendingEvent) -> None:
        """A decision waits for a person: the run's Notification hooks, matched on the kind
        (permission_prompt, elicitation_dialog, budget)."""
        inst = None
        kind = {"approval": "permission_prompt", "question": "elicitation_dialog"}.get(
            request.kind, request.kind
        )
        selected = self.book.select("Notification", inst, (kind,))
        if not selected:
            return
        what = {
            "approval": f"flowrun needs your permission to use {request.tool}",
            "question": f"flowrun has a question for you: {request.question}",
        }.get(request.kind, request.message or f"flowrun waits for a {request.kind} decision")

        def payload(dialect: Dialect) -> dict[str, object]:
            return {
                **self._base("Notification", inst),
                "message": what,
                "notification_type": kind,
                "agent_id": request.agent_id,
                "agent_type": request.agent,
            }

        moment = f"notification:{request.agent_id}:{request.call_id}"
        await self.book.fire("Notification", inst, moment, payload, selected)


def _stop_on(verdict: Verdict) -> None:
    if verdict.decision == "stop":
        raise HookStopped(
            f"a hook stopped the run: {verdict.stop_reason}", "the hook answered `continue: false`"
        )
