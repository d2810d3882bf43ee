"""The provider a replay uses: it never reaches a network; any call the recording cannot
answer is a divergence."""

from __future__ import annotations

from flowrun.providers.base import ModelRequest, Provider
from flowrun.runtime.durable.ledger import Divergence
from flowrun.types import ModelResponse


class ReplayOnlyProvider(Provider):
    async def complete(self, request: ModelRequest) -> ModelResponse:
        raise Divergence(
            f"first differing step: agent '{request.agent}' ({request.agent_id}) asked the model "
            "for something the recording does not have",
            "the configuration changed since the run was recorded",
        )
