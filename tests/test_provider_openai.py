"""OpenAIProvider through the REAL `openai` SDK over loopback HTTP to the wire server."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable

import pytest
from model_configs import provider_config
from wire_server import FailFirst, Reply, Script, ToolCallSpec, WireServer, always

from flowrun.errors import MissingCredentials, ProviderError
from flowrun.providers.base import ModelRequest
from flowrun.providers.openai_provider import OpenAIProvider
from flowrun.types import Message, ToolCall, ToolSpec

SYSTEM = "You are the researcher. Find facts."
TOOLS = [
    ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ToolSpec("list_dir", "List a folder.", {"type": "object", "properties": {"path": {"type": "string"}}}),
]
THREE_CALLS = [
    ToolCallSpec("read_file", {"path": "a.txt"}),
    ToolCallSpec("read_file", {"path": "b.txt"}),
    ToolCallSpec("list_dir", {"path": "."}),
]


@pytest.fixture(autouse=True, params=["httpx", "aiohttp"])
def _transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test on both HTTP clients the SDK clients may get (providers/clients.py)."""
    monkeypatch.setenv("FLOWRUN_HTTP", request.param)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_OPENAI_KEY", "sk-openai-test")
    monkeypatch.setenv("FLOWRUN_RETRY_BASE_S", "0.001")
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_CUSTOM_HEADERS",
        "OPENAI_ORG_ID",
        "OPENAI_PROJECT_ID",
    ):
        monkeypatch.delenv(name, raising=False)


ProviderFactory = Callable[..., OpenAIProvider]


@pytest.fixture
async def make_provider() -> AsyncIterator[ProviderFactory]:
    made: list[OpenAIProvider] = []

    def make(server: WireServer | None = None, **settings: object) -> OpenAIProvider:
        fields: dict[str, object] = {
            "name": "fast",
            "provider": "openai",
            "model": "gpt-test-1",
            "base_url": server.openai_base_url if server else None,
            "api_key_env": "TEST_OPENAI_KEY",
            **settings,
        }
        provider = OpenAIProvider(provider_config(**fields))  # type: ignore[arg-type]
        made.append(provider)
        return provider

    yield make
    for provider in made:
        await provider.aclose()


def request(*messages: Message, tools: list[ToolSpec] | None = None) -> ModelRequest:
    return ModelRequest(
        agent="researcher",
        system=SYSTEM,
        messages=list(messages) or [Message("user", "What is up?")],
        tools=TOOLS if tools is None else tools,
    )


@pytest.mark.parametrize("stream", [False, True])
async def test_text_reply_and_usage(make_provider: ProviderFactory, stream: bool) -> None:
    reply = Reply(text="All quiet.", usage=(120, 7), cache=(900, 0))
    with WireServer(Script({"researcher": [reply]})) as server:
        response = await make_provider(server, stream=stream, temperature=0.2).complete(request())
        (seen,) = server.requests
    assert response.text == "All quiet." and response.tool_calls == []
    assert response.stop_reason == "stop" and response.model == "gpt-test-1"
    # prompt_tokens 1020 includes the 900 cached ones: split so Usage means the same everywhere
    assert (response.usage.input_tokens, response.usage.cache_read_tokens) == (120, 900)
    assert response.usage.output_tokens == 7 and response.usage.cache_write_tokens == 0
    body = seen.body
    assert seen.api == "openai" and seen.stream is stream
    assert body["max_tokens"] == 4096 and "max_completion_tokens" not in body
    assert body["temperature"] == 0.2
    assert body["messages"][0] == {"role": "system", "content": SYSTEM}
    if stream:
        assert body["stream_options"] == {"include_usage": True}
    assert body["tools"][0] == {
        "type": "function",
        "function": {"name": "read_file", "description": "Read a file.", "parameters": TOOLS[0].parameters},
    }


async def test_no_temperature_configured_sends_none(make_provider: ProviderFactory) -> None:
    with WireServer(Script({"researcher": []})) as server:
        await make_provider(server).complete(request(tools=[]))
        (seen,) = server.requests
    assert "temperature" not in seen.body and "tools" not in seen.body


@pytest.mark.parametrize("stream", [False, True])
async def test_three_parallel_tool_calls_and_results_sent_back(
    make_provider: ProviderFactory, stream: bool
) -> None:
    script = Script({"researcher": [Reply(tool_calls=THREE_CALLS), Reply(text="Both read.")]})
    with WireServer(script) as server:
        provider = make_provider(server, stream=stream)
        first = await provider.complete(request())
        assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
            ("call_0_0", "read_file", {"path": "a.txt"}),
            ("call_0_1", "read_file", {"path": "b.txt"}),
            ("call_0_2", "list_dir", {"path": "."}),
        ]
        assert first.stop_reason == "tool_calls" and first.text == ""
        history = [
            Message("user", "What is up?"),
            Message("assistant", first.text, tool_calls=first.tool_calls),
            Message("tool", "text of a", tool_call_id=first.tool_calls[0].id),
            Message("tool", "[error NOT_FOUND] no b.txt", tool_call_id=first.tool_calls[1].id, is_error=True),
            Message("tool", "a.txt b.txt", tool_call_id=first.tool_calls[2].id),
        ]
        second = await provider.complete(request(*history))
        seen = server.requests[1]
    assert second.text == "Both read."
    assert seen.tool_results == [
        ("call_0_0", "text of a", False),
        ("call_0_1", "[error NOT_FOUND] no b.txt", False),
        ("call_0_2", "a.txt b.txt", False),
    ]
    assistant = seen.messages[2]
    assert assistant["role"] == "assistant" and assistant["content"] is None
    assert [(c["id"], json.loads(c["function"]["arguments"])) for c in assistant["tool_calls"]] == [
        ("call_0_0", {"path": "a.txt"}),
        ("call_0_1", {"path": "b.txt"}),
        ("call_0_2", {"path": "."}),
    ]
    assert [m["role"] for m in seen.messages] == ["system", "user", "assistant", "tool", "tool", "tool"]


@pytest.mark.parametrize("stream", [False, True])
async def test_malformed_arguments_become_parse_error(make_provider: ProviderFactory, stream: bool) -> None:
    broken = '{"path": "a.txt", "start'
    calls = [ToolCallSpec("read_file", broken), ToolCallSpec("list_dir", "[1, 2]"), THREE_CALLS[0]]
    with WireServer(Script({"researcher": [Reply(tool_calls=calls)]})) as server:
        response = await make_provider(server, stream=stream).complete(request())
    bad, not_object, good = response.tool_calls
    assert bad.arguments == {} and bad.raw_arguments == broken and "not valid JSON" in (bad.parse_error or "")
    assert not_object.parse_error is not None and "object" in not_object.parse_error
    assert good.arguments == {"path": "a.txt"} and good.parse_error is None


async def test_malformed_call_is_sent_back_as_valid_json(make_provider: ProviderFactory) -> None:
    bad = ToolCall("call_9", "read_file", {}, raw_arguments='{"pa', parse_error="not valid JSON")
    history = [
        Message("user", "q"),
        Message("assistant", "", tool_calls=[bad]),
        Message(
            "tool", "[error INVALID_PARAM] arguments are not valid JSON", tool_call_id="call_9", is_error=True
        ),
    ]
    with WireServer(Script({"researcher": []})) as server:
        await make_provider(server).complete(request(*history))
        (seen,) = server.requests
    assert seen.messages[2]["tool_calls"][0]["function"]["arguments"] == "{}"


@pytest.mark.parametrize("stream", [False, True])
async def test_reasoning_content_kept_but_not_sent_back(make_provider: ProviderFactory, stream: bool) -> None:
    script = Script({"researcher": [Reply(text="42", thinking="six times seven"), Reply(text="ok")]})
    with WireServer(script) as server:
        provider = make_provider(server, stream=stream)
        first = await provider.complete(request())
        assert first.thinking == [{"type": "reasoning", "text": "six times seven"}]
        history = [
            Message("user", "q"),
            Message("assistant", "42", thinking=first.thinking),
            Message("user", "and?"),
        ]
        await provider.complete(request(*history))
        seen = server.requests[1]
    assert seen.messages[2] == {"role": "assistant", "content": "42"}


async def test_api_key_is_a_bearer_token_plus_custom_headers(make_provider: ProviderFactory) -> None:
    with WireServer(Script({"researcher": []})) as server:
        await make_provider(server, headers={"x-team": "blue"}).complete(request())
        (seen,) = server.requests
    assert seen.headers["authorization"] == "Bearer sk-openai-test"
    assert seen.headers["x-team"] == "blue"


async def test_local_server_without_key_env_gets_a_placeholder(
    make_provider: ProviderFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-secret")  # must not leak to a third-party base_url
    with WireServer(Script({"researcher": []})) as server:
        await make_provider(server, api_key_env=None).complete(request())
        (seen,) = server.requests
    assert "sk-real-secret" not in seen.headers["authorization"]


async def test_missing_key_env_names_the_variable(make_provider: ProviderFactory) -> None:
    with WireServer(Script({"researcher": []})) as server:
        provider = make_provider(server, api_key_env="NOT_SET_OPENAI_KEY")
        with pytest.raises(MissingCredentials) as info:
            await provider.complete(request())
        assert server.requests == []
    assert "NOT_SET_OPENAI_KEY" in str(info.value) and "researcher" in str(info.value)


async def test_no_env_and_no_base_url_requires_openai_api_key(make_provider: ProviderFactory) -> None:
    with pytest.raises(MissingCredentials, match="OPENAI_API_KEY"):
        await make_provider(None, api_key_env=None).complete(request())


@pytest.mark.parametrize("stream", [False, True])
async def test_429_is_retried_honouring_retry_after(
    make_provider: ProviderFactory, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    monkeypatch.setenv("FLOWRUN_RETRY_BASE_S", "30")  # only the server's retry-after keeps this fast
    retries: list[tuple[int, float, str]] = []
    then = Script({"researcher": [Reply(text="fine")]})
    with WireServer(FailFirst(2, 429, {"retry-after": "0.05"}, then=then)) as server:
        provider = make_provider(server, stream=stream)
        provider.on_retry = lambda n, delay, why: retries.append((n, delay, why))
        response = await asyncio.wait_for(provider.complete(request()), timeout=10)
        assert len(server.requests) == 3
    assert response.text == "fine"
    assert [(n, d) for n, d, _ in retries] == [(1, 0.05), (2, 0.05)]
    assert all(why.startswith("HTTP 429") for _, _, why in retries)


async def test_500_every_time_gives_up_after_max_retries(make_provider: ProviderFactory) -> None:
    with WireServer(always(500)) as server:
        with pytest.raises(ProviderError) as info:
            await make_provider(server, max_retries=3).complete(request())
        assert len(server.requests) == 4
    message = str(info.value)
    assert "researcher" in message and "fast" in message and "gpt-test-1" in message
    assert "HTTP 500" in message and "after 3 retries" in message and "scripted 500" in message
    assert info.value.retryable


@pytest.mark.parametrize(
    ("status", "hint"), [(401, "$TEST_OPENAI_KEY"), (403, "$TEST_OPENAI_KEY"), (404, "model id")]
)
async def test_client_errors_fail_at_once_with_a_hint(
    make_provider: ProviderFactory, status: int, hint: str
) -> None:
    with WireServer(always(status)) as server:
        with pytest.raises(ProviderError) as info:
            await make_provider(server).complete(request())
        assert len(server.requests) == 1
    assert f"HTTP {status}" in str(info.value) and hint in str(info.value)
    assert not info.value.retryable


async def test_400_is_not_retried_and_shows_the_server_message(make_provider: ProviderFactory) -> None:
    bad = Reply(status=400, error_body={"error": {"message": "context length exceeded", "type": "invalid"}})
    with WireServer(Script({"researcher": [bad]})) as server:
        with pytest.raises(ProviderError, match="context length exceeded"):
            await make_provider(server).complete(request())
        assert len(server.requests) == 1


def test_client_is_shared_on_its_loop_and_closed_with_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Calls and providers of the same settings on one event loop share one client (and its
    connection); the client is closed when the loop shuts down, not when a run ends."""
    monkeypatch.setenv("TEST_OPENAI_KEY", "sk-test")
    clients = []

    async def two_runs(server: WireServer) -> None:
        for _ in range(2):
            provider = OpenAIProvider(
                provider_config(
                    name="fast",
                    provider="openai",
                    model="m",
                    base_url=server.openai_base_url,
                    api_key_env="TEST_OPENAI_KEY",
                )
            )
            await provider.complete(request())
            await provider.complete(
                request(Message("user", "q"), Message("assistant", "a"), Message("user", "q2"))
            )
            clients.append(provider._client)
            await provider.aclose()
            assert provider._client is None and not clients[-1].is_closed()

    with WireServer(Script({"researcher": [Reply(text="a"), Reply(text="b")]})) as server:
        asyncio.run(two_runs(server))
        assert clients[0] is clients[1] and clients[0].is_closed()
        assert server.connections_opened == 1
        asyncio.run(two_runs(server))  # a new loop: a new client
        assert clients[2] is not clients[0] and clients[2].is_closed()


@pytest.mark.parametrize("stream", [False, True])
async def test_sequential_calls_keep_one_connection_alive(
    make_provider: ProviderFactory, stream: bool
) -> None:
    replies = [Reply(text=str(i), tool_calls=THREE_CALLS) for i in range(4)]
    with WireServer(Script({"researcher": replies})) as server:
        provider = make_provider(server, stream=stream)
        history = [Message("user", "go")]
        for i in range(4):
            response = await provider.complete(request(*history))
            assert response.text == str(i)
            history.append(Message("assistant", response.text, tool_calls=response.tool_calls))
            history += [Message("tool", "ok", tool_call_id=c.id) for c in response.tool_calls]
        assert server.connections_opened == 1


def test_importing_the_module_does_not_import_the_sdk() -> None:
    code = "import sys, flowrun.providers.openai_provider; print('openai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
HISTORY = [
    Message("user", "Read both."),
    Message("assistant", "", tool_calls=[ToolCall("c1", "read_file", {"path": "a.txt"})]),
    Message("tool", "text of a", tool_call_id="c1"),
    Message("tool", "[error NOT_FOUND] no b.txt", tool_call_id="c2", is_error=True),
    Message("assistant", "Done: caf\u00e9 \U0001f600"),
    Message("user", "And now?"),
]


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"stream": True, "temperature": 0.3},
        {"tool_history": "text"},
        {"structured_output": "instructions"},
        {"extra_body": {"top_k": 3}, "extra_headers": {"X-Team": "a"}},
    ],
)
@pytest.mark.parametrize("schema", [None, SCHEMA])
async def test_request_bodies_need_no_sdk_transform(settings: dict[str, object], schema: object) -> None:
    """The provider sends its bodies with `client.post` instead of `chat.completions.create`,
    which first walks the parameters through the SDK's TypedDicts (aliases, dates, files). That
    walk must leave every body we build exactly as it is, or skipping it would change the wire."""
    from openai._utils._transform import async_maybe_transform
    from openai.types.chat import completion_create_params

    from flowrun.providers.openai_provider import build_params

    config = provider_config(**settings)  # type: ignore[arg-type]
    params = build_params(
        config,
        ModelRequest(
            "researcher",
            SYSTEM,
            list(HISTORY),
            TOOLS,
            output_schema=schema,  # type: ignore[arg-type]
        ),
    )
    body = {k: v for k, v in params.items() if k not in ("extra_body", "extra_headers")}
    shape = (
        completion_create_params.CompletionCreateParamsStreaming
        if body.get("stream")
        else completion_create_params.CompletionCreateParamsNonStreaming
    )
    assert await async_maybe_transform(body, shape) == body


async def test_extra_body_and_headers_reach_the_server(make_provider: ProviderFactory) -> None:
    with WireServer(Script({"researcher": [Reply(text="ok")]})) as server:
        provider = make_provider(server, extra_body={"top_k": 3}, extra_headers={"X-Team": "a"})
        await provider.complete(request())
        (seen,) = server.requests
    assert seen.body["top_k"] == 3 and seen.headers["x-team"] == "a"
    assert seen.headers["authorization"] == "Bearer sk-openai-test"


ANSWERS = [
    {
        "id": "x",
        "object": "chat.completion",
        "model": "gpt-test-1",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "reasoning_content": "thinking it over",
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "cat", "arguments": "{}"}},
                        {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": "{bad"}},
                    ],
                },
            }
        ],
        "usage": {
            "prompt_tokens": 1020,
            "completion_tokens": 7,
            "prompt_tokens_details": {"cached_tokens": 900},
        },
    },
    {
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "refusal": "no"}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    },
    {"choices": [{"message": {"content": "hi \U0001f600"}, "finish_reason": "length"}]},
]


@pytest.mark.parametrize("answer", ANSWERS)
def test_an_answer_read_from_its_json_is_read_as_from_the_sdk_model(answer: dict[str, object]) -> None:
    """Non-streamed answers are read from their JSON body, not from the SDK's pydantic model of
    it (ChatCompletion): both readings give the same ModelResponse."""
    from openai._models import construct_type
    from openai.types.chat import ChatCompletion

    from flowrun.providers.openai_provider import response_from_completion

    model = construct_type(value=json.loads(json.dumps(answer)), type_=ChatCompletion)
    assert response_from_completion(answer) == response_from_completion(model)
