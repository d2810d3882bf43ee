"""Taking the decisions a waiting run waits for, from outside it: `respond` records one (a
`decision` event appended to the run's log, with the folder's lock held, as a run writes), and
`expire_decisions` takes those whose deadline passed. Neither continues the run: `flowrun.resume` does,
reading the decisions from the log (runtime/loop/decisions.py). Both are synchronous (a few
file operations); a server calls them in a worker thread (`asyncio.to_thread`)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from flowrun.atomic_files import replace_file
from flowrun.errors import UsageError
from flowrun.events import DecisionEvent
from flowrun.pinned import read_json_object
from flowrun.runtime.durable.decisions import (
    Decision,
    DecisionHistory,
    PendingDecision,
    choose,
    decided,
    open_decisions,
    overdue,
)
from flowrun.runtime.durable.event_log import EventLog, read_events
from flowrun.runtime.durable.run_folder import RunFolderLock, check_records, not_a_run_folder
from flowrun.runtime.durable.runs_index import note_run
from flowrun.runtime.execute import drop_torn_line


def respond(
    run_dir: str | Path,
    call_id: str | None = None,
    *,
    allow: bool | None = None,
    answer: str | None = None,
    grant: float | None = None,
    reason: str | None = None,
    by: str = "python",
    user: str | None = None,
) -> Decision:
    """Take one decision a waiting run waits for, and record it in its log (the run is not
    continued: `flowrun.resume(run_dir)` does that, without asking any model again).

    `call_id` names the request: its tool call id, AGENT_ID/CALL_ID when two agent instances
    share the id, or its `ref` (AGENT_ID/CALL_ID#ATTEMPT), which names that request only: never
    one asked in its place after a resume. It may be left out when only one is pending. An approval
    takes `allow` (True or False); a question takes `answer`; a budget takes `allow` and
    optionally `grant` (how much more of the limit: dollars, tokens, steps or seconds; default
    as much again). `reason` goes to the agent with a denial; `by` says how it was taken
    (cli, python, http, ui, ...) and `user` who, both recorded with the time.

    Decisions past their deadline are taken first (by "deadline"). A request that is not
    pending (never was, already decided, timed out, or of an earlier attempt of the run that
    no longer asks it), or an answer that does not fit it, is a UsageError; RunInUse while a
    process holds the run (it may still be finishing the calls in flight before it waits)."""
    folder = Path(run_dir)
    if not by or not isinstance(by, str):
        raise UsageError("by must say how the decision was taken", "e.g. by='python' (or cli, http, ui)")
    with RunFolderLock(folder, create=False):
        log = _log_of(folder)
        _append(log, overdue(open_decisions(read_events(log, strict=True))))
        history = DecisionHistory.of(read_events(log, strict=True))
        pending = history.pending()
        if call_id is not None and not any(p.matches(call_id) for p in pending):
            _refuse_stale(history, call_id, folder)
        target = choose(pending, call_id, folder)
        event = decided(target, allow=allow, answer=answer, grant=grant, reason=reason, by=by, user=user)
        _append(log, [event])
        _update_meta(folder, [p for p in pending if p is not target])
    return Decision.from_event(event)


def expire_decisions(run_dir: str | Path, now: float | None = None) -> list[Decision]:
    """Take every pending decision whose deadline passed (approvals and budgets denied,
    questions unanswered), as `respond` and `resume` do first; what was taken."""
    folder = Path(run_dir)
    with RunFolderLock(folder, create=False):
        return expire_locked(folder, now)


def expire_locked(folder: Path, now: float | None = None) -> list[Decision]:
    """`expire_decisions` for a caller that holds the folder's lock (resume)."""
    log = folder / "events.jsonl"
    if not log.is_file():
        return []
    pending = open_decisions(read_events(log, strict=True))
    taken = overdue(pending, now)
    if not taken:
        return []
    _append(log, taken)
    gone = {(e.agent_id, e.call_id) for e in taken}
    _update_meta(folder, [p for p in pending if (p.agent_id, p.call_id) not in gone])
    return [Decision.from_event(e) for e in taken]


def pending_decisions(run_dir: str | Path) -> list[PendingDecision]:
    """What a run waits for, read from its log (no lock: a run may be writing it)."""
    folder = Path(run_dir)
    return open_decisions(read_events(_log_of(folder)))


def _log_of(folder: Path) -> Path:
    log = folder / "events.jsonl"
    if not log.is_file():
        raise not_a_run_folder(folder)
    check_records(folder)
    return log


def _append(log: Path, events: list[DecisionEvent]) -> None:
    if not events:
        return
    drop_torn_line(log)  # a run killed mid-line: the log stays one object per line
    writer = EventLog(log)
    try:
        for event in events:
            writer.emit(event)
    finally:
        writer.close()


def _refuse_stale(history: DecisionHistory, call_id: str, folder: Path) -> None:
    """A request no longer open is not decided: say why (taken, by whom; timed out; left by an
    earlier attempt of the run), never apply the answer to another request."""
    left = history.left(call_id)
    if isinstance(left, Decision):
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(left.at))
        if left.by == "deadline":
            said = f"timed out: nobody decided it before its deadline, so it was {left.verdict()} (at {when})"
        else:
            said = f"was already decided: {left.outcome()} at {when}"
        raise UsageError(
            f"{left.ref} in {folder} {said}",
            "a decision is taken once; `flowrun show` tells how the run stands",
        )
    if isinstance(left, PendingDecision):
        now = history.pending()
        waits = "; ".join(f"{p.ref} ({p.describe()})" for p in now)  # by ref: those requests only
        waits = f"it waits for {waits}" if now else "it waits for no decision"
        raise UsageError(
            f"{call_id} in {folder} belongs to an earlier attempt of the run (attempt {left.attempt or 0}; "
            f"it is on attempt {history.attempt}, which no longer asks it): {waits}",
            "decide what it waits for now; `flowrun show` lists it",
        )


def _update_meta(folder: Path, still_open: list[PendingDecision]) -> None:
    """run.json of a waiting run lists what it still waits for."""
    path = folder / "run.json"
    meta = read_json_object(path)
    if meta.get("status") != "waiting":
        return
    meta["pending"] = [p.to_dict() for p in still_open]
    meta["updated"] = time.time()
    replace_file(path, json.dumps(meta, indent=2, default=str))
    note_run(folder)
