"""AnthropicProvider through the REAL `anthropic` SDK over loopback HTTP to the wire server."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Callable

import pytest
from model_configs import provider_config
from wire_server import FailFirst, Reply, Script, ToolCallSpec, WireServer, always

from flowrun.errors import MissingCredentials, ProviderError
from flowrun.providers.anthropic_provider import AnthropicProvider
from flowrun.providers.base import ModelRequest
from flowrun.types import Message, ModelResponse, ToolCall, ToolSpec

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
    monkeypatch.setenv("TEST_ANTHROPIC_KEY", "sk-ant-test")
    monkeypatch.setenv("FLOWRUN_RETRY_BASE_S", "0.001")
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_CUSTOM_HEADERS",
    ):
        monkeypatch.delenv(name, raising=False)


ProviderFactory = Callable[..., AnthropicProvider]


@pytest.fixture
async def make_provider() -> AsyncIterator[ProviderFactory]:
    made: list[AnthropicProvider] = []

    def make(server: WireServer | None = None, **settings: object) -> AnthropicProvider:
        fields: dict[str, object] = {
            "name": "sonnet",
            "provider": "anthropic",
            "model": "claude-test-1",
            "base_url": server.anthropic_base_url if server else None,
            "api_key_env": "TEST_ANTHROPIC_KEY",
            **settings,
        }
        provider = AnthropicProvider(provider_config(**fields))  # type: ignore[arg-type]
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
    reply = Reply(text="All quiet.", usage=(120, 7), cache=(900, 50))
    with WireServer(Script({"researcher": [reply]})) as server:
        response = await make_provider(server, stream=stream).complete(request())
        (seen,) = server.requests
    assert response.text == "All quiet." and response.tool_calls == []
    assert response.stop_reason == "end_turn" and response.model == "claude-test-1"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (120, 7)
    assert (response.usage.cache_read_tokens, response.usage.cache_write_tokens) == (900, 50)
    assert seen.api == "anthropic" and seen.stream is stream
    assert seen.body["model"] == "claude-test-1" and seen.body["max_tokens"] == 4096
    assert seen.last_user_text == "What is up?"


@pytest.mark.parametrize("stream", [False, True])
async def test_three_parallel_tool_calls_and_results_sent_back(
    make_provider: ProviderFactory, stream: bool
) -> None:
    script = Script(
        {"researcher": [Reply(text="Reading.", tool_calls=THREE_CALLS), Reply(text="Both read.")]}
    )
    with WireServer(script) as server:
        provider = make_provider(server, stream=stream)
        first = await provider.complete(request())
        assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
            ("toolu_0_0", "read_file", {"path": "a.txt"}),
            ("toolu_0_1", "read_file", {"path": "b.txt"}),
            ("toolu_0_2", "list_dir", {"path": "."}),
        ]
        assert all(c.parse_error is None for c in first.tool_calls)
        assert first.stop_reason == "tool_use"
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
        ("toolu_0_0", "text of a", False),
        ("toolu_0_1", "[error NOT_FOUND] no b.txt", True),
        ("toolu_0_2", "a.txt b.txt", False),
    ]
    roles = [m["role"] for m in seen.messages]
    assert roles == ["user", "assistant", "user"]  # the three results merged into one user turn
    assistant = seen.messages[1]["content"]
    assert assistant[0] == {"type": "text", "text": "Reading."}
    assert [b["input"] for b in assistant[1:]] == [c.arguments for c in THREE_CALLS]


async def test_user_text_after_tool_results_goes_after_them_in_one_turn(
    make_provider: ProviderFactory,
) -> None:
    history = [
        Message("user", "start"),
        Message("assistant", "", tool_calls=[]),  # an empty turn is dropped, not sent empty
        Message("assistant", "", tool_calls=[ToolCall("toolu_x", "list_dir")]),
        Message("user", "also note this"),
        Message("tool", "listing", tool_call_id="toolu_x"),
    ]
    with WireServer(Script({"researcher": []})) as server:
        await make_provider(server).complete(request(*history))
        (seen,) = server.requests
    assert [m["role"] for m in seen.messages] == ["user", "assistant", "user"]
    last = seen.messages[-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text"]
    assert seen.messages[1]["content"] == [
        {"type": "tool_use", "id": "toolu_x", "name": "list_dir", "input": {}}
    ]


@pytest.mark.parametrize("stream", [False, True])
async def test_thinking_blocks_round_trip(make_provider: ProviderFactory, stream: bool) -> None:
    script = Script(
        {
            "researcher": [
                Reply(thinking="I should list first.", tool_calls=[THREE_CALLS[2]]),
                Reply(text="ok"),
            ]
        }
    )
    with WireServer(script) as server:
        provider = make_provider(server, stream=stream, thinking=True, thinking_budget=3000, temperature=0.2)
        first = await provider.complete(request())
        (block,) = first.thinking
        assert block["type"] == "thinking" and block["thinking"] == "I should list first."
        assert block["signature"].startswith("sig_")
        history = [
            Message("user", "What is up?"),
            Message("assistant", first.text, tool_calls=first.tool_calls, thinking=first.thinking),
            Message("tool", "a.txt", tool_call_id=first.tool_calls[0].id),
        ]
        await provider.complete(request(*history))
        first_seen, second_seen = server.requests
    assert first_seen.body["thinking"] == {"type": "enabled", "budget_tokens": 3000}
    assert first_seen.body["max_tokens"] > 3000
    assert "temperature" not in first_seen.body
    sent = second_seen.messages[1]["content"]
    assert sent[0] == block  # verbatim, signature included, before the tool_use
    assert [b["type"] for b in sent] == ["thinking", "tool_use"]


async def test_thinking_off_sends_no_thinking_blocks_and_never_temperature(
    make_provider: ProviderFactory,
) -> None:
    old_thinking = [{"type": "thinking", "thinking": "old", "signature": "sig_x"}]
    history = [Message("user", "q"), Message("assistant", "a", thinking=old_thinking), Message("user", "q2")]
    with WireServer(Script({"researcher": []})) as server:
        await make_provider(server, temperature=0.3).complete(request(*history))
        (seen,) = server.requests
    # API version 2026-10-21 (sent by SDK 2.x) answers 400 to any sampling parameter
    assert "temperature" not in seen.body and "thinking" not in seen.body
    assert seen.messages[1]["content"] == [{"type": "text", "text": "a"}]


async def test_cache_control_on_system_last_tool_and_last_user_block(make_provider: ProviderFactory) -> None:
    history = [Message("user", "q"), Message("system", "Dashboard: all green."), Message("user", "next?")]
    with WireServer(Script({"researcher": []})) as server:
        await make_provider(server).complete(request(*history))
        (seen,) = server.requests
    system = seen.body["system"]
    assert system[0] == {"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}
    assert system[1] == {"type": "text", "text": "Dashboard: all green."}  # in-conversation system text
    tools = seen.body["tools"]
    assert [t["name"] for t in tools] == ["read_file", "list_dir"]
    assert "cache_control" not in tools[0] and tools[-1]["cache_control"] == {"type": "ephemeral"}
    assert tools[0]["input_schema"] == TOOLS[0].parameters
    last_block = seen.messages[-1]["content"][-1]
    assert last_block["text"] == "next?" and last_block["cache_control"] == {"type": "ephemeral"}
    marks = str(seen.body).count("cache_control")
    assert marks == 3  # the API allows at most four


async def test_api_key_goes_in_x_api_key_only(make_provider: ProviderFactory) -> None:
    with WireServer(Script({"researcher": []})) as server:
        await make_provider(server, headers={"x-team": "blue"}).complete(request())
        (seen,) = server.requests
    assert seen.headers["x-api-key"] == "sk-ant-test"
    assert "authorization" not in seen.headers
    assert seen.headers["x-team"] == "blue" and "anthropic-version" in seen.headers


async def test_auth_token_goes_as_bearer(
    make_provider: ProviderFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROXY_TOKEN", "tok-123")
    with WireServer(Script({"researcher": []})) as server:
        await make_provider(server, auth_token_env="PROXY_TOKEN").complete(request())
        (seen,) = server.requests
    assert seen.headers["authorization"] == "Bearer tok-123"
    assert "x-api-key" not in seen.headers


@pytest.mark.parametrize("setting", ["api_key_env", "auth_token_env"])
async def test_missing_key_env_names_the_variable(make_provider: ProviderFactory, setting: str) -> None:
    with WireServer(Script({"researcher": []})) as server:
        provider = make_provider(server, **{setting: "NOT_SET_ANYWHERE_KEY"})
        with pytest.raises(MissingCredentials) as info:
            await provider.complete(request())
        assert server.requests == []
    assert "NOT_SET_ANYWHERE_KEY" in str(info.value) and "researcher" in str(info.value)


async def test_no_env_named_defaults_to_anthropic_api_key(make_provider: ProviderFactory) -> None:
    provider = make_provider(None, api_key_env=None)
    with pytest.raises(MissingCredentials, match="ANTHROPIC_API_KEY"):
        await provider.complete(request())


async def test_429_is_retried_honouring_retry_after(
    make_provider: ProviderFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWRUN_RETRY_BASE_S", "30")  # only the server's retry-after keeps this fast
    retries: list[tuple[int, float, str]] = []
    responder = FailFirst(1, 429, {"retry-after-ms": "40"}, then=Script({"researcher": [Reply(text="fine")]}))
    with WireServer(responder) as server:
        provider = make_provider(server)
        provider.on_retry = lambda n, delay, why: retries.append((n, delay, why))
        response = await asyncio.wait_for(provider.complete(request()), timeout=10)
        assert len(server.requests) == 2
    assert response.text == "fine"
    ((number, delay, why),) = retries
    assert number == 1 and delay == pytest.approx(0.04) and why.startswith("HTTP 429")


async def test_500_every_time_gives_up_after_max_retries(make_provider: ProviderFactory) -> None:
    with WireServer(always(500)) as server:
        with pytest.raises(ProviderError) as info:
            await make_provider(server, max_retries=2, stream=True).complete(request())
        assert len(server.requests) == 3
    message = str(info.value)
    assert "researcher" in message and "sonnet" in message and "claude-test-1" in message
    assert "HTTP 500" in message and "after 2 retries" in message
    assert "\n" not in message
    assert info.value.agent == "researcher" and info.value.model == "sonnet"


async def test_401_fails_at_once_and_names_the_key_variable(make_provider: ProviderFactory) -> None:
    with WireServer(always(401)) as server:
        with pytest.raises(ProviderError) as info:
            await make_provider(server).complete(request())
        assert len(server.requests) == 1
    assert "HTTP 401" in str(info.value) and "$TEST_ANTHROPIC_KEY" in str(info.value)


async def test_404_hint_points_at_model_id(make_provider: ProviderFactory) -> None:
    missing = Reply(
        status=404, error_body={"type": "error", "error": {"type": "not_found_error", "message": "no model"}}
    )
    with WireServer(Script({"researcher": [missing]})) as server:
        with pytest.raises(ProviderError) as info:
            await make_provider(server).complete(request())
    assert "no model" in str(info.value) and "model id" in str(info.value)


async def test_connection_refused_is_retried_then_reported(make_provider: ProviderFactory) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    provider = make_provider(None, base_url=f"http://127.0.0.1:{port}", max_retries=1)
    retries: list[int] = []
    provider.on_retry = lambda n, delay, why: retries.append(n)
    with pytest.raises(ProviderError, match="connection error") as info:
        await provider.complete(request())
    assert retries == [1] and info.value.retryable


async def test_timeout_is_reported(make_provider: ProviderFactory) -> None:
    with WireServer(Script({"researcher": [Reply(text="late", delay_s=2.0)]})) as server:
        provider = make_provider(server, timeout_s=0.3, max_retries=0)
        with pytest.raises(ProviderError, match="timeout"):
            await provider.complete(request())


@pytest.mark.parametrize("stream", [False, True])
async def test_malformed_tool_input_becomes_parse_error(make_provider: ProviderFactory, stream: bool) -> None:
    broken = '{"path": "a.txt", "start'
    calls = [ToolCallSpec("read_file", broken), ToolCallSpec("list_dir", {"path": "."})]
    with WireServer(Script({"researcher": [Reply(tool_calls=calls)]})) as server:
        response: ModelResponse = await make_provider(server, stream=stream).complete(request())
    bad, good = response.tool_calls
    assert bad.arguments == {} and bad.raw_arguments == broken and "not valid JSON" in (bad.parse_error or "")
    assert good.arguments == {"path": "."} and good.parse_error is None


async def test_streamed_tool_without_input_fragments_has_empty_arguments(
    make_provider: ProviderFactory,
) -> None:
    with WireServer(Script({"researcher": [Reply(tool_calls=[ToolCallSpec("list_dir", "")])]})) as server:
        response = await make_provider(server, stream=True).complete(request())
    (call,) = response.tool_calls
    assert call.arguments == {} and call.parse_error is None


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
    code = "import sys, flowrun.providers.anthropic_provider; print('anthropic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
