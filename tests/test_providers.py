"""The cases both providers share, each run over both wire formats (the `wire` fixture) and both
HTTP clients, through the REAL `openai` and `anthropic` SDKs over loopback HTTP to the wire
server: answers and usage, parallel tool calls and their results, malformed arguments, keys and
headers, retries, client errors, a slow server, one connection kept alive, and
no SDK imported before the first call. What only one wire format has is in
test_provider_openai.py and test_provider_anthropic.py."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys

import pytest
from support.providers import TOOLS, ProviderFactory, Wire, request
from support.wire_server import FailFirst, Reply, Script, ToolCallSpec, WireServer, always

from flowrun.errors import MissingCredentials, ProviderError
from flowrun.types import Message

pytestmark = pytest.mark.usefixtures("transport", "provider_keys")
THREE_CALLS = [
    ToolCallSpec("read_file", {"path": "a.txt"}),
    ToolCallSpec("read_file", {"path": "b.txt"}),
    ToolCallSpec("list_dir", {"path": "."}),
]


@pytest.mark.parametrize("stream", [False, True])
async def test_text_reply_and_usage(make_provider: ProviderFactory, wire: Wire, stream: bool) -> None:
    reply = Reply(text="All quiet.", usage=(120, 7), cache=(900, 50))
    with WireServer(Script({"researcher": [reply]})) as server:
        response = await make_provider(server, stream=stream, temperature=0.2).complete(request())
        (seen,) = server.requests
    assert response.text == "All quiet." and response.tool_calls == []
    assert response.stop_reason == wire.stop_text and response.model == wire.model_id
    # OpenAI's prompt_tokens include the cached ones: split so Usage means the same everywhere
    assert (response.usage.input_tokens, response.usage.output_tokens) == (120, 7)
    cache_written = 50 if wire.api == "anthropic" else 0  # OpenAI's answers have no such count
    assert (response.usage.cache_read_tokens, response.usage.cache_write_tokens) == (900, cache_written)
    assert seen.api == wire.api and seen.stream is stream
    assert seen.body["model"] == wire.model_id and seen.body["max_tokens"] == 4096
    assert seen.last_user_text == "What is up?"
    if wire.api == "openai":
        body = seen.body
        assert "max_completion_tokens" not in body and body["temperature"] == 0.2
        assert body["messages"][0] == {"role": "system", "content": request().system}
        if stream:
            assert body["stream_options"] == {"include_usage": True}
        assert body["tools"][0] == {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file.",
                "parameters": TOOLS[0].parameters,
            },
        }


@pytest.mark.parametrize("stream", [False, True])
async def test_three_parallel_tool_calls_and_results_sent_back(
    make_provider: ProviderFactory, wire: Wire, stream: bool
) -> None:
    text = "Reading." if wire.api == "anthropic" else ""
    script = Script({"researcher": [Reply(text=text, tool_calls=THREE_CALLS), Reply(text="Both read.")]})
    with WireServer(script) as server:
        provider = make_provider(server, stream=stream)
        first = await provider.complete(request())
        ids = [f"{wire.call_id}_0_{i}" for i in range(3)]
        assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
            (ids[0], "read_file", {"path": "a.txt"}),
            (ids[1], "read_file", {"path": "b.txt"}),
            (ids[2], "list_dir", {"path": "."}),
        ]
        assert all(c.parse_error is None for c in first.tool_calls)
        assert first.stop_reason == wire.stop_tools and first.text == text
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
    flagged = wire.api == "anthropic"  # only Anthropic's tool results carry an error flag
    assert seen.tool_results == [
        (ids[0], "text of a", False),
        (ids[1], "[error NOT_FOUND] no b.txt", flagged),
        (ids[2], "a.txt b.txt", False),
    ]
    if wire.api == "openai":
        assistant = seen.messages[2]
        assert assistant["role"] == "assistant" and assistant["content"] is None
        assert [(c["id"], json.loads(c["function"]["arguments"])) for c in assistant["tool_calls"]] == [
            (ids[0], {"path": "a.txt"}),
            (ids[1], {"path": "b.txt"}),
            (ids[2], {"path": "."}),
        ]
        assert [m["role"] for m in seen.messages] == ["system", "user", "assistant", "tool", "tool", "tool"]
    else:
        roles = [m["role"] for m in seen.messages]
        assert roles == ["user", "assistant", "user"]  # the three results merged into one user turn
        blocks = seen.messages[1]["content"]
        assert blocks[0] == {"type": "text", "text": "Reading."}
        assert [b["input"] for b in blocks[1:]] == [c.arguments for c in THREE_CALLS]


@pytest.mark.parametrize("stream", [False, True])
async def test_malformed_arguments_become_a_parse_error(make_provider: ProviderFactory, stream: bool) -> None:
    broken = '{"path": "a.txt", "start'
    calls = [ToolCallSpec("read_file", broken), ToolCallSpec("list_dir", "[1, 2]"), THREE_CALLS[0]]
    with WireServer(Script({"researcher": [Reply(tool_calls=calls)]})) as server:
        response = await make_provider(server, stream=stream).complete(request())
    bad, not_object, good = response.tool_calls
    assert bad.arguments == {} and bad.raw_arguments == broken and "not valid JSON" in (bad.parse_error or "")
    assert not_object.parse_error is not None and "object" in not_object.parse_error
    assert good.arguments == {"path": "a.txt"} and good.parse_error is None


async def test_the_key_goes_in_its_header_with_the_custom_headers(
    make_provider: ProviderFactory, wire: Wire
) -> None:
    with WireServer(Script({"researcher": []})) as server:
        await make_provider(server, headers={"x-team": "blue"}).complete(request())
        (seen,) = server.requests
    name, value = wire.key_header
    assert seen.headers[name] == value and seen.headers["x-team"] == "blue"
    if wire.api == "anthropic":
        assert "authorization" not in seen.headers and "anthropic-version" in seen.headers


async def test_a_missing_key_variable_is_named(make_provider: ProviderFactory) -> None:
    with WireServer(Script({"researcher": []})) as server:
        provider = make_provider(server, api_key_env="NOT_SET_ANYWHERE_KEY")
        with pytest.raises(MissingCredentials) as info:
            await provider.complete(request())
        assert server.requests == []
    assert "NOT_SET_ANYWHERE_KEY" in str(info.value) and "researcher" in str(info.value)


async def test_no_key_variable_and_no_base_url_needs_the_sdks_own_key(
    make_provider: ProviderFactory, wire: Wire
) -> None:
    with pytest.raises(MissingCredentials, match=wire.default_key_env):
        await make_provider(None, api_key_env=None).complete(request())


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("failures", "headers", "delay"),
    [(2, {"retry-after": "0.05"}, 0.05), (1, {"retry-after-ms": "40"}, 0.04)],
    ids=["seconds", "milliseconds"],
)
async def test_429_is_retried_honouring_retry_after(
    make_provider: ProviderFactory,
    monkeypatch: pytest.MonkeyPatch,
    stream: bool,
    failures: int,
    headers: dict[str, str],
    delay: float,
) -> None:
    monkeypatch.setenv("FLOWRUN_RETRY_BASE_S", "30")  # only the server's retry-after keeps this fast
    retries: list[tuple[int, float, str]] = []
    then = Script({"researcher": [Reply(text="fine")]})
    with WireServer(FailFirst(failures, 429, headers, then=then)) as server:
        provider = make_provider(server, stream=stream)
        provider.on_retry = lambda n, wait, why: retries.append((n, wait, why))
        response = await asyncio.wait_for(provider.complete(request()), timeout=10)
        assert len(server.requests) == failures + 1
    assert response.text == "fine"
    assert [n for n, _, _ in retries] == list(range(1, failures + 1))
    assert all(wait == pytest.approx(delay) for _, wait, _ in retries)
    assert all(why.startswith("HTTP 429") for _, _, why in retries)


@pytest.mark.parametrize("stream", [False, True])
async def test_500_every_time_gives_up_after_max_retries(
    make_provider: ProviderFactory, wire: Wire, stream: bool
) -> None:
    with WireServer(always(500)) as server:
        with pytest.raises(ProviderError) as info:
            await make_provider(server, max_retries=3, stream=stream).complete(request())
        assert len(server.requests) == 4
    message = str(info.value)
    assert "researcher" in message and wire.model_name in message and wire.model_id in message
    assert "HTTP 500" in message and "after 3 retries" in message and "scripted 500" in message
    assert "\n" not in message
    assert info.value.retryable
    assert info.value.agent == "researcher" and info.value.model == wire.model_name


@pytest.mark.parametrize(("status", "hint"), [(401, "$KEY"), (403, "$KEY"), (404, "model id")])
async def test_client_errors_fail_at_once_with_a_hint(
    make_provider: ProviderFactory, wire: Wire, status: int, hint: str
) -> None:
    with WireServer(always(status)) as server:
        with pytest.raises(ProviderError) as info:
            await make_provider(server).complete(request())
        assert len(server.requests) == 1
    assert f"HTTP {status}" in str(info.value) and hint.replace("KEY", wire.key_env) in str(info.value)
    assert not info.value.retryable


async def test_connection_refused_is_retried_then_reported(make_provider: ProviderFactory) -> None:
    """Both wires, both HTTP clients' ways of saying it (aiohttp's is a connect timeout)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    provider = make_provider(None, base_url=f"http://127.0.0.1:{port}", max_retries=1)
    retries: list[int] = []
    provider.on_retry = lambda n, wait, why: retries.append(n)
    with pytest.raises(ProviderError, match="connection error") as info:
        await provider.complete(request())
    assert retries == [1] and info.value.retryable


async def test_a_timeout_is_reported(make_provider: ProviderFactory) -> None:
    with WireServer(Script({"researcher": [Reply(text="late", delay_s=2.0)]})) as server:
        provider = make_provider(server, timeout_s=0.3, max_retries=0)
        with pytest.raises(ProviderError, match="timeout"):
            await provider.complete(request())


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


def test_importing_the_module_does_not_import_the_sdk(wire: Wire) -> None:
    code = f"import sys, {wire.provider.__module__}; print({wire.sdk!r} in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
