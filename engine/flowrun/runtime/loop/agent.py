"""The one generic agent loop: call the model, run its tool calls concurrently, feed the results
back, repeat until the model answers without tool calls, a finish tool is called, a stop pattern
matches, or `max_steps` is reached. A final answer is checked against the agent's
`output_schema` (repair turns do not count toward `max_steps`). It sees the run only through
`LoopServices`."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from flowrun.events import RepeatedCallEvent
from flowrun.runtime.loop.contracts import AgentInstance, ContextStrategy, LoopServices, Outcome
from flowrun.runtime.loop.repeats import stop_text
from flowrun.runtime.loop.structured import accept_final
from flowrun.types import Control, Finish, Message, ModelResponse, ResetContext, ToolCall, ToolResult

CONTINUE = "Continue. Call a finish tool when the task is done."
# (instance, its answer or None before a model call) -> a user message for it now, or None
UserTurn = Callable[[AgentInstance, str | None], Awaitable[str | None]]


async def run_agent(
    services: LoopServices, inst: AgentInstance, task: str, max_steps: int | None = None
) -> Outcome:
    """Give `inst` a task and loop until it is done. A user message (a chat turn, or the
    `--message` of a resumed run) may arrive before a model call or after a final answer; then
    the conversation goes on, with a fresh `max_steps` budget."""
    strategy = inst.strategy
    inst.task = await services.prompt_hooks(inst, task, True)
    await services.guard_input(inst)
    inst.messages.append(Message("user", strategy.opening(inst, inst.task, services)))
    limit = max_steps or inst.spec.max_steps
    pattern = inst.stop_pattern()
    step = repairs = base = 0
    held = False  # a Stop hook made it go on: `stop_hook_active`
    while step < base + limit + repairs:
        step += 1
        if await _user_message(services, inst, None):
            base = step - 1
        outcome = await _turn(services, inst, strategy, pattern, step)
        if outcome is None:
            continue
        if outcome.status == "stopped" or accept_final(services, inst, outcome, repairs):
            retry = await services.guard_output(inst, outcome)  # a guardrail's retry counts as a step
            if retry is not None:
                inst.messages.append(Message("user", retry))
                continue
            if outcome.status != "finished" and await _user_message(services, inst, outcome.text):
                base = step
                continue
            reason = await services.stop_hooks(inst, outcome, held)
            if reason is not None:
                inst.messages.append(Message("user", reason))
                held = True
                continue
            return outcome
        repairs += 1
    return Outcome("max_steps", inst.last_text, step)


async def _user_message(services: LoopServices, inst: AgentInstance, answer: str | None) -> bool:
    """Append the user's message for `inst` at this point, if there is one."""
    user_turn: UserTurn = services.user_turn
    message = await user_turn(inst, answer)
    if message is None:
        return False
    inst.messages.append(Message("user", await services.prompt_hooks(inst, message, False)))
    return True


async def _turn(
    services: LoopServices,
    inst: AgentInstance,
    strategy: ContextStrategy,
    pattern: re.Pattern[str] | None,
    step: int,
) -> Outcome | None:
    """One model call and its tool calls; the outcome when the agent is done, else None."""
    await strategy.before_call(inst, services)
    response = await services.model_call(inst)
    _unique_call_ids(response, step)
    inst.last_text = response.text or inst.last_text
    inst.messages.append(
        Message("assistant", response.text, list(response.tool_calls), thinking=list(response.thinking))
    )
    if pattern is not None and response.text and pattern.search(response.text):
        return Outcome("stopped", response.text, step)
    if not response.tool_calls:
        # with an output_schema, an answer without tool calls is the final answer (checked, and
        # repaired when it does not match), whatever `stop.on_text` says
        if inst.spec.stop.on_text or inst.output_schema is not None:
            return Outcome("completed", response.text, step)
        inst.messages.append(Message("user", CONTINUE))
        return None
    stopped = _guard(services, inst, response.tool_calls, step)
    if stopped is not None:
        return stopped
    await services.guard_calls(inst, response.tool_calls)
    results = await services.execute_calls(inst, response.tool_calls)
    control = _record_results(inst, response.tool_calls, results)
    if isinstance(control, Finish):
        return Outcome("finished", control.result, step)
    if isinstance(control, ResetContext):
        strategy.reset(inst, services)
    return None


def _guard(services: LoopServices, inst: AgentInstance, calls: list[ToolCall], step: int) -> Outcome | None:
    """The loop guard over a step's calls, in the order the model made them: a call that
    reaches the limit is refused (the dispatcher answers it REPEATED_CALL); one past it stops
    the agent, none of the step's calls running."""
    guard = inst.repeats
    for call in calls:
        verdict = guard.observe(call)
        if verdict == "run":
            continue
        action = "refused" if verdict == "refuse" else "stopped"
        event = RepeatedCallEvent(
            agent=inst.name,
            agent_id=inst.id,
            call_id=call.id,
            tool=call.name,
            count=guard.count,
            limit=guard.limit,
            action=action,
        )
        services.emit(event)
        if verdict == "stop":
            guard.refused.clear()
            text = stop_text(inst.name, call.name, guard.count, guard.limit)
            for made in calls:  # every call gets its turn: the history stays well-formed
                inst.messages.append(
                    Message("tool", f"not run: {text}", tool_call_id=made.id, name=made.name, is_error=True)
                )
            return Outcome("repeated_call", text, step)
    return None


def _record_results(inst: AgentInstance, calls: list[ToolCall], results: list[ToolResult]) -> Control | None:
    """Append the tool turns; the step's loop control (a finish wins over a reset)."""
    control: Control | None = None
    for call, result in zip(calls, results, strict=True):
        inst.messages.append(_tool_message(call, result))
        if result.status != "error" and result.control is not None and not isinstance(control, Finish):
            control = result.control
    return control


def _unique_call_ids(response: ModelResponse, step: int) -> None:
    """Tool results are matched to calls by id; a model that repeats or omits ids gets fresh ones."""
    seen: set[str] = set()
    for i, call in enumerate(response.tool_calls):
        if not call.id or call.id in seen:
            call.id = f"call_{step}_{i}"
        seen.add(call.id)


def _tool_message(call: ToolCall, result: ToolResult) -> Message:
    return Message(
        "tool",
        result.model_text(),
        tool_call_id=call.id,
        name=call.name,
        is_error=result.status == "error",
    )
