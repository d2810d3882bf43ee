"""The `full` strategy: keep every turn."""

from __future__ import annotations

from typing import Literal

from flowrun.manifest.specs import StrategySpec
from flowrun.runtime.loop.contracts import ContextStrategy


class FullContext(StrategySpec):
    """Keep every turn."""

    strategy: Literal["full"] = "full"


class FullStrategy(ContextStrategy):
    name = "full"
    spec = FullContext


STRATEGY = FullStrategy()
