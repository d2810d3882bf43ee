"""retry.py on its own: what is retried, how long it waits, how SDK errors are classified."""

from __future__ import annotations

import email.utils
import time

import anthropic
import httpx2
import openai
import pytest
from support.providers import provider_config

from flowrun.errors import ProviderError
from flowrun.providers.retry import ApiFailure, backoff_delay, failure_from_sdk, server_message, with_retries

CONFIG = provider_config("fast", "openai", "gpt-x", api_key_env="KEY_VAR", max_retries=3)


@pytest.fixture(autouse=True)
def _tiny_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWRUN_RETRY_BASE_S", "0.001")


def http_response(status: int, headers: dict[str, str] | None = None) -> httpx2.Response:
    return httpx2.Response(
        status, headers=headers, request=httpx2.Request("POST", "http://127.0.0.1/v1/messages")
    )


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after-ms": "250"}, 0.25),
        ({"Retry-After": "3"}, 3.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after": "3600"}, 60.0),  # capped
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_headers(headers: dict[str, str], expected: float | None) -> None:
    assert ApiFailure("x", status=429, headers=headers).retry_after() == expected


def test_retry_after_as_http_date() -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    seconds = ApiFailure("x", status=503, headers={"retry-after": when}).retry_after()
    assert seconds is not None and 20 < seconds <= 31


def test_backoff_grows_with_jitter_and_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWRUN_RETRY_BASE_S", "0.5")
    failure = ApiFailure("x", status=500)
    for attempt, ceiling in [(0, 0.5), (1, 1.0), (3, 4.0), (10, 20.0)]:
        delays = {backoff_delay(attempt, failure) for _ in range(50)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(delays) > 1  # jittered
    monkeypatch.setenv("FLOWRUN_RETRY_BASE_S", "0.01")  # read at call time
    assert backoff_delay(0, failure) <= 0.01


@pytest.mark.parametrize(
    ("failure", "retryable"),
    [
        (ApiFailure("x", status=429), True),
        (ApiFailure("x", status=529), True),
        (ApiFailure("x", status=502), True),
        (ApiFailure("x", status=400), False),
        (ApiFailure("x", status=401), False),
        (ApiFailure("x", status=422), False),
        (ApiFailure("x", kind="connection"), True),
        (ApiFailure("x", kind="timeout"), True),
        (ApiFailure("x", kind="stream"), True),
    ],
)
def test_what_is_retryable(failure: ApiFailure, retryable: bool) -> None:
    assert failure.retryable is retryable


async def test_with_retries_succeeds_after_failures_and_reports_each_retry() -> None:
    outcomes: list[object] = [ApiFailure("busy", status=503), ApiFailure("slow", kind="timeout"), "ok"]
    seen: list[tuple[int, float, str]] = []

    async def call() -> str:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return str(outcome)

    result = await with_retries(call, config=CONFIG, agent="a", on_retry=lambda *r: seen.append(r))
    assert result == "ok"
    assert [(n, why) for n, _, why in seen] == [(1, "HTTP 503: busy"), (2, "timeout: slow")]


async def test_non_retryable_raises_at_once_with_a_hint() -> None:
    calls = 0

    async def call() -> str:
        nonlocal calls
        calls += 1
        raise ApiFailure("invalid x-api-key", status=401)

    with pytest.raises(ProviderError) as info:
        await with_retries(call, config=CONFIG, agent="writer")
    assert calls == 1
    error = info.value
    assert str(error).startswith(
        "agent 'writer': model 'fast' (openai:gpt-x) failed: HTTP 401: invalid x-api-key"
    )
    assert error.hint == "check the key in $KEY_VAR"
    assert isinstance(error.__cause__, ApiFailure)


async def test_max_retries_zero_means_one_attempt() -> None:
    calls = 0

    async def call() -> str:
        nonlocal calls
        calls += 1
        raise ApiFailure("down", status=503)

    config = provider_config("m", "anthropic", "c", max_retries=0)
    with pytest.raises(ProviderError, match="failed: HTTP 503: down"):
        await with_retries(call, config=config, agent="a")
    assert calls == 1


async def test_other_exceptions_are_not_touched() -> None:
    async def call() -> str:
        raise KeyError("engine bug")

    with pytest.raises(KeyError):
        await with_retries(call, config=CONFIG, agent="a")


def test_server_message_from_both_error_shapes() -> None:
    assert server_message({"type": "error", "error": {"type": "x", "message": "over\n capacity"}}, "f") == (
        "over capacity"
    )
    assert server_message({"message": "bad model"}, "f") == "bad model"
    assert server_message(None, "fallback") == "fallback"
    assert len(server_message("y" * 1000, "f")) == 300


def test_classify_anthropic_status_and_mid_stream_errors() -> None:
    status = anthropic.APIStatusError(
        "Error code: 529",
        response=http_response(529, {"retry-after": "2"}),
        body={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    failure = failure_from_sdk(status, anthropic)
    assert failure is not None and failure.status == 529 and failure.retryable
    assert failure.message == "Overloaded" and failure.retry_after() == 2.0
    # an `event: error` inside a 200 stream: the status comes from the error type
    overloaded = anthropic.APIStatusError(
        "stream error",
        response=http_response(200),
        body={"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    mid = failure_from_sdk(overloaded, anthropic)
    assert mid is not None and mid.status == 529 and mid.retryable
    odd = anthropic.APIStatusError("?", response=http_response(200), body={"error": {"type": "new_kind"}})
    unknown = failure_from_sdk(odd, anthropic)
    assert unknown is not None and unknown.kind == "stream"


def test_classify_connection_timeout_and_others() -> None:
    request = httpx2.Request("POST", "http://127.0.0.1/")
    timeout = failure_from_sdk(openai.APITimeoutError(request=request), openai)
    assert timeout is not None and timeout.kind == "timeout"
    refused = failure_from_sdk(anthropic.APIConnectionError(request=request), anthropic)
    assert refused is not None and refused.kind == "connection"
    cut = failure_from_sdk(httpx2.RemoteProtocolError("peer closed", request=request), openai)
    assert cut is not None and cut.kind == "connection"
    read = failure_from_sdk(httpx2.ReadTimeout("slow", request=request), anthropic)
    assert read is not None and read.kind == "timeout"
    in_stream = failure_from_sdk(openai.APIError("boom", request, body={"message": "server broke"}), openai)
    assert in_stream is not None and in_stream.kind == "stream" and in_stream.message == "server broke"
    assert failure_from_sdk(ValueError("not ours"), openai) is None
