"""Usage per sub-tree of agents, and the per-call budgets of agents called as tools.

Every agent instance a run starts gets a `Subtree`: the tokens, cost and model calls of that
agent and of every agent it calls, at any depth. An agent-as-tool entry may give each call a
`budget: {max_cost_usd, max_tokens, max_steps}`; it is capped at what the caller's own budgets
(up the tree) have left. Before each model call, the calling agent's sub-tree and every one
above it are checked: one that is used up raises `SubtreeBudgetExceeded`, which the nearest
agent-as-tool call catches and turns into a `partial` result for its caller, so the run goes on
(unlike the workflow's `limits`, which stop the run)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from flowrun.errors import BudgetExceeded
from flowrun.records import SubtreeUsage

LIMITS = ("max_cost_usd", "max_tokens", "max_steps")


class SubtreeBudgetExceeded(BudgetExceeded):
    """A sub-tree's per-call budget is used up (never stops the run: see call_agent)."""

    def __init__(self, message: str, limit: str, tree: Subtree) -> None:
        super().__init__(message, limit)
        self.tree = tree
        self.hint = "the caller may go on with what the sub-agent wrote"


@dataclass(eq=False)
class Subtree:
    agent: str
    agent_id: str
    call_id: str | None
    parent: Subtree | None
    budget: dict[str, float] = field(default_factory=dict)  # the effective (capped) limits
    requested: dict[str, float] = field(default_factory=dict)  # the entry's `budget:` as written
    tokens: int = 0
    cost_usd: float = 0.0
    model_calls: int = 0
    exhausted: str | None = None  # the limit that stopped it

    def chain(self) -> Iterator[Subtree]:
        node: Subtree | None = self
        while node is not None:
            yield node
            node = node.parent

    def spent(self, limit: str) -> float:
        if limit == "max_cost_usd":
            return self.cost_usd
        return self.tokens if limit == "max_tokens" else self.model_calls

    def left(self, limit: str) -> float | None:
        """What this node and every budget above it still allow, or None when nothing limits it."""
        found = [node.budget[limit] - node.spent(limit) for node in self.chain() if limit in node.budget]
        return min(found) if found else None

    def check(self) -> None:
        """Before a model call: raise when this sub-tree or one above it is used up."""
        for node in self.chain():
            for limit, value in node.budget.items():
                if node.spent(limit) >= value:
                    node.exhausted = node.exhausted or limit
                    raise SubtreeBudgetExceeded(
                        f"the budget of {node.agent} ({node.agent_id}) is used up: {limit} {value:g}",
                        limit,
                        node,
                    )

    def start_call(self) -> None:
        for node in self.chain():
            node.model_calls += 1

    def add(self, tokens: int, cost: float | None) -> None:
        for node in self.chain():
            node.tokens += tokens
            node.cost_usd += cost or 0.0

    def to_dict(self) -> SubtreeUsage:
        out: SubtreeUsage = {
            "agent": self.agent,
            "agent_id": self.agent_id,
            "call_id": self.call_id,
            "parent": self.parent.agent_id if self.parent else None,
            "tokens": self.tokens,
            "cost_usd": round(self.cost_usd, 6),
            "model_calls": self.model_calls,
        }
        if self.budget:
            out["budget"], out["exhausted"] = dict(self.budget), self.exhausted
        return out


class SubtreeBook:
    """Every sub-tree of a run, in the order the agents started (for usage.json)."""

    def __init__(self) -> None:
        self.trees: list[Subtree] = []

    def open(
        self,
        agent: str,
        agent_id: str,
        call_id: str | None = None,
        parent: Subtree | None = None,
        budget: Mapping[str, float | None] | None = None,
    ) -> Subtree:
        requested = {k: float(v) for k, v in (budget or {}).items() if k in LIMITS and v is not None}
        effective = dict(requested)
        if parent is not None:
            for limit in requested:
                left = parent.left(limit)
                if left is not None:
                    effective[limit] = max(min(requested[limit], left), 0.0)
        tree = Subtree(agent, agent_id, call_id, parent, effective, requested)
        self.trees.append(tree)
        return tree

    def to_list(self) -> list[SubtreeUsage]:
        return [tree.to_dict() for tree in self.trees]
