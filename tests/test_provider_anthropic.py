"""AnthropicProvider through the REAL `anthropic` SDK over loopback HTTP to the wire server: what
only the Anthropic wire format has (the cases both share are in test_providers.py)."""

from __future__ import annotations

import pytest
from support.providers import ANTHROPIC, SYSTEM, TOOLS, ProviderFactory, Wire, request
from support.wire_server import Reply, Script, ToolCallSpec, WireServer

from flowrun.errors import MissingCredentials, ProviderError
from flowrun.types import Message, ToolCall

pytestmark = pytest.mark.usefixtures("transport", "provider_keys")


@pytest.fixture
def wire() -> Wire:
    return ANTHROPIC


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
                Reply(thinking="I should list first.", tool_calls=[ToolCallSpec("list_dir", {"path": "."})]),
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


async def test_auth_token_goes_as_bearer(
    make_provider: ProviderFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROXY_TOKEN", "tok-123")
    with WireServer(Script({"researcher": []})) as server:
        await make_provider(server, auth_token_env="PROXY_TOKEN").complete(request())
        (seen,) = server.requests
    assert seen.headers["authorization"] == "Bearer tok-123"
    assert "x-api-key" not in seen.headers


async def test_a_missing_auth_token_variable_is_named(make_provider: ProviderFactory) -> None:
    with WireServer(Script({"researcher": []})) as server:
        provider = make_provider(server, auth_token_env="NOT_SET_ANYWHERE_KEY")
        with pytest.raises(MissingCredentials) as info:
            await provider.complete(request())
        assert server.requests == []
    assert "NOT_SET_ANYWHERE_KEY" in str(info.value) and "researcher" in str(info.value)


async def test_404_hint_points_at_model_id(make_provider: ProviderFactory) -> None:
    missing = Reply(
        status=404, error_body={"type": "error", "error": {"type": "not_found_error", "message": "no model"}}
    )
    with WireServer(Script({"researcher": [missing]})) as server:
        with pytest.raises(ProviderError) as info:
            await make_provider(server).complete(request())
    assert "no model" in str(info.value) and "model id" in str(info.value)


async def test_streamed_tool_without_input_fragments_has_empty_arguments(
    make_provider: ProviderFactory,
) -> None:
    with WireServer(Script({"researcher": [Reply(tool_calls=[ToolCallSpec("list_dir", "")])]})) as server:
        response = await make_provider(server, stream=True).complete(request())
    (call,) = response.tool_calls
    assert call.arguments == {} and call.parse_error is None
