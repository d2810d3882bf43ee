"""Context strategies, by the name an agent's `context.strategy` uses. A new strategy is one
module with a `ContextStrategy` subclass, one line here, and its spec in manifest/specs.py."""

from __future__ import annotations

from flowrun.runtime.context import compact, dashboard, full
from flowrun.runtime.context.base import ContextStrategy

STRATEGIES: dict[str, ContextStrategy] = {
    "full": full.STRATEGY,
    "dashboard": dashboard.STRATEGY,
    "compact": compact.STRATEGY,
}


def strategy_for(name: str) -> ContextStrategy:
    return STRATEGIES[name]
