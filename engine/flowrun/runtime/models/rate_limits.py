"""Per-model rate limits (`rate_limit: {requests_per_minute, tokens_per_minute}` in a model's
manifest), shared by every run of the process, so the concurrent sub-agents of a run and the runs
of a batch together stay under them instead of meeting a storm of 429s.

Each call takes a start time from a `LimitBook` before it goes out:
- requests are spread evenly: at most requests_per_minute / 60 at once (at least 1), then one
  every 60 / requests_per_minute seconds;
- tokens come from a bucket that holds one second's worth of tokens_per_minute and refills
  continuously; a call reserves its input estimate (characters / 4) plus its max_tokens before it
  goes out, as OpenAI's own limiter counts it, and is charged its actual usage once the answer is
  back (the rest is given back); a call larger than the bucket waits for it to be full.

The book is process-wide by default; a Ray worker swaps in one that asks a shared actor
(`use_book`), so the workers of a cluster share the same limits."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Protocol

from flowrun.providers.base import ModelConfig, ModelRequest, Provider
from flowrun.types import ModelResponse

TOKEN_BURST_S = 1.0  # the token bucket holds this many seconds of tokens_per_minute


@dataclass(frozen=True, slots=True)
class Limit:
    key: str  # which model: every run that calls it shares this key
    requests_per_minute: int | None
    tokens_per_minute: int | None


class LimitBook(Protocol):
    """Where start times come from: this process (`LocalBook`) or a Ray actor."""

    def reserve(self, limit: Limit, tokens: int) -> Awaitable[float] | float: ...

    def settle(self, limit: Limit, estimated: int, actual: int) -> None: ...


class Schedule:
    """The virtual clocks of one model: when the request and token budgets are next free.
    A clock ahead of now is debt; a call may start once the debt, its own cost included, fits
    in the burst."""

    def __init__(self) -> None:
        self.requests_at = 0.0
        self.tokens_at = 0.0

    def reserve(self, limit: Limit, tokens: int, now: float) -> float:
        """The time this call may start (>= now); its cost is booked."""
        start = now
        if limit.requests_per_minute:
            interval = 60.0 / limit.requests_per_minute
            burst = max(1.0, limit.requests_per_minute / 60.0)
            start = max(start, self.requests_at + (1 - burst) * interval)
        if limit.tokens_per_minute:
            per_token = 60.0 / limit.tokens_per_minute
            capacity = limit.tokens_per_minute * TOKEN_BURST_S / 60.0
            start = max(start, self.tokens_at + (min(tokens, capacity) - capacity) * per_token)
        if limit.requests_per_minute:
            self.requests_at = max(self.requests_at, start) + 60.0 / limit.requests_per_minute
        if limit.tokens_per_minute:
            self.tokens_at = max(self.tokens_at, start) + tokens * 60.0 / limit.tokens_per_minute
        return start

    def settle(self, limit: Limit, estimated: int, actual: int) -> None:
        if limit.tokens_per_minute:
            self.tokens_at += (actual - estimated) * 60.0 / limit.tokens_per_minute


class LocalBook:
    """The schedules of this process, safe to use from several threads and event loops."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._schedules: dict[str, Schedule] = {}

    def reserve(self, limit: Limit, tokens: int) -> float:
        """Seconds to wait before the call may go out."""
        now = time.monotonic()
        return self.start_at(limit, tokens, now) - now

    def start_at(self, limit: Limit, tokens: int, now: float) -> float:
        """When a call that asks at `now` may start (time.monotonic()); its cost is booked."""
        with self._lock:
            return self._schedules.setdefault(limit.key, Schedule()).reserve(limit, tokens, now)

    def settle(self, limit: Limit, estimated: int, actual: int) -> None:
        with self._lock:
            self._schedules.setdefault(limit.key, Schedule()).settle(limit, estimated, actual)


_book: LimitBook = LocalBook()


def use_book(book: LimitBook) -> None:
    """Share limits through `book` from now on (a Ray worker's actor-backed book)."""
    global _book
    _book = book


def limit_of(config: ModelConfig) -> Limit | None:
    if not config.requests_per_minute and not config.tokens_per_minute:
        return None
    key = f"{config.name}|{config.provider}|{config.model}|{config.base_url or ''}"
    return Limit(key, config.requests_per_minute, config.tokens_per_minute)


def estimate_tokens(request: ModelRequest, max_tokens: int) -> int:
    """What a call may cost before it is made: its input (characters / 4, no tokenizer needed)
    plus all the output it may ask for."""
    chars = len(request.system) + sum(len(m.content) for m in request.messages)
    chars += sum(len(t.description) + 200 for t in request.tools)
    return max(1, chars // 4) + max_tokens


class RateLimitedProvider(Provider):
    """Wraps a provider: each call waits for its turn under the model's limits."""

    def __init__(self, inner: Provider, limit: Limit) -> None:
        super().__init__(inner.config)
        self.inner = inner
        self.limit = limit

    async def complete(self, request: ModelRequest) -> ModelResponse:
        estimated = estimate_tokens(request, self.config.max_tokens) if self.limit.tokens_per_minute else 0
        await self.inner.ready(request.agent)  # the SDK's first import is not spent after our turn
        wait = _book.reserve(self.limit, estimated)
        delay = wait if isinstance(wait, float | int) else await wait
        if delay > 0:
            await asyncio.sleep(delay)
        response = await self.inner.complete(request)
        if self.limit.tokens_per_minute:
            usage = response.usage
            actual = (
                usage.input_tokens + usage.output_tokens + usage.cache_read_tokens + usage.cache_write_tokens
            )
            _book.settle(self.limit, estimated, actual)
        return response

    async def ready(self, agent: str) -> None:
        await self.inner.ready(agent)

    async def aclose(self) -> None:
        await self.inner.aclose()


def rate_limited(provider: Provider) -> Provider:
    """`provider` under its model's `rate_limit`, or itself when the model has none."""
    limit = limit_of(provider.config)
    return provider if limit is None else RateLimitedProvider(provider, limit)
