"""A run's states: the one list that `flowrun runs`, `show`, the HTTP API, the web UI, the exit
codes and the docs read, and the one rule that tells a run's state from its folder."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class State:
    name: str
    meaning: str
    exit_code: int | None  # of a command that ends with the run in this state (None: none does)
    resumable: bool  # `flowrun resume` continues it


STATES: tuple[State, ...] = (
    State(
        "queued",
        "it waits in a queue (`serve http --workers`, `--queue`) for a worker to take it; "
        "nothing of it has run yet",
        None,
        False,
    ),
    State("running", "a live process holds the run folder and works on it", None, False),
    State(
        "waiting",
        "it waits for a decision only a person can take (an approval, a question, more budget); "
        "no process needs to stay up, and it goes on once the decision is taken",
        75,  # EX_TEMPFAIL of sysexits.h: try again later
        True,
    ),
    State("completed", "the entry agent or the last step finished", 0, False),
    State("failed", "an error ended it (a model that kept failing, a step or a guardrail)", 1, True),
    State("max_steps", "an agent used up its `max_steps`", 3, True),
    State("budget_exceeded", "a run limit was reached (tokens, cost, model calls, time)", 4, True),
    State(
        "cancelled",
        "stopped on request (Ctrl-C, SIGTERM, a cancel through the HTTP API, the web UI or the "
        "Python API); its end is recorded",
        130,
        True,
    ),
    State(
        "interrupted",
        "its process ended without recording an end (killed, crashed, the machine lost)",
        130,
        True,
    ),
)
BY_NAME = {state.name: state for state in STATES}
NAMES = tuple(BY_NAME)
ENDED = frozenset({"completed", "failed", "max_steps", "budget_exceeded"})  # what a run ended with
EXIT_CODES = {state.name: state.exit_code for state in STATES if state.exit_code is not None}

# what earlier versions recorded: `interrupted` was a stop on request, `incomplete` a killed run
LEGACY = {"interrupted": "cancelled", "incomplete": "interrupted"}
# a name a user may still type for a state (`flowrun runs --status incomplete`)
RENAMED = {"incomplete": "interrupted"}


def recorded_state(recorded: str | None, ended: str | None) -> str:
    """The state a run folder records: run.json's status, else the status of a `run_end` that
    is the log's last event (a run that died between the two), in today's names. `running` when
    it records no end."""
    status = recorded if recorded and recorded != "running" else ended or recorded or "running"
    return LEGACY.get(status, status)


def current_state(recorded: str | None, ended: str | None, owned: bool) -> str:
    """A run folder's state: `running` while a live process holds its lock, `interrupted` when
    it records no end and nobody does, else what it recorded (`queued`: a queue holds it, and
    no process yet)."""
    if owned:
        return "running"
    status = recorded_state(recorded, ended)
    return "interrupted" if status == "running" else status


def exit_code(status: str) -> int:
    """The exit code of a command whose run ended in `status` (1 for a status not listed)."""
    return EXIT_CODES.get(LEGACY.get(status, status), 1)
