"""OpenAIProvider through the REAL `openai` SDK over loopback HTTP to the wire server: what only
the OpenAI wire format has (the cases both share are in test_providers.py)."""

from __future__ import annotations

import asyncio
import json

import pytest
from support.providers import OPENAI, SYSTEM, TOOLS, ProviderFactory, Wire, provider_config, request
from support.wire_server import Reply, Script, WireServer, call, calls

from flowrun.errors import ProviderError
from flowrun.providers.base import ModelRequest
from flowrun.providers.openai_provider import OpenAIProvider
from flowrun.types import Message, ToolCall

pytestmark = pytest.mark.usefixtures("transport", "provider_keys")


@pytest.fixture
def wire() -> Wire:
    return OPENAI


async def test_no_temperature_configured_sends_none(make_provider: ProviderFactory) -> None:
    with WireServer(Script({"researcher": []})) as server:
        await make_provider(server).complete(request(tools=[]))
        (seen,) = server.requests
    assert "temperature" not in seen.body and "tools" not in seen.body


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


async def test_a_stream_without_finish_reason_ends_at_its_done(make_provider: ProviderFactory) -> None:
    """Some servers stream no chunk with a finish_reason: the stream's [DONE] is its end. A
    stream cut before [DONE] is still an unusable answer, retried."""
    replies = [Reply(text="Hello there", no_finish=True), calls(call("read_file", path="a"))]
    replies[1].no_finish = True
    with WireServer(Script({"researcher": [*replies, Reply(text="cut", fault="truncated")]})) as server:
        provider = make_provider(server, stream=True, max_retries=0)
        text = await provider.complete(request())
        history = [Message("user", "q"), Message("assistant", "Hello there"), Message("user", "go on")]
        called = await provider.complete(request(*history))
        history += [Message("assistant", "read it"), Message("user", "and?")]
        with pytest.raises(ProviderError, match="without its final"):
            await provider.complete(request(*history))
    assert (text.text, text.stop_reason) == ("Hello there", "stop")
    assert called.stop_reason == "tool_calls"
    assert [(c.name, c.arguments) for c in called.tool_calls] == [("read_file", {"path": "a"})]


async def test_local_server_without_key_env_gets_a_placeholder(
    make_provider: ProviderFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-secret")  # must not leak to a third-party base_url
    with WireServer(Script({"researcher": []})) as server:
        await make_provider(server, api_key_env=None).complete(request())
        (seen,) = server.requests
    assert "sk-real-secret" not in seen.headers["authorization"]


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
