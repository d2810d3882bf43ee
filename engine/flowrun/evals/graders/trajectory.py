"""The `trajectory` grader: which tools the run calls (its events.jsonl `tool_call` events), in
what order and how often; the score is the share of checks that hold."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from flowrun.evals.grading import Checked, GraderKind, GraderScore, scored, short
from flowrun.manifest.checks.eval_files import GraderAt
from flowrun.manifest.eval_specs import GraderBase
from flowrun.manifest.kinds import Problem
from flowrun.manifest.spec_base import Strict

if TYPE_CHECKING:
    from flowrun.evals.outcome import Outcome


class TrajectoryCheck(Strict):
    agent: str | None = Field(
        default=None, description="Only the calls of this agent (default: every agent, sub-agents included)."
    )
    called: list[str] = Field(default_factory=list, description="Tools that must be called at least once.")
    order: list[str] = Field(
        default_factory=list,
        description="Tools that must be called in this order (each call after one of the tool before it).",
    )
    max_calls: dict[str, int] = Field(
        default_factory=dict,
        description="Tool -> the most calls it may get (`'*'`: every tool together).",
    )
    never: list[str] = Field(default_factory=list, description="Tools that must never be called.")


class TrajectoryGrader(GraderBase):
    """The run's tool calls (its events.jsonl `tool_call` events); score: share of checks held."""

    kind: ClassVar[str] = "trajectory"
    trajectory: TrajectoryCheck = Field(description="Which tools the run calls, in what order, how often.")


class TrajectoryKind(GraderKind):
    name = "trajectory"
    spec = TrajectoryGrader

    def check(self, grader: TrajectoryGrader, at: GraderAt) -> list[Problem]:
        bad = [n for n, limit in grader.trajectory.max_calls.items() if limit < 0]
        out: list[Problem] = [(f"max_calls of '{n}' is negative", "give 0 or more", "bad-value") for n in bad]
        if at.tools is not None:
            check = grader.trajectory
            # a tool that must be called must exist; one that must not (or only so often) may be
            # a guard against a tool added later: only a near miss of a known tool is a warning
            needed = list(dict.fromkeys([*check.called, *check.order]))
            guarded = [t for t in dict.fromkeys([*check.never, *check.max_calls]) if t not in (*needed, "*")]
            out += at.tools.problems(check.agent, needed, guarded)
        return out

    def grade(self, grader: TrajectoryGrader, name: str, outcome: Outcome, here: Path) -> GraderScore:
        spec = grader.trajectory
        calls = [c.tool for c in outcome.calls if spec.agent is None or c.agent == spec.agent]
        who = f" by {spec.agent}" if spec.agent else ""
        checks = [Checked(tool in calls, f"{tool} is called{who}") for tool in spec.called]
        if spec.order:
            checks.append(_in_order(spec.order, calls, who))
        for tool, limit in spec.max_calls.items():
            made = len(calls) if tool == "*" else calls.count(tool)
            what = "tool calls" if tool == "*" else f"calls of {tool}"
            checks.append(Checked(made <= limit, f"at most {limit} {what}{who}; {made} made"))
        for tool in spec.never:
            made = calls.count(tool)
            times = f"; called {made} time(s)" if made else ""
            checks.append(Checked(made == 0, f"{tool} is never called{who}{times}"))
        return scored(grader, name, checks)


def _in_order(order: list[str], calls: list[str], who: str) -> Checked:
    position = -1
    for tool in order:
        later = [i for i, called in enumerate(calls) if called == tool and i > position]
        if not later:
            seen = " -> ".join(dict.fromkeys(calls)) or "none"
            return Checked(
                False,
                f"{' before '.join(order)}{who}; {tool} is not called after the one before "
                f"(calls: {short(seen)})",
            )
        position = later[0]
    return Checked(True, f"{' before '.join(order)}{who}")


KIND = TrajectoryKind()
