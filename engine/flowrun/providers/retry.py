"""Retries for model calls: which failures are worth another try, how long to wait, and the
one-line ProviderError a user sees when we give up.

Inside the `call` they hand to `with_retries`, providers turn their SDK's exceptions into
`ApiFailure` (status code, headers, the server's message) with `failure_from_sdk(exc, sdk)`,
passing the SDK module in, so this module never imports an SDK itself.

Retried: 429, 500/502/503/504/529, connection errors, timeouts, errors reported in the
middle of a stream, and unusable answers (answers.py: a stream without its final event, no
choices, a body that is not JSON, an empty answer). Anything else (400, 401, 403, 404, ...)
fails at once.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from types import ModuleType
from typing import Any, Literal, TypeVar

from flowrun.errors import ProviderError
from flowrun.providers.base import ModelConfig

T = TypeVar("T")
FailureKind = Literal["status", "connection", "timeout", "stream", "answer"]

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 529})
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 20.0
RETRY_AFTER_CAP_S = 60.0
BASE_ENV = "FLOWRUN_RETRY_BASE_S"  # tests shrink the backoff base with it
_KIND_LABELS = {
    "connection": "connection error",
    "timeout": "timeout",
    "stream": "stream error",
    "answer": "unusable answer",
}


class ApiFailure(Exception):
    """A failed model call in provider-neutral terms (raised by providers, consumed here)."""

    def __init__(
        self,
        message: str,
        *,
        kind: FailureKind = "status",
        status: int | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.status = status
        self.headers = {k.lower(): v for k, v in (headers or {}).items()}

    @property
    def retryable(self) -> bool:
        return self.kind != "status" or self.status in RETRY_STATUSES

    def retry_after(self) -> float | None:
        """Seconds the server asked us to wait (`retry-after-ms`, `retry-after` as seconds or
        an HTTP date), capped; None when it did not say."""
        if ms := self.headers.get("retry-after-ms"):
            try:
                return min(max(float(ms) / 1000, 0.0), RETRY_AFTER_CAP_S)
            except ValueError:
                pass
        value = self.headers.get("retry-after")
        if not value:
            return None
        try:
            seconds = float(value)
        except ValueError:
            try:
                seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
            except (TypeError, ValueError):
                return None
        return min(max(seconds, 0.0), RETRY_AFTER_CAP_S)

    def summary(self) -> str:
        """`HTTP 429: <server message>`, `connection error: ...`, `timeout: ...`."""
        head = f"HTTP {self.status}" if self.kind == "status" else _KIND_LABELS[self.kind]
        return f"{head}: {self.message}"


def server_message(body: object, fallback: str) -> str:
    """The human part of an error body: `{"error": {"message": ...}}` in both wire formats,
    or the body itself; on one line and not too long for a log line."""
    error = body.get("error", body) if isinstance(body, Mapping) else body
    message = error.get("message") if isinstance(error, Mapping) else error
    text = str(message) if message else fallback
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:297] + "..."


# Anthropic reports failures in the middle of a stream as an `error` event on a 200 response.
_ERROR_TYPE_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


def _status_failure(exc: Any) -> ApiFailure:
    status = int(exc.status_code)
    body = exc.body
    message = server_message(body, str(getattr(exc, "message", exc)))
    headers = exc.response.headers if getattr(exc, "response", None) is not None else {}
    if status < 400:  # an error event inside a stream
        error = body.get("error", body) if isinstance(body, Mapping) else None
        kind = error.get("type") if isinstance(error, Mapping) else None
        if kind not in _ERROR_TYPE_STATUS:
            return ApiFailure(message, kind="stream", headers=headers)
        status = _ERROR_TYPE_STATUS[kind]
    return ApiFailure(message, status=status, headers=headers)


def failure_from_sdk(exc: BaseException, sdk: ModuleType) -> ApiFailure | None:
    """Classify an exception of a Stainless-generated SDK (`openai`, `anthropic`, passed as
    the module) or of the HTTP layer under it; None when it is not a call failure."""
    import httpx2  # both SDKs' transport; only imported once something failed

    if isinstance(exc, sdk.APIStatusError):
        return _status_failure(exc)
    cause = exc.__cause__ or exc.__context__
    if isinstance(exc, sdk.APITimeoutError | httpx2.TimeoutException):
        # the aiohttp transport reports a refused connection as a connect timeout
        if "Connect call failed" in str(cause) or "Connect call failed" in str(exc):
            return ApiFailure(
                f"connection refused ({type(cause or exc).__name__}: {cause or exc})", kind="connection"
            )
        return ApiFailure("no complete answer in time", kind="timeout")  # SDK texts are long
    for error in (exc, cause):  # the SDKs wrap it as a connection error when not streaming
        if isinstance(error, httpx2.DecodingError):  # e.g. a gzip body that does not unzip
            return ApiFailure(f"the response body cannot be decoded ({error})", kind="answer")
    if isinstance(exc, sdk.APIConnectionError | httpx2.RequestError):
        detail = f"{exc} ({type(cause).__name__}: {cause})" if cause else str(exc)
        return ApiFailure(detail or type(exc).__name__, kind="connection")
    if isinstance(exc, sdk.APIError):  # e.g. an error object inside an OpenAI stream
        return ApiFailure(server_message(getattr(exc, "body", None), str(exc)), kind="stream")
    return None


def backoff_delay(attempt: int, failure: ApiFailure) -> float:
    """Seconds to wait before retry number `attempt + 1` (0-based attempt just failed)."""
    asked = failure.retry_after()
    if asked is not None:
        return asked
    try:
        base = float(os.environ.get(BASE_ENV, "") or BACKOFF_BASE_S)
    except ValueError:
        base = BACKOFF_BASE_S
    ceiling = min(BACKOFF_CAP_S, base * 2.0**attempt)
    return ceiling / 2 + random.uniform(0, ceiling / 2)  # "equal jitter": spread, never near zero


# where each SDK sends a call when the model names no base_url
SDK_BASE_URLS = {
    "openai": ("OPENAI_BASE_URL", "https://api.openai.com/v1"),
    "anthropic": ("ANTHROPIC_BASE_URL", "https://api.anthropic.com"),
}


def sent_to(config: ModelConfig) -> str:
    """The address a model's calls went to, and where that address came from (a hint names
    both: a dead `OPENAI_BASE_URL` is not the provider's default)."""
    if config.base_url:
        if config.base_url == os.environ.get("LLM_BASE_URL") and config.provider == "openai":
            return f"{config.base_url} (from $LLM_BASE_URL)"
        return f"{config.base_url} (the base_url of model '{config.name}')"
    env, default = SDK_BASE_URLS.get(config.provider, (None, None))
    if env is not None and (value := os.environ.get(env)):
        return f"{value} (from ${env})"
    return f"{default} (the {config.provider} SDK's default)" if default else "the provider's default"


def _credential_env(config: ModelConfig) -> str | None:
    return config.auth_token_env or config.api_key_env


def _hint(failure: ApiFailure, config: ModelConfig, credential: str | None = None) -> str:
    status = failure.status
    if status in (401, 403):
        if credential is not None:  # what the provider really sent (never its value)
            return f"the server refused the credential sent: {credential}; check it"
        env = _credential_env(config)
        return f"check the key in ${env}" if env else "check the credentials the server expects"
    if status == 404:
        return f"check the model id '{config.model}' and the address {sent_to(config)}"
    if status == 429:
        return "rate limited: lower the concurrency, wait, or raise the model's max_retries"
    if failure.kind == "connection":
        return f"check the network and the address {sent_to(config)}"
    if failure.kind == "timeout":
        return f"the call took longer than timeout_s={config.timeout_s:g}: raise it or retry later"
    if failure.kind == "answer" and (
        "stop reason max_tokens" in failure.message or "stop reason length" in failure.message
    ):
        return (
            f"the model used up max_tokens={config.max_tokens} before answering: raise the model's max_tokens"
        )
    if failure.kind == "answer":
        return (
            f"the server's answers are broken or empty: check that {sent_to(config)} is the model API, "
            "retry later, or raise the model's max_retries"
        )
    if (status is not None and status >= 500) or failure.kind == "stream":
        return "the service is failing: retry later or raise the model's max_retries"
    return "check the request the workflow builds for this model (see events.jsonl)"


def give_up(
    failure: ApiFailure, *, config: ModelConfig, agent: str, retries: int, credential: str | None = None
) -> ProviderError:
    """The one-line error for a call that failed for good."""
    tried = f" after {retries} retr{'y' if retries == 1 else 'ies'}" if retries else ""
    message = (
        f"agent '{agent}': model '{config.name}' ({config.provider}:{config.model}) failed{tried}: "
        f"{failure.summary()}"
    )
    return ProviderError(
        message,
        _hint(failure, config, credential),
        agent=agent,
        model=config.name,
        retryable=failure.retryable,
    )


async def with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    config: ModelConfig,
    agent: str,
    on_retry: Callable[[int, float, str], None] | None = None,
    credential: str | None = None,
) -> T:
    """Run `call`, retrying retryable `ApiFailure`s up to `config.max_retries` times with
    exponential backoff and jitter (or the server's retry-after). `on_retry(retry_number,
    delay_s, reason)` is told before each wait. Raises ProviderError when it gives up (naming
    `credential`, what was sent, on a 401 or 403)."""
    attempt = 0
    while True:
        try:
            return await call()
        except ApiFailure as failure:
            if not failure.retryable or attempt >= config.max_retries:
                raise give_up(
                    failure, config=config, agent=agent, retries=attempt, credential=credential
                ) from failure
            delay = backoff_delay(attempt, failure)
            attempt += 1
            if on_retry is not None:
                on_retry(attempt, delay, failure.summary())
            await asyncio.sleep(delay)


async def call_sdk(
    make: Callable[[], Awaitable[T]],
    sdk: ModuleType,
    *,
    config: ModelConfig,
    agent: str,
    on_retry: Callable[[int, float, str], None] | None = None,
    credential: str | None = None,
) -> T:
    """One SDK request with our retry policy: the SDK's exceptions are classified first, so
    429/5xx/timeouts are retried and everything else fails at once with a one-line error."""

    async def attempt() -> T:
        try:
            # the SDKs' timeout bounds each read; this bounds the whole answer, so a server that
            # keeps a stream alive with pings (or drips a body) cannot hold the run forever
            async with asyncio.timeout(config.timeout_s):
                return await make()
        except TimeoutError as e:
            raise ApiFailure(
                f"no complete answer within timeout_s={config.timeout_s:g}", kind="timeout"
            ) from e
        except Exception as e:
            failure = failure_from_sdk(e, sdk)
            if failure is None:
                raise
            raise failure from e

    return await with_retries(attempt, config=config, agent=agent, on_retry=on_retry, credential=credential)
