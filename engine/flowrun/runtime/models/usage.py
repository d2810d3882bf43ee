"""Token and cost accounting per agent and model."""

from __future__ import annotations

from dataclasses import dataclass, field

from flowrun.providers.base import ModelConfig
from flowrun.providers.prices import cost_usd, price_source, table_version
from flowrun.records import AgentModelUsage, ModelUsage, TokenCounts, UsageRecord
from flowrun.runtime.models.subtrees import SubtreeBook
from flowrun.types import Usage


def cost_of(usage: Usage, config: ModelConfig) -> float | None:
    """One call's cost: the model's `price:`, else the bundled price table's, else None."""
    return cost_usd(usage, config)


def price_label(config: ModelConfig) -> str:
    """usage.json's word for where a model's cost comes from."""
    source = price_source(config)
    return f"genai-prices {table_version()}" if source == "table" else source


@dataclass
class UsageLine:
    agent: str
    model: str
    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    price: str = "unknown"  # where its cost comes from (price_label)

    def to_dict(self) -> AgentModelUsage:
        u = self.usage
        counts = TokenCounts(
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            cache_read_tokens=u.cache_read_tokens,
            cache_write_tokens=u.cache_write_tokens,
        )
        return AgentModelUsage(
            agent=self.agent, model=self.model, calls=self.calls, usage=counts, cost_usd=self.cost_usd
        )


class UsageBook:
    def __init__(self) -> None:
        self.lines: dict[tuple[str, str], UsageLine] = {}
        self.subtrees = SubtreeBook()  # per agent and everything it called; per-call budgets
        self.fallback_calls: dict[str, int] = {}  # model -> calls it served for another model

    def add(self, agent: str, config: ModelConfig, usage: Usage, fallback: bool = False) -> None:
        line = self.lines.setdefault((agent, config.name), UsageLine(agent, config.name))
        if line.calls == 0:
            line.price = price_label(config)
        line.calls += 1
        line.usage = line.usage + usage
        cost = cost_of(usage, config)
        if cost is not None:
            line.cost_usd = (line.cost_usd or 0.0) + cost
        if fallback:
            self.fallback_calls[config.name] = self.fallback_calls.get(config.name, 0) + 1

    def by_model(self) -> dict[str, ModelUsage]:
        """Calls, tokens and cost per model over all agents; `fallback_calls`: the calls it
        answered in place of another model of a fallback chain."""
        out: dict[str, ModelUsage] = {}
        for line in self.lines.values():
            entry = out.setdefault(line.model, ModelUsage(calls=0, tokens=0, cost_usd=None, fallback_calls=0))
            entry["calls"] += line.calls
            entry["tokens"] += line.usage.total
            if line.cost_usd is not None:
                entry["cost_usd"] = round((entry["cost_usd"] or 0.0) + line.cost_usd, 6)
            entry["fallback_calls"] = self.fallback_calls.get(line.model, 0)
            entry["price"] = line.price
        return out

    @property
    def total_tokens(self) -> int:
        return sum(line.usage.total for line in self.lines.values())

    @property
    def total_cost(self) -> float:
        return sum(line.cost_usd or 0.0 for line in self.lines.values())

    @property
    def priced(self) -> bool:
        return any(line.cost_usd is not None for line in self.lines.values())

    def to_dict(self) -> UsageRecord:
        return {
            "total_tokens": self.total_tokens,
            "total_cost_usd": round(self.total_cost, 6) if self.priced else None,
            "by_agent_model": [line.to_dict() for line in self.lines.values()],
            "by_model": self.by_model(),
            "by_subtree": self.subtrees.to_list(),
        }
