"""The JSON shapes a run leaves on disk and other modules read back: usage.json, run.json and the
run's recorded options.

One `TypedDict` per shape: the runtime writes it (runtime/models/usage.py, runtime/execute.py,
runtime/options.py) and the API, the CLI views, batch, telemetry and `flowrun test` read it. A
file may have been written by an earlier version or edited by hand, so a reader still uses
`.get()` with a default for what it needs; a `total=False` shape says which keys may be absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NotRequired, TypedDict, cast

# ---------------------------------------------------------------- usage.json (and run_end's usage)


class TokenCounts(TypedDict):
    """A `Usage` as JSON (types.Usage)."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int


class AgentModelUsage(TypedDict):
    """One agent's calls of one model."""

    agent: str
    model: str
    calls: int
    usage: TokenCounts
    cost_usd: float | None  # None when the model has no price


class ModelUsage(TypedDict):
    """One model's calls over all agents; `fallback_calls`: those it answered for another model."""

    calls: int
    tokens: int
    cost_usd: float | None
    fallback_calls: int
    price: NotRequired[str]  # where its cost came from: "manifest", "genai-prices X.Y.Z" or "unknown"


class SubtreeUsage(TypedDict):
    """An agent instance and everything it called (runtime/models/subtrees.py)."""

    agent: str
    agent_id: str
    call_id: str | None
    parent: str | None  # the calling instance's agent_id
    tokens: int
    cost_usd: float
    model_calls: int
    budget: NotRequired[dict[str, float]]  # only with a per-call budget
    exhausted: NotRequired[str | None]


class UsageRecord(TypedDict, total=False):
    """usage.json, and the `usage` of the `run_end` event and of `RunResult` (the runtime writes
    every key; a `run_end` of an earlier version may have none)."""

    total_tokens: int
    total_cost_usd: float | None  # None when no model of the run has a price
    by_agent_model: list[AgentModelUsage]
    by_model: dict[str, ModelUsage]
    by_subtree: list[SubtreeUsage]


# ---------------------------------------------------------------- run.json

Sandbox = Literal["required", "auto", "off"]  # tools.sandbox.Mode (a test keeps them equal)


class OptionsRecord(TypedDict):
    """The run's options as run.json's `options` (and the `run_start` event's) records them:
    `RunOptions.to_dict()`, read back by `RunOptions.from_record`."""

    model: str | None
    agent_models: dict[str, str]
    dry_run: bool
    stream: bool | None
    sandbox: Sandbox | None
    yes: bool
    no_thinking: bool
    workdir: str | None
    verbosity: int
    limits: dict[str, float | None]
    overrides: list[str]
    decisions: str  # wait | refuse: what a decision nobody can take now does
    decide_within: float | None  # seconds a decision may wait
    memory_dir: NotRequired[str | None]  # every memory under DIR/SCOPE/NAME (earlier runs: absent)


class RunRecord(TypedDict, total=False):
    """run.json. The runtime writes every key of the current layout; a folder of an earlier
    version may lack some, and has the flat option keys at the end instead of `options`."""

    run_id: str
    workflow: str
    workflow_file: str
    inputs: dict[str, object]
    status: str  # the state it recorded (flowrun/states.py): running, waiting, completed, ...
    options: OptionsRecord
    chat: str | None  # `flowrun chat`: the agent the user talks to
    output: str | None  # the declared output file, relative to the run folder
    updated: float  # epoch seconds
    pending: list[dict[str, object]]  # a waiting run's open decisions (durable/decisions.py)
    memory: dict[str, object]  # each memory's state when the run started: {scope, folder, files, copy}
    # the options as versions before `options` wrote them (read by RunOptions.from_record)
    model_override: str | None
    agent_models: dict[str, str]
    dry_run: bool
    no_thinking: bool
    workdir: str | None
    overrides: list[str]


class ReplayDivergence(TypedDict):
    """Where a replay first differed from its recording (`ReplayResult.divergence`)."""

    agent: str
    agent_id: str
    step: int
    reason: str  # missing, system, tools, model, history, unused or condition
    message: str


def run_record(decoded: Mapping[str, object]) -> RunRecord:
    """A decoded run.json, or a `run_start` event's line (which has the same keys), as a
    RunRecord: the one place a JSON object read from a run folder becomes one. Its values are
    not checked here; each reader checks what it uses (a file may be old or edited by hand)."""
    return cast(RunRecord, decoded)
