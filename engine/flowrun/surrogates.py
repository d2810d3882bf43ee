"""Lone surrogates: what a JSON escape such as `\\ud800` decodes to, a code point no UTF-8 text
can hold. A model (or a server speaking for one, or a tool's JSON) can send them; encoding
them fails, so every text that crosses to a model or into a digest is cleaned here first
(each one becomes U+FFFD), while a tool call's own arguments keep them long enough for the
call to be refused with a clear error (runtime/loop/dispatch.py)."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from flowrun.types import Message, ModelResponse, ToolCall

_LONE = re.compile("[\ud800-\udfff]")  # (a pair decodes to one character: any left is alone)
REPLACEMENT = "\ufffd"


def _has(text: str) -> bool:
    return not text.isascii() and _LONE.search(text) is not None


def clean_text(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD (itself when it has none)."""
    return _LONE.sub(REPLACEMENT, text) if _has(text) else text


def find(value: object, where: str = "arguments") -> str | None:
    """Where a string of a JSON-like value (or one of its keys) holds a lone surrogate, if any."""
    if isinstance(value, str):
        return where if _has(value) else None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = find(key, f"{where} key") if isinstance(key, str) else None
        found = found or find(item, f"{where}/{key}")
        if found:
            return found
    return None


def clean_value(value: Any) -> Any:
    """A JSON-like value with every string (keys too) cleaned; the value itself when clean."""
    if find(value) is None:
        return value
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(k) if isinstance(k, str) else k: clean_value(v) for k, v in value.items()}
    return [clean_value(item) for item in value]


def _clean_call(call: ToolCall) -> ToolCall:
    name, call_id, arguments = clean_text(call.name), clean_text(call.id), clean_value(call.arguments)
    raw = clean_text(call.raw_arguments) if call.raw_arguments is not None else None
    if name is call.name and call_id is call.id and arguments is call.arguments and raw is call.raw_arguments:
        return call
    return replace(call, name=name, id=call_id, arguments=arguments, raw_arguments=raw)


def sendable(message: Message) -> Message:
    """The message as a model can be sent it: cleaned (a copy), or itself when it is clean."""
    content = clean_text(message.content)
    calls = [_clean_call(call) for call in message.tool_calls]
    thinking = clean_value(message.thinking)
    call_id = clean_text(message.tool_call_id) if message.tool_call_id is not None else None
    same_calls = all(new is old for new, old in zip(calls, message.tool_calls, strict=True))
    same_texts = content is message.content and call_id is message.tool_call_id
    if same_texts and same_calls and thinking is message.thinking:
        return message
    return replace(message, content=content, tool_calls=calls, thinking=thinking, tool_call_id=call_id)


def clean_response(response: ModelResponse) -> ModelResponse:
    """A model's answer as the run keeps it: its text, thinking and tool call names and ids
    cleaned; each call's arguments as sent (a call holding a lone surrogate is refused)."""
    text, thinking = clean_text(response.text), clean_value(response.thinking)
    names_clean = not any(_has(c.name) or _has(c.id) for c in response.tool_calls)
    if text is response.text and thinking is response.thinking and names_clean:
        return response
    calls = [replace(c, name=clean_text(c.name), id=clean_text(c.id)) for c in response.tool_calls]
    return replace(response, text=text, thinking=thinking, tool_calls=calls)
