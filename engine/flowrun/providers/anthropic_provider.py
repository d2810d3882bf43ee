"""The Anthropic Messages API provider: our Messages in, a ModelResponse out.

Wire choices:
- prompt caching: `cache_control: ephemeral` on the system prompt, the last tool definition
  and the last block of the final user turn (three of the four breakpoints the API allows), so
  each step of an agent loop re-reads the conversation so far from the cache;
- auth: `api_key_env` is sent as `x-api-key` (this SDK version would send it as a Bearer token,
  which Anthropic-compatible proxies that check `x-api-key` reject); `auth_token_env` is sent as
  `Authorization: Bearer`; the unused one is None, never "" (the SDK tests `is None`);
- no `temperature`: API version 2026-10-21, which SDK 2.x sends, rejects sampling parameters
  (the SDK no longer has them), so a configured temperature is not sent to Anthropic;
- thinking blocks are sent back verbatim before the tool_use blocks they preceded (the API
  requires it) and only when thinking is on, since proxies without thinking reject them;
- streaming reads the raw events and joins `input_json_delta` fragments per block index itself,
  so a tool's input is never silently empty and malformed JSON becomes a `parse_error`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from flowrun.errors import MissingCredentials
from flowrun.providers.answers import (
    parsed,
    require_answer,
    require_json_object,
    require_stream_end,
    shape_checked,
)
from flowrun.providers.base import ModelConfig, ModelRequest, Provider
from flowrun.providers.clients import (
    http_client_options,
    http_transport,
    import_sdk,
    sdk_environment,
    secret_digest,
    shared_client,
    transport_modules,
)
from flowrun.providers.history_text import flatten_tool_history
from flowrun.providers.retry import call_sdk
from flowrun.providers.structured import (
    answer_from_final_tool,
    final_tool,
    final_tool_name,
    with_instructions,
)
from flowrun.types import Message, ModelResponse, ToolCall, ToolSpec, Usage, parse_arguments

DEFAULT_KEY_ENV = "ANTHROPIC_API_KEY"
EPHEMERAL = {"type": "ephemeral"}
THINKING_TYPES = ("thinking", "redacted_thinking")


# ---------------------------------------------------------------- request


def _assistant_blocks(message: Message, keep_thinking: bool) -> list[dict[str, object]]:
    blocks: list[dict[str, object]] = []
    if keep_thinking:
        blocks.extend(dict(b) for b in message.thinking if b.get("type") in THINKING_TYPES)
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        for call in message.tool_calls
    )
    return blocks


def _tool_result_block(message: Message) -> dict[str, object]:
    block: dict[str, object] = {"type": "tool_result", "tool_use_id": message.tool_call_id or ""}
    if message.content:
        block["content"] = message.content
    if message.is_error:
        block["is_error"] = True
    return block


def _turn(message: Message, keep_thinking: bool) -> tuple[str, list[dict[str, Any]]]:
    if message.role == "assistant":
        return "assistant", _assistant_blocks(message, keep_thinking)
    if message.role == "tool":
        return "user", [_tool_result_block(message)]
    return "user", [{"type": "text", "text": message.content}] if message.content else []


def anthropic_messages(
    messages: list[Message], *, keep_thinking: bool
) -> tuple[list[str], list[dict[str, Any]]]:
    """(extra system texts, API messages). Consecutive turns of one role are merged (so all
    tool results of a step form one user turn), with tool_result blocks first as the API wants;
    `system` messages inside the conversation are returned to extend the system prompt."""
    extra_system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            if message.content:
                extra_system.append(message.content)
            continue
        role, blocks = _turn(message, keep_thinking)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        if turn["role"] == "user":
            turn["content"].sort(key=lambda b: b["type"] != "tool_result")
    return extra_system, turns


def anthropic_tools(tools: list[ToolSpec]) -> list[dict[str, object]]:
    out: list[dict[str, object]] = [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
    ]
    if out:
        out[-1]["cache_control"] = dict(EPHEMERAL)
    return out


def build_params(config: ModelConfig, request: ModelRequest) -> dict[str, Any]:
    """The keyword arguments of `messages.create` for one request."""
    if config.structured_output != "native":
        request = with_instructions(request)
    history = flatten_tool_history(request.messages) if config.tool_history == "text" else request.messages
    extra_system, messages = anthropic_messages(history, keep_thinking=config.thinking)
    if messages and messages[-1]["role"] == "user":
        messages[-1]["content"][-1]["cache_control"] = dict(EPHEMERAL)
    system = (
        [{"type": "text", "text": request.system, "cache_control": dict(EPHEMERAL)}] if request.system else []
    )
    system += [{"type": "text", "text": text} for text in extra_system]
    params: dict[str, object] = {"model": config.model, "max_tokens": config.max_tokens, "messages": messages}
    if system:
        params["system"] = system
    tools = list(request.tools)
    if request.output_schema is not None:
        tools.append(final_tool(request.tools, request.output_schema))
        # forced tool use is refused with extended thinking: then the model may also answer in text
        params["tool_choice"] = {"type": "auto" if config.thinking else "any"}
    if tools:
        params["tools"] = anthropic_tools(tools)
    if config.thinking:
        # the budget must be >= 1024 and below max_tokens
        budget = max(config.thinking_budget, 1024)
        params["thinking"] = {"type": "enabled", "budget_tokens": budget}
        params["max_tokens"] = max(config.max_tokens, budget + 1024)
    if body := config.request_body():
        params["extra_body"] = body
    if config.extra_headers:
        params["extra_headers"] = dict(config.extra_headers)
    return params


# ---------------------------------------------------------------- response


def _tool_call(block: dict[str, Any]) -> ToolCall:
    raw = block.get("input")
    arguments, error = (
        parse_arguments(raw) if isinstance(raw, dict | str | None) else ({}, "input is not an object")
    )
    return ToolCall(
        id=block.get("id", ""),
        name=block.get("name", ""),
        arguments=arguments,
        raw_arguments=None if error is None else str(raw),
        parse_error=error,
    )


def _thinking_block(block: Mapping[str, object]) -> dict[str, object]:
    if block["type"] == "redacted_thinking":
        return {"type": "redacted_thinking", "data": block.get("data", "")}
    return {
        "type": "thinking",
        "thinking": block.get("thinking", ""),
        "signature": block.get("signature", ""),
    }


def response_from_blocks(
    blocks: list[dict[str, Any]], usage: Usage, stop_reason: str | None, model: str
) -> ModelResponse:
    """A ModelResponse from plain content block dicts (both the whole-message and the
    streamed path end here)."""
    return ModelResponse(
        text="".join(b.get("text", "") for b in blocks if b["type"] == "text"),
        tool_calls=[_tool_call(b) for b in blocks if b["type"] == "tool_use"],
        usage=usage,
        stop_reason=stop_reason,
        thinking=[_thinking_block(b) for b in blocks if b["type"] in THINKING_TYPES],
        model=model,
    )


def _usage(raw: object, into: Usage | None = None) -> Usage:
    """Fold an API usage object into `into`; fields the object lacks (None) stay as they were
    (message_delta repeats only some of them, cumulatively)."""
    usage = into or Usage()
    for ours, theirs in (
        ("input_tokens", "input_tokens"),
        ("output_tokens", "output_tokens"),
        ("cache_read_tokens", "cache_read_input_tokens"),
        ("cache_write_tokens", "cache_creation_input_tokens"),
    ):
        value = getattr(raw, theirs, None)
        if value is not None:
            setattr(usage, ours, int(value))
    return usage


_BLOCK_FIELDS = ("type", "text", "thinking", "signature", "data", "id", "name", "input")


def _block_dict(block: object) -> dict[str, object]:
    """A content block's fields as a plain dict (attribute reads: `model_dump` would warn
    about a malformed tool input, which we want to keep as it came)."""
    return {name: value for name in _BLOCK_FIELDS if (value := getattr(block, name, None)) is not None}


@shape_checked
def response_from_message(message: Any) -> ModelResponse:
    require_json_object(message, "content", foreign=("choices", "", "OpenAI's Chat Completions"))
    blocks = [_block_dict(block) for block in message.content or []]
    return response_from_blocks(blocks, _usage(message.usage), message.stop_reason, message.model)


class StreamAssembler:
    """Builds a ModelResponse from raw Messages stream events, joining each content block's
    deltas by block index (text, thinking + signature, tool input JSON fragments)."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.json_parts: dict[int, list[str]] = {}
        self.usage = Usage()
        self.stop_reason: str | None = None
        self.model = ""
        self.events = 0
        self.stopped = False  # message_stop seen

    @shape_checked
    def feed(self, event: object) -> None:
        self.events += 1
        handler = getattr(self, f"_on_{getattr(event, 'type', '')}", None)
        if handler is not None:
            handler(event)

    def _on_message_start(self, event: Any) -> None:
        self.model = event.message.model
        _usage(event.message.usage, self.usage)

    def _on_content_block_start(self, event: Any) -> None:
        self.blocks[event.index] = _block_dict(event.content_block)

    def _on_content_block_delta(self, event: Any) -> None:
        block = self.blocks.setdefault(event.index, {"type": "text", "text": ""})
        delta = event.delta
        kind = getattr(delta, "type", "")
        if kind == "text_delta":
            block["text"] = block.get("text", "") + delta.text
        elif kind == "thinking_delta":
            block["thinking"] = block.get("thinking", "") + delta.thinking
        elif kind == "signature_delta":
            block["signature"] = block.get("signature", "") + delta.signature
        elif kind == "input_json_delta":
            self.json_parts.setdefault(event.index, []).append(delta.partial_json)

    def _on_message_delta(self, event: Any) -> None:
        self.stop_reason = event.delta.stop_reason or self.stop_reason
        _usage(event.usage, self.usage)

    def _on_message_stop(self, event: object) -> None:
        self.stopped = True

    @shape_checked
    def response(self) -> ModelResponse:
        """The answer, once the stream reached message_stop (else a retryable unusable
        answer: the stream was cut)."""
        require_stream_end(self.stopped, self.events, "message_stop event")
        blocks = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            if block["type"] == "tool_use" and index in self.json_parts:
                block["input"] = "".join(self.json_parts[index])
            blocks.append(block)
        return response_from_blocks(blocks, self.usage, self.stop_reason, self.model)


# ---------------------------------------------------------------- provider


class AnthropicProvider(Provider):
    """Calls the Messages API through the `anthropic` SDK (imported on first use)."""

    key_env = "ANTHROPIC_API_KEY"
    token_env = "ANTHROPIC_AUTH_TOKEN"
    sdk = "anthropic"

    def __init__(self, config: ModelConfig) -> None:
        if not config.api_key_env and not config.auth_token_env:
            config = replace(config, api_key_env=DEFAULT_KEY_ENV)  # the variable the SDK would read
        super().__init__(config)
        self._client: Any = None
        self._sdk: Any = None
        # the runtime may set this to report retries (retry number, delay in s, reason)
        self.on_retry: Callable[[int, float, str], None] | None = None

    def credentials(self, agent: str) -> tuple[str | None, str | None]:
        """(api_key, auth_token), exactly one set; MissingCredentials names the env var. A model
        that names no variable falls back on ANTHROPIC_AUTH_TOKEN when ANTHROPIC_API_KEY is unset."""
        config = self.config
        bearer = " (as Authorization: Bearer)"
        if config.token_env and not config.secret(config.api_key_env) and config.secret(config.token_env):
            self.credential = f"${config.token_env}{bearer}, since ${config.api_key_env} is unset"
            return None, config.secret(config.token_env)
        if config.auth_token_env:
            token = config.secret(config.auth_token_env)
            if token is None:
                raise MissingCredentials(
                    f"agent '{agent}' uses model '{config.name}' (anthropic:{config.model}) "
                    f"but the env var {config.auth_token_env} is not set",
                    f"export {config.auth_token_env}=..., or run with --dry-run to check the wiring offline",
                    agent=agent,
                    model=config.name,
                )
            self.credential = f"${config.auth_token_env}{bearer}"
            return None, token
        key = config.require_key(agent)
        self.credential = f"${config.api_key_env} (as x-api-key)"
        return key, None

    async def _client_for(self, agent: str) -> Any:
        if self._client is None:
            api_key, auth_token = self.credentials(agent)
            transport = http_transport()
            anthropic = await import_sdk("anthropic", *transport_modules(transport))
            headers: dict[str, object] = {}
            if api_key is not None:
                headers = {"x-api-key": api_key, "Authorization": anthropic.omit}
            self._sdk = anthropic
            config = self.config
            key = (
                "anthropic",
                secret_digest(api_key),
                secret_digest(auth_token),
                sdk_environment("ANTHROPIC_"),
            )
            self._client = await shared_client(
                (*key, config.base_url, config.timeout_s, tuple(config.headers.items()), transport),
                lambda: anthropic.AsyncAnthropic(
                    api_key=api_key,
                    auth_token=auth_token,
                    base_url=config.base_url,
                    timeout=config.timeout_s,
                    max_retries=0,  # we retry ourselves (retry.py)
                    default_headers={**headers, **config.headers},
                    **http_client_options(anthropic, transport),
                ),
            )
        return self._client

    async def complete(self, request: ModelRequest) -> ModelResponse:
        client = await self._client_for(request.agent)
        params = build_params(self.config, request)

        async def call() -> ModelResponse:
            if self.config.stream:
                response = await parsed(lambda: self._stream(client, params))
            else:
                response = response_from_message(await parsed(lambda: client.messages.create(**params)))
            return require_answer(response)

        response = await call_sdk(
            call,
            self._sdk,
            config=self.config,
            agent=request.agent,
            on_retry=self.on_retry,
            credential=self.credential,
        )
        if request.output_schema is not None and self.config.structured_output == "native":
            response = answer_from_final_tool(response, final_tool_name(request.tools))
        return response

    async def _stream(self, client: Any, params: dict[str, Any]) -> ModelResponse:
        assembler = StreamAssembler()
        stream = await client.messages.create(**params, stream=True)
        async with stream:
            async for event in stream:
                assembler.feed(event)
        return assembler.response()

    async def ready(self, agent: str) -> None:
        await self._client_for(agent)

    async def aclose(self) -> None:
        self._client = None  # shared by the runs of this event loop; closed when the loop shuts down
