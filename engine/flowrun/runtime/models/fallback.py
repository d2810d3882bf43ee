"""Fallback chains: a model call goes to the models of its model's `fallback` list, in order,
when the model still fails with a retryable error (429, 5xx, overloaded, timeouts, connection
errors) after its own retries. A model that failed cools down for its chain's `cooldown_s`:
meanwhile calls skip it, and after that it is tried again. Every switch is a `model_fallback`
event; the answer says which model served it, for usage and cost."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from flowrun.errors import ProviderError
from flowrun.events import Event, ModelFallbackEvent
from flowrun.providers.base import ModelConfig, ModelRequest, Provider
from flowrun.runtime.loop.contracts import AgentInstance
from flowrun.types import ModelResponse

Resolve = Callable[[str, str], ModelConfig]  # (model reference, agent) -> config


@dataclass(slots=True)
class Served:
    response: ModelResponse
    config: ModelConfig  # the model that answered


class FallbackChains:
    def __init__(
        self,
        resolve: Resolve,
        provider_for: Callable[[ModelConfig], Provider],
        emit: Callable[[Event], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.resolve = resolve
        self.provider_for = provider_for
        self.emit = emit
        self.clock = clock
        self.cooling: dict[str, float] = {}  # model name -> when it may be tried again

    def chain(self, inst: AgentInstance) -> list[ModelConfig]:
        return [inst.model, *(self.resolve(ref, inst.name) for ref in inst.model.fallback)]

    def _left(self, config: ModelConfig) -> float:
        return self.cooling.get(config.name, 0.0) - self.clock()

    async def complete(self, inst: AgentInstance, request: ModelRequest, step: int) -> Served:
        if not inst.model.fallback:
            return Served(await inst.provider.complete(request), inst.model)
        chain = self.chain(inst)
        candidates = [c for c in chain if self._left(c) <= 0] or chain  # all cooling: try them all
        previous, reason = chain[0].name, ""
        if candidates[0] is not chain[0]:
            reason = f"{chain[0].name} is cooling down after a failure ({self._left(chain[0]):.1f} s left)"
        for position, config in enumerate(candidates):
            if config is not chain[0]:
                self.emit(
                    ModelFallbackEvent(
                        agent=inst.name,
                        agent_id=inst.id,
                        step=step,
                        from_model=previous,
                        to_model=config.name,
                        reason=reason,
                    )
                )
            provider = inst.provider if config is chain[0] else self.provider_for(config)
            try:
                return Served(await provider.complete(request), config)
            except ProviderError as e:
                if not e.retryable or position == len(candidates) - 1:
                    raise
                self.cooling[config.name] = self.clock() + chain[0].cooldown_s
                previous, reason = config.name, e.message
        raise AssertionError("unreachable: the last candidate returns or raises")
