"""Checks on a model's answer before the run uses it. A 200 response is not yet an answer: a
stream can end before its final event (a proxy or load balancer cut it), a body can be HTML
from a gateway, an answer can have no choices or be empty. Each becomes a retryable
`ApiFailure` of kind "answer", so it is retried like a 5xx and, after the retries, fails the call
with one line naming the model and the fault (retry.give_up)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from flowrun.providers.retry import ApiFailure
from flowrun.types import ModelResponse

T = TypeVar("T")


def unusable(message: str) -> ApiFailure:
    return ApiFailure(message, kind="answer")


async def parsed(make: Callable[[], Awaitable[T]]) -> T:
    """Await an SDK call whose body the SDK parses: a body that is not valid JSON (cut short,
    or not JSON at all) is an unusable answer, not a crash."""
    try:
        return await make()
    except json.JSONDecodeError as e:
        raise unusable(f"the response body is not valid JSON ({e.msg}, character {e.pos})") from e


def require_json_object(body: Any, fields: str) -> None:
    """The SDKs hand back the raw text when a 200 is not `application/json`: refuse it."""
    if isinstance(body, str | bytes):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        snippet = " ".join(text.split())[:80]
        raise unusable(f"the response body is not JSON: {snippet!r}")
    names = fields.split()
    if isinstance(body, dict):  # a body read as JSON (openai_provider.completion_body)
        present = all(name in body for name in names)
    else:  # the SDK's model of it
        present = all(hasattr(body, name) for name in names)
    if not present:
        raise unusable(f"the response has no {fields.replace(' ', ' or ')}")


def require_answer(response: ModelResponse) -> ModelResponse:
    """An answer with neither text nor a tool call gives the agent nothing to act on."""
    if not response.text.strip() and not response.tool_calls:
        reason = f" (stop reason {response.stop_reason})" if response.stop_reason else ""
        raise unusable(f"the answer is empty: no text and no tool call{reason}")
    return response


def require_stream_end(ended: bool, events: int, final: str) -> None:
    """A stream must reach its final event (`final`); one that carried none at all was most
    likely not a model API's stream."""
    if events == 0:
        raise unusable("the stream carried no events (is base_url a model API?)")
    if not ended:
        raise unusable(f"the stream ended after {events} events without its final {final}")
