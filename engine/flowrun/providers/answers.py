"""Checks on a model's answer before the run uses it. A 200 response is not yet an answer: a
stream can end before its final event (a proxy or load balancer cut it), a body can be HTML
from a gateway or bytes that are not UTF-8, an answer can have no choices, be empty, or have
the wrong shape (a null message, text that is a number, a block without a type). Each becomes
a retryable `ApiFailure` of kind "answer", so it is retried like a 5xx and, after the retries,
fails the call with one line naming the model and the fault (retry.give_up)."""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from flowrun.providers.retry import ApiFailure, server_message
from flowrun.types import ModelResponse, ToolCall

T = TypeVar("T")
P = ParamSpec("P")

# What reading an answer of the wrong shape raises: the SDKs build their objects without
# validation (a field may hold None, a str or a list where an object was declared, or a token
# count of infinity, which no int holds).
SHAPE_ERRORS = (AttributeError, TypeError, KeyError, IndexError, ValueError, OverflowError)


def unusable(message: str) -> ApiFailure:
    return ApiFailure(message, kind="answer")


async def parsed(make: Callable[[], Awaitable[T]]) -> T:
    """Await an SDK call whose body the SDK parses: a body that is not valid JSON (cut short,
    not JSON at all, or nested past the parser's recursion) or not UTF-8 is an unusable answer,
    not a crash."""
    try:
        return await make()
    except json.JSONDecodeError as e:
        raise unusable(f"the response body is not valid JSON ({e.msg}, character {e.pos})") from e
    except UnicodeDecodeError as e:
        byte = e.object[e.start : e.start + 1].hex()
        raise unusable(f"the response body is not UTF-8 (byte 0x{byte} at offset {e.start})") from e
    except RecursionError:  # the JSON parser recurses once per nested array or object
        raise unusable("the response body nests JSON too deep to read") from None


def shape_checked(read: Callable[P, T]) -> Callable[P, T]:
    """For the functions that read an SDK's answer objects: a field of the wrong type is an
    unusable answer (retried), never an exception out of the provider."""

    @functools.wraps(read)
    def checked(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return read(*args, **kwargs)
        except SHAPE_ERRORS as e:
            detail = " ".join(str(e).split())[:120]
            raise unusable(f"the answer is malformed ({type(e).__name__}: {detail})") from e

    return checked


WRONG_FORMAT = "(check the model's provider and base_url)"


def _field(body: object, name: str) -> object:
    """A field of an answer's JSON object or of the SDK's model of it; None when missing."""
    return body.get(name) if isinstance(body, dict) else getattr(body, name, None)


def require_json_object(body: object, fields: str, *, foreign: tuple[str, str, str]) -> None:
    """The SDKs hand back the raw text when a 200 is not `application/json`: refuse it, a
    JSON body that carries an `error` instead of an answer, and an answer in the other wire
    format (`foreign`: a field, its value or "" for any, and the format's name), as a
    misrouted proxy sends it."""
    if isinstance(body, str | bytes):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        snippet = " ".join(text.split())[:80]
        raise unusable(f"the response body is not JSON: {snippet!r}")
    error = _field(body, "error")
    if error:
        raise unusable(f"the response is an error: {server_message({'error': error}, str(error))}")
    marker, value, other = foreign
    found = _field(body, marker)
    if found is not None and (not value or found == value):
        raise unusable(f"the answer is in {other} format {WRONG_FORMAT}")
    names = fields.split()
    if isinstance(body, dict):  # a body read as JSON (openai_provider.completion_body)
        present = all(name in body for name in names)
    else:  # the SDK's model of it
        present = all(hasattr(body, name) for name in names)
    if not present:
        raise unusable(f"the response has no {fields.replace(' ', ' or ')}")


def kind(value: object) -> str:
    """`a str`, `an int`: a value's type for a message."""
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def part_text(content: object) -> str:
    """A message's text: a string, or a list of text parts (some compatible servers send
    `[{"type": "text", "text": ...}]`); None is no text. Anything else is malformed."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        pieces = [p.get("text") if isinstance(p, dict) else p for p in content]
        if all(isinstance(p, str | None) for p in pieces):
            return "".join(p or "" for p in pieces)
    raise unusable(f"the answer's text is {kind(content)}, not text")


def _checked_call(call: ToolCall) -> ToolCall:
    if call.name is None:  # the SDKs do not validate
        call.name = ""  # the agent answers "unknown tool" and the model can correct itself
    if not isinstance(call.name, str):
        raise unusable(f"a tool call's name is {kind(call.name)}, not text")
    if not isinstance(call.id, str):
        raise unusable(f"a tool call's id is {kind(call.id)}, not text")
    return call


def require_answer(response: ModelResponse) -> ModelResponse:
    """An answer with neither text nor a tool call gives the agent nothing to act on; fields
    of the wrong type (the SDKs do not validate) make it malformed."""
    if not isinstance(response.text, str):
        raise unusable(f"the answer's text is {kind(response.text)}, not text")
    response.tool_calls = [_checked_call(call) for call in response.tool_calls]
    if response.stop_reason is not None and not isinstance(response.stop_reason, str):
        response.stop_reason = str(response.stop_reason)
    if not isinstance(response.model, str):
        response.model = str(response.model or "")
    if not response.text.strip() and not response.tool_calls:
        reason = f" (stop reason {response.stop_reason})" if response.stop_reason else ""
        raise unusable(f"the answer is empty: no text and no tool call{reason}")
    return response


def require_stream_end(ended: bool, events: int, final: str) -> None:
    """A stream must reach its final event (`final`); one that carried none at all was most
    likely not a model API's stream (or the server answered with a whole JSON body)."""
    if events == 0:
        raise unusable(
            "the stream carried no events (is base_url a model API that streams? try stream: false)"
        )
    if not ended:
        raise unusable(f"the stream ended after {events} events without its final {final}")
