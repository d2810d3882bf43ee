"""What a run, a resume and a replay return: the status, the exit code, the answer, the usage and
the run folder (and, for a replay, how it compared with its recording)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from flowrun.records import ReplayDivergence, UsageRecord
from flowrun.runtime.durable.decisions import PendingDecision


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

    @property
    def run_id(self) -> str:
        return self.run_dir.name

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
