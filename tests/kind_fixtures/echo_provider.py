"""A throw-away provider type: a model of it answers every call with `echo: ` and the last user
message, offline. Everything a provider is lives here: its class attributes (what a model of it
needs) and `complete`. It is registered with one line:
`register_provider("echo", "kind_fixtures.echo_provider:EchoProvider")`."""

from __future__ import annotations

from flowrun.providers.base import ModelRequest, Provider
from flowrun.types import ModelResponse, Usage


class EchoProvider(Provider):
    """Answers with the last user message, offline."""

    needs_key = False  # it calls no service

    async def complete(self, request: ModelRequest) -> ModelResponse:
        said = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
        return ModelResponse(text=f"echo: {said}", usage=Usage(len(said), 1), model=self.config.model)
