"""The loop guard: an agent that calls the same tool with the same arguments `limit` times in a
row gets a REPEATED_CALL tool error instead of the result the `limit`-th time, and is stopped
(outcome `repeated_call`) if it makes that call once more. Calls count in the order the model
emitted them, across steps; any other call starts the count again.

The count lives on the agent instance and is fed only from the model's answers, so a replay
or a resume, which give the agent the recorded answers again, rebuild it exactly: the guard
fires at the same calls as in the recorded run."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

from flowrun.types import ToolCall, ToolResult

Verdict = Literal["run", "refuse", "stop"]


@dataclass(slots=True)
class RepeatGuard:
    limit: int  # the call that reaches it is refused; one more stops the agent
    key: str = ""  # the last call's tool and canonical arguments
    count: int = 0  # how many times in a row it was made
    refused: dict[str, str] = field(default_factory=dict)  # call id -> what the model reads

    def observe(self, call: ToolCall) -> Verdict:
        key = call.name + "\x00" + _canonical(call)
        self.count = self.count + 1 if key == self.key else 1
        self.key = key
        if self.count < self.limit:
            return "run"
        if self.count == self.limit:
            self.refused[call.id] = refusal_text(call.name, self.count)
            return "refuse"
        return "stop"

    def refusal(self, call_id: str) -> ToolResult | None:
        """The REPEATED_CALL result for a call the guard refused (once), or None."""
        text = self.refused.pop(call_id, None)
        return None if text is None else ToolResult.fail("REPEATED_CALL", text)


def refusal_text(tool: str, count: int) -> str:
    return (
        f"{tool} was not run: this is the {count}th call in a row with the same arguments, and "
        "repeating it will not give a different result. Use what the earlier calls returned, try "
        "different arguments or another tool, or finish; the same call once more stops you."
    )


def stop_text(agent: str, tool: str, count: int, limit: int) -> str:
    return (
        f"agent '{agent}' was stopped: it called {tool} with the same arguments {count} times in a "
        f"row (max_repeated_calls: {limit}) after being told not to repeat it"
    )


def _canonical(call: ToolCall) -> str:
    if call.parse_error:
        return call.raw_arguments or ""
    return json.dumps(call.arguments, sort_keys=True, ensure_ascii=False, default=str)
