"""Provider objects for the provider tests, and a pytest plugin (loaded by conftest.py) with
their fixtures: `make_provider` builds the provider of the test's `wire` (both wire formats by
default; a module pins one by defining its own `wire` fixture) on the manifest's defaults,
pointed at a wire server, and closes them after the test. `Wire` holds what differs between the
two wire formats, so one case checks both (tests/test_providers.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from flowrun.manifest.model_config import model_config
from flowrun.providers.anthropic_provider import AnthropicProvider
from flowrun.providers.base import ModelConfig, ModelRequest, Provider
from flowrun.providers.openai_provider import OpenAIProvider
from flowrun.types import Message, ToolSpec
from support.wire_server import Api, WireServer

SYSTEM = "You are the researcher. Find facts."
TOOLS = [
    ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ToolSpec("list_dir", "List a folder.", {"type": "object", "properties": {"path": {"type": "string"}}}),
]


def provider_config(
    name: str = "fast", provider: str = "openai", model: str = "m", **settings: Any
) -> ModelConfig:
    """A model's settings at the manifest's defaults, streaming off, then `settings`."""
    base = model_config(name, provider=provider, model=model)
    return dataclasses.replace(base, **{"stream": False, **settings})


@dataclass(frozen=True)
class Wire:
    """What a provider test expects of one wire format."""

    api: Api
    provider: type[OpenAIProvider] | type[AnthropicProvider]
    model_name: str  # the model's name in the workflow, which errors name
    model_id: str
    key_env: str  # the variable the model's api_key_env names, and its value
    key: str
    default_key_env: str  # the SDK's own key variable, read when api_key_env is not set
    sdk_env: tuple[str, ...]  # the SDK's variables, unset so the developer's shell cannot leak in
    key_header: tuple[str, str]  # the header the key is sent in, and its value
    call_id: str  # the prefix of the server's tool call ids
    stop_text: str  # the stop reasons of an answer and of tool calls
    stop_tools: str
    sdk: str  # the SDK package the provider imports only when it calls

    def base_url(self, server: WireServer | None) -> str | None:
        return server.base_url(self.api) if server else None


OPENAI = Wire(
    api="openai",
    provider=OpenAIProvider,
    model_name="fast",
    model_id="gpt-test-1",
    key_env="TEST_OPENAI_KEY",
    key="sk-openai-test",
    default_key_env="OPENAI_API_KEY",
    sdk_env=(
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_CUSTOM_HEADERS",
        "OPENAI_ORG_ID",
        "OPENAI_PROJECT_ID",
    ),
    key_header=("authorization", "Bearer sk-openai-test"),
    call_id="call",
    stop_text="stop",
    stop_tools="tool_calls",
    sdk="openai",
)
ANTHROPIC = Wire(
    api="anthropic",
    provider=AnthropicProvider,
    model_name="sonnet",
    model_id="claude-test-1",
    key_env="TEST_ANTHROPIC_KEY",
    key="sk-ant-test",
    default_key_env="ANTHROPIC_API_KEY",
    sdk_env=("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_CUSTOM_HEADERS"),
    key_header=("x-api-key", "sk-ant-test"),
    call_id="toolu",
    stop_text="end_turn",
    stop_tools="tool_use",
    sdk="anthropic",
)
ProviderFactory = Callable[..., Any]  # make(server=None, **settings) -> the wire's provider


def request(*messages: Message, tools: list[ToolSpec] | None = None) -> ModelRequest:
    """The researcher's request: `messages` (a question by default) with the two TOOLS."""
    return ModelRequest(
        agent="researcher",
        system=SYSTEM,
        messages=list(messages) or [Message("user", "What is up?")],
        tools=TOOLS if tools is None else tools,
    )


@pytest.fixture(params=[ANTHROPIC, OPENAI], ids=["anthropic", "openai"])
def wire(request: pytest.FixtureRequest) -> Wire:
    """Each wire format in turn; a module of one wire format overrides it."""
    given: Wire = request.param
    return given


@pytest.fixture(params=["httpx", "aiohttp"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each HTTP client the SDK clients may get (providers/clients.py) in turn."""
    monkeypatch.setenv("FLOWRUN_HTTP", request.param)
    given: str = request.param
    return given


@pytest.fixture
def provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each wire's test key set, the SDKs' own variables unset, retries 1 ms apart."""
    monkeypatch.setenv("FLOWRUN_RETRY_BASE_S", "0.001")
    for each in (OPENAI, ANTHROPIC):
        monkeypatch.setenv(each.key_env, each.key)
        for name in each.sdk_env:
            monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def make_provider(wire: Wire) -> AsyncIterator[ProviderFactory]:
    """`make(server=None, **settings)`: the wire's provider pointed at `server`; all closed after."""
    made: list[Provider] = []

    def make(server: WireServer | None = None, **settings: Any) -> Any:
        fields: dict[str, Any] = {
            "name": wire.model_name,
            "provider": wire.api,
            "model": wire.model_id,
            "base_url": wire.base_url(server),
            "api_key_env": wire.key_env,
            **settings,
        }
        provider = wire.provider(provider_config(**fields))
        made.append(provider)
        return provider

    yield make
    for provider in made:
        await provider.aclose()
