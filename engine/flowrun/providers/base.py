"""The one narrow interface every provider implements, and the resolved model settings it gets."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from flowrun.errors import MissingCredentials
from flowrun.types import Message, ModelResponse, ToolSpec


@dataclass(slots=True)
class ModelConfig:
    """A model as the workflow resolved it: provider type, model id and call settings.
    Secrets are never here: only the *names* of env vars that hold them. Every setting has its
    default in one place, the `models` manifest spec (manifest/specs.py), which builds this."""

    name: str  # the workflow's name for it, or "provider:model"
    provider: str  # a key of providers.registry.PROVIDERS
    model: str
    base_url: str | None
    api_key_env: str | None
    auth_token_env: str | None
    max_tokens: int
    temperature: float | None
    thinking: bool
    thinking_budget: int
    stream: bool
    timeout_s: float
    max_retries: int
    context_window: int
    tool_calling: str  # native | react
    structured_output: str = "native"  # native | instructions (an `output_schema` in the system prompt)
    headers: dict[str, str] = field(default_factory=dict)
    price_input: float | None = None  # USD per million tokens; None: not priced
    price_output: float | None = None
    price_cache_read: float | None = None
    price_cache_write: float | None = None
    options: dict[str, Any] = field(default_factory=dict)  # provider-specific extras (key_optional, script)
    fallback: list[str] = field(default_factory=list)  # model references tried after this one fails
    cooldown_s: float = 60.0  # after a failure, how long calls skip this model
    extra_body: dict[str, Any] = field(default_factory=dict)  # merged into every request's JSON body
    extra_headers: dict[str, str] = field(default_factory=dict)  # sent with every request
    thinking_off: dict[str, Any] = field(default_factory=dict)  # extra_body when thinking is off
    send_thinking_off: bool = False  # thinking was switched off explicitly (model or --no-thinking)
    thinking_on: dict[str, Any] = field(default_factory=dict)  # extra_body when thinking is on
    send_thinking_on: bool = False  # thinking was switched on explicitly (`thinking: true`)
    tool_history: str = "native"  # native | text (past tool calls as plain text)
    token_env: str | None = None  # a bearer token to fall back on when the key variable is unset
    requests_per_minute: int | None = None  # the model's `rate_limit` (runtime/models/rate_limits.py)
    tokens_per_minute: int | None = None

    def request_body(self) -> dict[str, object]:
        """The extra JSON body of every request: `extra_body`, plus `thinking_off` when thinking
        is switched off (explicitly, by the model or --no-thinking), or `thinking_on` when the
        model switches it on."""
        if self.send_thinking_off and not self.thinking:
            return _merged(self.extra_body, self.thinking_off)
        if self.send_thinking_on and self.thinking:
            return _merged(self.extra_body, self.thinking_on)
        return dict(self.extra_body)

    def secret(self, env_name: str | None) -> str | None:
        """The value of an env var the config names, or None when unset or empty."""
        if not env_name:
            return None
        value = os.environ.get(env_name, "")
        return value or None

    def require_key(self, agent: str) -> str:
        key = self.secret(self.api_key_env)
        if key is None:
            raise MissingCredentials(
                f"agent '{agent}' uses model '{self.name}' ({self.provider}:{self.model}) "
                f"but the env var {self.api_key_env or '(none named)'} is not set",
                f"export {self.api_key_env or 'THE_KEY_VAR'}=..., "
                "or run with --dry-run to check the wiring offline",
                agent=agent,
                model=self.name,
            )
        return key


def _merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, object]:
    """`extra` over `base`, mappings merged key by key."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


@dataclass(slots=True)
class ModelRequest:
    agent: str  # the agent's name, for error messages and scripted providers
    system: str
    messages: list[Message]
    tools: list[ToolSpec]
    agent_id: str = ""
    # index of this call among the agent instance's calls (survives history resets); -1 unknown
    step: int = -1
    # offline providers only: what the runtime knows that helps them (e.g. the declared output file)
    hints: dict[str, Any] = field(default_factory=dict)
    # the JSON Schema the final answer must match (the agent's `output_schema`), or None
    output_schema: dict[str, Any] | None = None


def call_index(request: ModelRequest) -> int:
    """Which call of its agent this is: the runtime's count, else the assistant turns so far."""
    if request.step >= 0:
        return request.step
    return sum(1 for m in request.messages if m.role == "assistant")


RetryHook = Callable[[int, float, str], None]  # (retry number, delay in s, reason)


class Provider(ABC):
    """Turns a ModelRequest into a ModelResponse. Wire formats are converted only inside the
    provider's module; retries on 429/5xx/timeouts happen inside `complete`, and each one is
    reported to `on_retry` when the runtime set it.

    Its manifest side are the class attributes below: what a model of this provider type needs
    (`validate` and the credential check ask them)."""

    # the variable a model reads its key from when its manifest names none
    key_env: ClassVar[str | None] = None
    # a bearer token used when the model names no key and `key_env` is unset
    token_env: ClassVar[str | None] = None
    needs_key: ClassVar[bool] = True  # False: it never calls a service (test, scripted)
    # model keys a manifest must set for this provider type -> the hint when one is missing
    requires: ClassVar[dict[str, str]] = {}
    # the SDK module its calls import (the first time, in a thread; see clients.import_sdk)
    sdk: ClassVar[str | None] = None

    @classmethod
    def shorthand(cls, model: str) -> dict[str, object] | None:
        """The model keys `TYPE:MODEL` (`--model`, an agent's `model:`) stands for, beside
        `provider`; None: a model id is not enough for this provider type (it `requires` more)."""
        return None if cls.requires else {"model": model}

    def __init__(self, config: ModelConfig) -> None:
        self.config = config
        self.on_retry: RetryHook | None = None
        # what the requests authenticate with, for a 401's hint: "$VAR (as x-api-key)", never a value
        self.credential: str | None = None

    @abstractmethod
    async def complete(self, request: ModelRequest) -> ModelResponse: ...

    async def ready(self, agent: str) -> None:  # noqa: B027 - optional hook
        """Get ready to send (import the SDK, make the client), so a rate-limited call goes
        out right when its turn comes. MissingCredentials, like `complete`, when a key is unset."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook, most providers hold nothing
        """Release connections. Called once when the run ends."""
