"""What a run, a resume and a replay return: the status, the exit code, the answer, the usage and
the run folder (and, for a replay, how it compared with its recording), what each agent had said
(read from the run's summary when asked for), and `read_result`: the result of a run folder as
it stands (a run cancelled, or stopped anywhere)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from flowrun.pinned import read_json_object
from flowrun.records import ReplayDivergence, UsageRecord
from flowrun.runtime.durable.decisions import PendingDecision
from flowrun.states import exit_code

if TYPE_CHECKING:
    from flowrun.runtime.summary.folder import RunSummary


@dataclass(frozen=True, slots=True)
class AgentAnswer:
    """What one agent invocation had said when the run ended or stopped: its last answer in
    words (`said`, "" before it gave one), its status (the run's, `cancelled` or `waiting`,
    for one that had not ended), and its model calls, tokens and cost."""

    agent: str
    agent_id: str  # the instance path from the entry agent down
    status: str
    said: str
    steps: int  # its model calls that answered
    total_tokens: int
    cost_usd: float | None  # None when its model has no price


@dataclass
class RunResult:
    """How a run ended, and where its folder is."""

    status: str  # its state (flowrun/states.py): completed, failed, ..., waiting, cancelled
    exit_code: int  # the CLI's exit code for this status
    message: str  # the final answer, or what went wrong (or what the run waits for)
    output: Path | None  # the workflow's declared output, when written
    usage: UsageRecord  # tokens and cost per agent and model, totals (as usage.json)
    run_dir: Path
    # waiting: the decisions it waits for (take them with flowrun.respond, then flowrun.resume)
    pending: list[PendingDecision] = field(default_factory=list)
    _agents: list[AgentAnswer] | None = field(default=None, repr=False, compare=False)

    @property
    def run_id(self) -> str:
        return self.run_dir.name

    @property
    def agents(self) -> list[AgentAnswer]:
        """What each agent invocation had said, in the order they started (read from the run
        folder's log the first time it is asked for)."""
        if self._agents is None:
            from flowrun.runtime.summary.folder import read_summary

            self._agents = agent_answers(read_summary(self.run_dir))
        return self._agents

    @property
    def ok(self) -> bool:
        return self.status == "completed"


@dataclass
class ReplayResult(RunResult):
    """How a replay ended, next to its recording."""

    recorded_status: str = ""
    declared_output: str | None = None  # the workflow's `output`, relative to the run folder
    # True/False when the workflow declares an output and both runs ended alike; None otherwise
    output_reproduced: bool | None = None
    # where the replay first differed from the recording: {agent, agent_id, step, reason, message}
    # (reason: missing, system, tools or history); None when every call matched
    divergence: ReplayDivergence | None = None
    differences: list[str] = field(default_factory=list)  # what differed there, for people


def read_result(run_dir: str | Path) -> RunResult:
    """The result of a run folder as it stands: its state (a live run's is `running`), its
    last message, its usage (usage.json, else counted from its log), what it waits for and what
    each agent had said. This is what a run cancelled through `RunHandle.cancel()` or a cancelled
    task returns; RunError when `run_dir` is not a run folder."""
    from flowrun.runtime.summary.folder import read_summary, usage_dict

    folder = Path(run_dir)
    summary = read_summary(folder)
    status = summary.status
    recorded = read_json_object(folder / "usage.json")
    usage = recorded if "total_tokens" in recorded else usage_dict(summary.fold)
    output = folder / summary.output if summary.output else None
    return RunResult(
        status=status,
        exit_code=exit_code(status),
        message=summary.message,
        output=output if output is not None and output.is_file() else None,
        usage=cast(UsageRecord, usage),
        run_dir=folder,
        pending=list(summary.fold.pending.values()) if status == "waiting" else [],
        _agents=agent_answers(summary),
    )


def agent_answers(summary: RunSummary) -> list[AgentAnswer]:
    """Each invocation of the run's summary with the last words of its conversation (an agent
    instance called twice has a conversation segment per call, in the same order)."""
    said: dict[str, list[str]] = {}
    for segment in summary.conversations.started:
        words = [turn.text for turn in segment.turns if turn.role == "assistant" and turn.text]
        said.setdefault(segment.instance.agent_id, []).append(words[-1] if words else "")
    seen: Counter[str] = Counter()
    answers = []
    for inst in summary.fold.invocations:
        mine, n = said.get(inst.agent_id, []), seen[inst.agent_id]
        seen[inst.agent_id] += 1
        answers.append(
            AgentAnswer(
                inst.agent,
                inst.agent_id,
                inst.status or summary.unfinished(),
                mine[n] if n < len(mine) else "",
                inst.steps,
                inst.usage.total,
                inst.cost_usd,
            )
        )
    return answers
