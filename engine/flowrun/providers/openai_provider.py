"""The OpenAI Chat Completions provider (also every openai-compatible server: vLLM, Ollama,
DeepSeek, ... through `base_url`): our Messages in, a ModelResponse out.

Wire choices:
- `max_tokens`, not `max_completion_tokens`: the one openai-compatible servers all accept;
- usage: OpenAI counts cached prompt tokens inside `prompt_tokens`; we split them out
  (`input_tokens` = prompt - cached, `cache_read_tokens` = cached) so `Usage` means the same
  for every provider and cost is not counted twice;
- a `reasoning_content` field (DeepSeek and others) is kept as a thinking block for the log,
  and not sent back (those servers reject it in the history);
- streamed tool calls are joined by `index`: only a call's first fragment carries its id and
  name; malformed argument JSON becomes a `parse_error`, never an exception;
- no `api_key_env` but a `base_url`: a local server that needs no key; a placeholder is sent
  (never the real OPENAI_API_KEY to a third-party URL);
- the request goes through the SDK's documented `client.post` rather than
  `chat.completions.create`: the same request (path, headers, auth, retries off, timeout) and the
  same exceptions, without `create`'s walk of every message and tool schema against the SDK's
  TypedDicts (a third of the SDK's time per call, growing with the history). Our bodies are
  plain JSON that the walk leaves unchanged; a test checks exactly that on every kind of body we
  build. A non-streamed answer is read from its JSON body as the SDK reads it (content type,
  JSON or text) but without building the SDK's pydantic model of it; streamed chunks are the
  SDK's.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from functools import cache
from typing import Any, ClassVar

from flowrun.providers.answers import (
    WRONG_FORMAT,
    kind,
    parsed,
    part_text,
    require_answer,
    require_json_object,
    require_stream_end,
    shape_checked,
    unusable,
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
from flowrun.providers.structured import openai_response_format, with_instructions
from flowrun.types import Message, ModelResponse, ToolCall, ToolSpec, Usage, parse_arguments

DEFAULT_KEY_ENV = "OPENAI_API_KEY"
NO_KEY = "no-key-needed"


# ---------------------------------------------------------------- request


def _assistant_message(message: Message) -> dict[str, object]:
    out: dict[str, object] = {"role": "assistant", "content": message.content or None}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                # always valid JSON: servers parse the history; a malformed call was answered
                # with an error result that tells the model what went wrong
                "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
            }
            for call in message.tool_calls
        ]
    elif out["content"] is None:
        out["content"] = ""
    return out


def openai_message(message: Message) -> dict[str, Any]:
    if message.role == "assistant":
        return _assistant_message(message)
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content}
    return {"role": message.role, "content": message.content}


def openai_tools(tools: list[ToolSpec]) -> list[dict[str, object]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def build_params(config: ModelConfig, request: ModelRequest) -> dict[str, Any]:
    """The keyword arguments of `chat.completions.create` for one request."""
    if config.structured_output != "native":
        request = with_instructions(request)
    history = flatten_tool_history(request.messages) if config.tool_history == "text" else request.messages
    messages = [{"role": "system", "content": request.system}] if request.system else []
    messages += [openai_message(m) for m in history]
    params: dict[str, object] = {"model": config.model, "messages": messages, "max_tokens": config.max_tokens}
    if config.temperature is not None:
        params["temperature"] = config.temperature
    if request.tools:
        params["tools"] = openai_tools(request.tools)
    if request.output_schema is not None:
        params["response_format"] = openai_response_format(request.agent, request.output_schema)
    if config.stream:
        params["stream"] = True
        params["stream_options"] = {"include_usage": True}
    if body := config.request_body():
        params["extra_body"] = body
    if config.extra_headers:
        params["extra_headers"] = dict(config.extra_headers)
    return params


def send(client: Any, params: dict[str, Any]) -> Any:
    """`client.chat.completions.create(**params)` as `create` sends it, minus the transform of
    the parameters (see the module docstring): the HTTP response of a non-streamed answer (read
    by completion_body), or an AsyncStream of the SDK's chunks."""
    raw, completion, stream_cls = _answer_types()
    stream = bool(params.get("stream"))
    body = {k: v for k, v in params.items() if k not in ("extra_body", "extra_headers")}
    options: dict[str, object] = {"security": {"bearer_auth": True}}  # what `create` asks for
    if "extra_headers" in params:
        options["headers"] = params["extra_headers"]
    if "extra_body" in params:
        options["extra_json"] = params["extra_body"]
    return client.post(
        "/chat/completions",
        body=body,
        cast_to=completion if stream else raw,  # (a stream's cast_to must be its chunks' model)
        options=options,
        stream=stream,
        stream_cls=stream_cls,
    )


async def _body(response: Awaitable[Any]) -> Any:
    return completion_body(await response)


@cache
def _answer_types() -> tuple[Any, Any, Any]:
    """What the SDK hands back: the HTTP response of a non-streamed answer (its body is read by
    completion_body), or an AsyncStream of chunks; and the model a stream is cast to."""
    import httpx2
    from openai import AsyncStream
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    return httpx2.Response, ChatCompletion, AsyncStream[ChatCompletionChunk]


# ---------------------------------------------------------------- response


def _tool_call(call_id: str | None, name: str, raw: str | None) -> ToolCall:
    arguments, error = parse_arguments(raw)
    return ToolCall(
        id=call_id or f"call_{secrets.token_hex(6)}",  # some servers omit ids; results need one
        name=name,
        arguments=arguments,
        raw_arguments=raw if error else None,
        parse_error=error,
    )


def _get(value: object, name: str) -> Any:
    """A field of an answer's JSON object (a non-streamed answer is parsed here, from the body)
    or of the SDK's model of it (a streamed chunk); None when missing."""
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def _usage(raw: object) -> Usage:
    if raw is None:
        return Usage()
    cached = _get(_get(raw, "prompt_tokens_details"), "cached_tokens") or 0
    prompt = _get(raw, "prompt_tokens") or 0
    return Usage(
        input_tokens=max(prompt - cached, 0),
        output_tokens=_get(raw, "completion_tokens") or 0,
        cache_read_tokens=cached,
    )


def _reasoning(text: str | None) -> list[dict[str, Any]]:
    return [{"type": "reasoning", "text": text}] if text else []


def refused(refusal: str | None) -> str:
    """A refusal (structured output's `refusal` instead of content) is the answer's text, so the
    agent ends with it, or its output_schema check says what the model said, rather than an
    empty answer being retried."""
    return f"(the model refused) {refusal}" if refusal else ""


@shape_checked
def response_from_completion(completion: object) -> ModelResponse:
    """The answer from a Chat Completion: its JSON object (what `send` gives for a non-streamed
    call), or the SDK's model of one."""
    require_json_object(completion, "choices", foreign=("type", "message", "Anthropic's Messages"))
    choices = _get(completion, "choices")
    if not choices:
        raise unusable("the answer has no choices")
    usage = _usage(_get(completion, "usage"))
    choice = choices[0]
    message = _get(choice, "message")
    if not isinstance(message, dict) and not hasattr(message, "content"):  # null, a string ...
        what = "missing" if message is None else f"{kind(message)}, not an object"
        raise unusable(f"the answer is malformed (its first choice's message is {what})")
    calls = [
        _tool_call(_get(tc, "id"), _get(function, "name"), _get(function, "arguments"))
        for tc in _get(message, "tool_calls") or []
        if (function := _get(tc, "function")) is not None
    ]
    return ModelResponse(
        text=part_text(_get(message, "content")) or refused(_get(message, "refusal")),
        tool_calls=calls,
        usage=usage,
        stop_reason=_get(choice, "finish_reason"),
        thinking=_reasoning(_get(message, "reasoning_content")),
        model=_get(completion, "model") or "",
    )


def completion_body(response: Any) -> object:
    """A non-streamed answer's body as the SDK would have parsed it, without building its
    pydantic model (most of the SDK's time on an answer): the JSON value, or the text when a
    body that is not JSON says so in its content type (answers.py turns either into a
    retryable unusable answer)."""
    content_type = response.headers.get("content-type", "*").split(";")[0]
    if not content_type.endswith("json"):
        try:
            return response.json()
        except ValueError:
            return response.text
    return response.json()  # a JSONDecodeError is an unusable answer (answers.parsed)


class StreamAssembler:
    """Builds a ModelResponse from Chat Completions chunks: text and reasoning deltas joined,
    tool calls joined by `index`, usage from the final chunk."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage = Usage()
        self.stop_reason: str | None = None
        self.model = ""
        self.chunks = 0
        self.foreign = False  # an Anthropic event came: a misrouted request
        self.done = False  # the stream's [DONE] came (see _watch_done)
        self.answered = False  # a chunk carried a choice

    @shape_checked
    def feed(self, chunk: Any) -> None:
        self.chunks += 1
        self.foreign = self.foreign or getattr(chunk, "type", None) == "message_start"
        self.model = chunk.model or self.model
        if chunk.usage is not None:
            self.usage = _usage(chunk.usage)
        for choice in chunk.choices or []:
            if choice.index not in (0, None):
                continue
            self.stop_reason = choice.finish_reason or self.stop_reason
            self.answered = True
            delta = choice.delta
            if delta is None:
                continue
            if delta.content:
                self.text.append(delta.content)
            if refusal := getattr(delta, "refusal", None):
                self.refusal.append(refusal)
            if reasoning := getattr(delta, "reasoning_content", None):
                self.reasoning.append(reasoning)
            for fragment in delta.tool_calls or []:
                self._tool_fragment(fragment)

    def _tool_fragment(self, fragment: Any) -> None:
        index = fragment.index
        if index is None:  # servers that omit the index: a fragment with an id starts a call
            index = len(self.calls) if fragment.id or not self.calls else max(self.calls)
        call = self.calls.setdefault(index, {"id": None, "name": "", "arguments": []})
        if fragment.id:
            call["id"] = fragment.id
        function = fragment.function
        if function is not None:
            if function.name:
                call["name"] = function.name
            if function.arguments:
                call["arguments"].append(function.arguments)

    @shape_checked
    def response(self) -> ModelResponse:
        """The answer, once the stream reached a chunk with a finish_reason or its [DONE] (else
        a retryable unusable answer: the stream was cut)."""
        if self.foreign and self.stop_reason is None:
            raise unusable(f"the stream is in Anthropic's Messages format {WRONG_FORMAT}")
        ended = self.stop_reason is not None or (self.done and self.answered)
        require_stream_end(ended, self.chunks, "chunk (no finish_reason)")
        if self.stop_reason is None:  # [DONE] without a finish_reason: the end of the stream is the end
            self.stop_reason = "tool_calls" if self.calls else "stop"
        calls = [
            _tool_call(c["id"], c["name"], "".join(c["arguments"])) for _, c in sorted(self.calls.items())
        ]
        return ModelResponse(
            text="".join(self.text) or refused("".join(self.refusal)),
            tool_calls=calls,
            usage=self.usage,
            stop_reason=self.stop_reason,
            thinking=_reasoning("".join(self.reasoning)),
            model=self.model,
        )


def _watch_done(stream: object, assembler: StreamAssembler) -> None:
    """Note on `assembler` when the stream's `[DONE]` comes: some servers (llama.cpp's, vLLM's
    older ones, test servers) send no chunk with a finish_reason, and a stream that reached
    `[DONE]` ended as its server meant it to. The SDK keeps `[DONE]` to itself: its event
    iterator is wrapped (an SDK without one leaves the check to finish_reason alone)."""
    events = getattr(stream, "_iter_events", None)
    if events is None:
        return

    async def watched() -> AsyncIterator[object]:
        async for sse in events():
            if str(getattr(sse, "data", "")).startswith("[DONE]"):
                assembler.done = True
            yield sse

    setattr(stream, "_iter_events", watched)  # noqa: B010 - a private hook of the SDK, found above


# ---------------------------------------------------------------- provider


class OpenAIProvider(Provider):
    """Calls Chat Completions through the `openai` SDK (imported on first use)."""

    key_env: ClassVar[str | None] = DEFAULT_KEY_ENV
    sdk: ClassVar[str | None] = "openai"

    def __init__(self, config: ModelConfig) -> None:
        if not config.api_key_env and not config.auth_token_env and not config.base_url:
            config = replace(config, api_key_env=DEFAULT_KEY_ENV)  # the variable the SDK would read
        super().__init__(config)
        self._client: Any = None
        self._sdk: Any = None
        # the runtime may set this to report retries (retry number, delay in s, reason)
        self.on_retry: Callable[[int, float, str], None] | None = None

    def api_key(self, agent: str) -> str:
        """The key to send; MissingCredentials names the env var when it is unset. A preset's
        key may go by another name (`token_env`: glm's GLM_API_KEY), read when the first is unset."""
        config = self.config
        env = config.api_key_env or config.auth_token_env  # both are a Bearer token here
        if config.token_env and not config.secret(env) and config.secret(config.token_env):
            env = config.token_env
        if env is None or (config.options.get("key_optional") and not config.secret(env)):
            self.credential = "no key: a placeholder (the model names no key variable, or it is unset)"
            return NO_KEY  # a local server (ollama, vllm preset) that needs no key
        key = replace(config, api_key_env=env).require_key(agent)
        self.credential = f"${env} (as Authorization: Bearer)"
        return key

    async def _client_for(self, agent: str) -> Any:
        if self._client is None:
            key = self.api_key(agent)
            transport = http_transport()
            openai = await import_sdk("openai", *transport_modules(transport))
            self._sdk = openai
            config = self.config
            self._client = await shared_client(
                (
                    "openai",
                    secret_digest(key),
                    config.base_url,
                    config.timeout_s,
                    tuple(config.headers.items()),
                    sdk_environment("OPENAI_"),  # OPENAI_BASE_URL and the like
                    transport,
                ),
                lambda: openai.AsyncOpenAI(
                    api_key=key,
                    base_url=config.base_url,
                    timeout=config.timeout_s,
                    max_retries=0,  # we retry ourselves (retry.py)
                    default_headers=config.headers or None,
                    **http_client_options(openai, transport),
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
                response = response_from_completion(await parsed(lambda: _body(send(client, params))))
            return require_answer(response)

        return await call_sdk(
            call,
            self._sdk,
            config=self.config,
            agent=request.agent,
            on_retry=self.on_retry,
            credential=self.credential,
        )

    async def _stream(self, client: Any, params: dict[str, Any]) -> ModelResponse:
        assembler = StreamAssembler()
        stream = await send(client, params)
        _watch_done(stream, assembler)
        async with stream:
            async for chunk in stream:
                assembler.feed(chunk)
        return assembler.response()

    async def ready(self, agent: str) -> None:
        await self._client_for(agent)

    async def aclose(self) -> None:
        self._client = None  # shared by the runs of this event loop; closed when the loop shuts down


class OpenAICompatibleProvider(OpenAIProvider):
    """Any server that speaks Chat Completions, at the model's `base_url`. Its resolved models
    name the `openai` provider: this type only says what such a model needs."""

    key_env = None
    requires: ClassVar[dict[str, str]] = {
        "base_url": "set base_url (e.g. http://localhost:8000/v1) or use a `preset`"
    }
