"""`tool_history: text`: past tool calls and their results sent as plain text turns, for
proxies that reject tool_use / tool_result blocks (or `tool_calls` / `tool` messages) in the
history. The tools themselves are still offered natively, so the model calls them as usual;
only what was already said is flattened."""

from __future__ import annotations

import json

from flowrun.types import Message


def flatten_tool_history(messages: list[Message]) -> list[Message]:
    """Assistant turns with tool calls become text that names each call; tool results become a
    user turn (results of one step joined); consecutive user turns are merged."""
    out: list[Message] = []
    for message in messages:
        if message.role == "assistant" and message.tool_calls:
            calls = "\n".join(
                f"[called tool {c.name} with {json.dumps(c.arguments, ensure_ascii=False)}]"
                for c in message.tool_calls
            )
            text = f"{message.content}\n{calls}" if message.content else calls
            out.append(Message("assistant", text, thinking=list(message.thinking)))
        elif message.role == "tool":
            status = " (error)" if message.is_error else ""
            _add_user(out, f"[result of {message.name or 'the tool'}{status}]\n{message.content}")
        elif message.role == "user":
            _add_user(out, message.content)
        else:
            out.append(message)
    return out


def _add_user(out: list[Message], text: str) -> None:
    if out and out[-1].role == "user":
        out[-1] = Message("user", f"{out[-1].content}\n\n{text}")
    else:
        out.append(Message("user", text))
