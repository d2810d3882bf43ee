"""A run folder as one typed summary, the one that `flowrun runs`, `show`, `show --html`, the
HTTP API and the web UI all show: its state and totals as the runs index lists it (the same
row, so a list and a page never disagree), and the fold of its log (runtime/summary/fold.py:
invocations, tree, timeline, usage, decisions) with its conversations.

`read_summary(run_dir)` reads a folder once (a command); `SummaryCache` keeps the folds of the
runs a server shows and feeds them only the lines their logs gained since."""

from __future__ import annotations

import json
import os
import threading
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from flowrun.errors import RunError
from flowrun.events import Event, ModelRequestEvent, ModelResponseEvent, parse_event
from flowrun.paths import is_dir
from flowrun.pinned import open_regular, read_json_object
from flowrun.runtime.durable.event_log import read_events
from flowrun.runtime.durable.runs_index import RunEntry, entry_of, summarize
from flowrun.runtime.summary.conversations import Conversations
from flowrun.runtime.summary.fold import Call, Group, Invocation, Item, Note, RunFold, Span, UsageRow
from flowrun.runtime.summary.per_agent import agent_rows, token_counts, usage_by
from flowrun.states import BY_NAME

LIST_HINT = "pass a run folder such as runs/<run-id>; `flowrun runs` lists them"
REPLAY_SUFFIX = "-replay"  # `flowrun replay RUN` writes RUN-replay beside it


@dataclass
class RunSummary:
    """One run: `entry` is its row of the runs index (state, totals, times, inputs, options),
    `fold` and `conversations` what its log holds."""

    entry: RunEntry
    fold: RunFold
    conversations: Conversations
    meta: dict[str, object] = field(default_factory=dict)  # run.json
    replay: str | None = None  # the folder of its replay, beside it
    read_at: float = field(default_factory=time.time)

    @property
    def status(self) -> str:
        return self.entry.status

    @property
    def message(self) -> str:
        return self.fold.end.message if self.fold.end is not None else ""

    @property
    def workflow_file(self) -> str:
        found = self.meta.get("workflow_file") or (self.fold.start.workflow_file if self.fold.start else "")
        return str(found or "?")

    @property
    def output(self) -> str | None:
        """The workflow's declared output file (relative to the run folder)."""
        output = self.meta.get("output")
        return output if isinstance(output, str) else None

    @property
    def output_files(self) -> list[str]:
        """The declared output and the files agents reported writing, in that order."""
        reported = [f for inst in self.fold.invocations for f in inst.output_files]
        return list(dict.fromkeys([*([self.output] if self.output else []), *reported]))

    def unfinished(self) -> str:
        """What an invocation that never ended is, given the run's state: the state the run
        stopped or ended in (a budget refused, a failure elsewhere), or interrupted (a
        completed run's log that lost its end)."""
        return "interrupted" if self.status == "completed" else self.status

    def cut(self) -> str:
        """What a model or tool call still open at the log's end is: running while the run goes
        on, waiting or cancelled with the run, else interrupted (the timeline's bar and the
        tree's call say the same)."""
        if self.status in ("running", "waiting", "cancelled"):
            return self.status
        return "interrupted"

    def to_dict(self) -> dict[str, object]:
        """The run as the HTTP API sends it (`GET /v1/runs/{id}`) and the web UI draws it."""
        fold, path = self.fold, self.entry.path
        output = self.output
        return {
            **self.entry.to_dict(),
            "resumable": BY_NAME[self.status].resumable if self.status in BY_NAME else False,
            "inputs": self.entry.inputs,
            "options": self.entry.options,
            "workflow_file": self.workflow_file,
            "message": self.message or None,
            "output": output if output and (path / output).is_file() else None,
            "output_files": self.output_files,
            "pending": [p.to_dict() for p in fold.pending.values()] if self.status == "waiting" else [],
            "decisions": [
                {**asdict(d), "ref": d.ref, "text": d.describe(), "said": d.verdict()} for d in fold.decisions
            ],
            "usage": usage_dict(fold),
            "events": fold.events,
            "last_seq": fold.last_seq,
            "tool_calls": fold.tool_calls,
            "tool_errors": fold.tool_errors,
            "retries": fold.retries,
            "agents": agent_rows(fold, self.unfinished()),
            "invocations": [self._invocation(inst) for inst in fold.invocations],
            "tree": [_item(item) for item in fold.roots],
            "notes": [_note(note) for note in fold.notes],
            "spans": [self._span(span) for span in fold.spans],
            "replay": self.replay,
            "now": self.read_at,
        }

    def _invocation(self, inst: Invocation) -> dict[str, object]:
        tokens, cost = inst.subtree()
        return {
            "index": inst.index,
            "agent": inst.agent,
            "agent_id": inst.agent_id,
            "model": inst.model,
            "parent": inst.parent.index if inst.parent is not None else None,
            "call_id": inst.call_id,
            "task": inst.task,
            "session": inst.session,
            "start": inst.start,
            "end": inst.end,
            "status": inst.status or self.unfinished(),
            "steps": inst.steps,
            "usage": token_counts(inst.usage),
            "total_tokens": inst.usage.total,
            "cost_usd": inst.cost_usd,
            "subtree_tokens": tokens,
            "subtree_cost_usd": cost,
            "budget": inst.budget,
            "error": inst.error,
            "output_files": inst.output_files,
            "items": [_item(item) for item in inst.items],
            "calls": {call_id: _call(call, self.cut()) for call_id, call in inst.calls.items()},
        }

    def _span(self, span: Span) -> dict[str, object]:
        out = {k: v for k, v in vars(span).items() if k != "model_name"}
        if span.end is None and span.kind == "wait" and self.status == "waiting":
            return out  # it still waits: the pages draw it to now
        if span.end is None and self.status != "running":  # the run stopped while it was open
            out["end"] = self.fold.last_t
            out["outcome"] = "waiting" if span.kind == "wait" else self.cut()
        return out


def usage_dict(fold: RunFold) -> dict[str, object]:
    """The run's model usage in usage.json's shape, counted from its log."""
    return {
        **token_counts(fold.usage),
        "total_tokens": fold.usage.total,
        "total_cost_usd": fold.cost_usd,
        "by_agent_model": [_row(row) for row in fold.by_agent_model.values()],
        "by_agent": usage_by(fold, lambda row: row.agent, "agent"),
        "by_model": usage_by(fold, lambda row: row.model, "model"),
    }


def _row(row: UsageRow) -> dict[str, object]:
    return {
        "agent": row.agent,
        "model": row.model,
        "calls": row.calls,
        "usage": token_counts(row.usage),
        "cost_usd": row.cost_usd,
    }


def _call(call: Call, cut: str) -> dict[str, object]:
    """A tool call; `cut`: its status while it has no result (see RunSummary.cut)."""
    return {
        "call_id": call.call_id,
        "tool": call.tool,
        "arguments": call.arguments,
        "start": call.start,
        "end": call.end,
        "status": call.status or cut,
        "error": call.error,
        "agents": [inst.index for inst in call.agents],
    }


def _note(note: Note) -> dict[str, object]:
    return {"text": note.text, "level": note.level, "t": note.t, "type": note.type}


def _item(item: Item) -> dict[str, object]:
    """A node of the tree: an invocation or a call by reference, a group (a loop's iteration, a
    step kind's own) with its items, a note."""
    if isinstance(item, Invocation):
        return {"agent": item.index}
    if isinstance(item, Call):
        return {"call": item.call_id}
    if isinstance(item, Group):
        items = [_item(i) for i in item.items]
        return {"group": {"label": item.label, "kind": item.kind, "outcome": item.outcome, "items": items}}
    return {"note": _note(item)}


# ---------------------------------------------------------------- reading a folder


def is_run_folder(run_dir: Path) -> bool:
    return is_dir(run_dir) and ((run_dir / "events.jsonl").is_file() or (run_dir / "run.json").is_file())


def check_run_folder(run_dir: Path) -> None:
    """RunError unless `run_dir` is a run folder."""
    if not is_dir(run_dir):
        raise RunError(f"{run_dir} is not a folder", LIST_HINT)
    if not is_run_folder(run_dir):
        raise RunError(f"{run_dir} has no events.jsonl, so it is not a flowrun run folder", LIST_HINT)


def read_summary(run_dir: Path) -> RunSummary:
    """The summary of one run folder, read now (RunError when it is not one)."""
    check_run_folder(run_dir)
    fold, conversations = RunFold(), Conversations()
    for event in read_events(run_dir / "events.jsonl"):
        fold.feed(event)
        conversations.feed(event)
    return _summary(run_dir, fold, conversations)


def _summary(run_dir: Path, fold: RunFold, conversations: Conversations) -> RunSummary:
    counts = (fold.steps, fold.usage.input_tokens, fold.usage.output_tokens, fold.usage.total, fold.cost_usd)
    row = summarize(run_dir, counts=counts)
    if row is None or not row[1]:
        raise RunError(f"{run_dir} cannot be read", LIST_HINT)
    replay = run_dir.with_name(run_dir.name + REPLAY_SUFFIX)
    return RunSummary(
        entry_of(run_dir.parent, row),
        fold,
        conversations,
        read_json_object(run_dir / "run.json"),
        replay.name if (replay / "events.jsonl").is_file() else None,
    )


class SummaryCache:
    """The folds of the runs a server shows, fed only what each log gained since it was last
    read (a page that follows a live run asks again after every few events). A log made anew
    (another file, or shorter) is read from its start."""

    def __init__(self, limit: int = 64) -> None:
        self.limit = limit
        self._kept: OrderedDict[Path, _Kept] = OrderedDict()
        self._lock = threading.Lock()

    def read(self, run_dir: Path) -> RunSummary:
        check_run_folder(run_dir)
        with self._lock:
            kept = self._kept.pop(run_dir, None) or _Kept()
            self._kept[run_dir] = kept
            while len(self._kept) > self.limit:
                self._kept.popitem(last=False)
        with kept.lock:
            kept.catch_up(run_dir / "events.jsonl")
            return _summary(run_dir, kept.fold, kept.conversations)


@dataclass
class _Kept:
    fold: RunFold = field(default_factory=RunFold)
    conversations: Conversations = field(default_factory=Conversations)
    identity: tuple[int, int] | None = None
    offset: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def catch_up(self, log: Path) -> None:
        try:
            with open_regular(log, pin=False) as f:
                info = os.fstat(f.fileno())
                identity = (info.st_dev, info.st_ino)
                if identity != self.identity or info.st_size < self.offset:
                    self.fold, self.conversations = RunFold(), Conversations()
                    self.identity, self.offset = identity, 0
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return
        whole = data[: data.rfind(b"\n") + 1]  # a line being written is read next time
        self.offset += len(whole)
        for line in whole.splitlines():
            event = _event(line)
            if event is not None:
                self.fold.feed(event)
                self.conversations.feed(event)


def _event(line: bytes) -> Event | None:
    try:
        raw = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return parse_event(raw) if isinstance(raw, dict) else None


# ---------------------------------------------------------------- a replay beside it


def replay_steps(run_dir: Path, replay: str) -> dict[str, object]:
    """The model steps of a run and of its replay side by side, paired by agent instance and
    step: each one's answer (text and tool calls), whether they are the same (answer and request
    digests), and the first that differs (`replay --diff` as the web UI shows it)."""
    return {"name": replay, **compare_steps(run_dir, run_dir.with_name(replay))}


def compare_steps(first: Path, second: Path, requests: bool = True) -> dict[str, object]:
    """The model steps of two runs side by side (see replay_steps): `steps` with each one's
    `recorded` (the first run's answer) and `replayed` (the second's), and `first_difference`.
    Without `requests`, only the answers are compared (two runs of their own: their prompts
    differ by date and run id)."""
    recorded = _steps(read_events(first / "events.jsonl"))
    replayed = _steps(read_events(second / "events.jsonl"))
    rows, first_difference = [], None
    for key in dict.fromkeys([*recorded, *replayed]):
        a, b = recorded.get(key), replayed.get(key)
        same = a is not None and b is not None and (a == b if requests else a[1] == b[1])
        if not same and first_difference is None:
            first_difference = key
        rows.append(
            {"step": key, "recorded": a[1] if a else None, "replayed": b[1] if b else None, "same": same}
        )
    return {"first_difference": first_difference, "steps": rows}


def _steps(events: list[Event]) -> dict[str, tuple[str, str]]:
    """(request digests, answer) of each model step, by `agent_id#step[/purpose]`."""
    digests: dict[str, str] = {}
    out: dict[str, tuple[str, str]] = {}
    for e in events:
        if not isinstance(e, ModelRequestEvent | ModelResponseEvent):
            continue
        key = f"{e.agent_id}#{e.step}" + (f"/{e.purpose}" if e.purpose else "")
        if isinstance(e, ModelRequestEvent):
            digests[key] = f"{e.digest}/{e.system_digest or ''}/{e.tools_digest or ''}"
            continue
        calls = "".join(
            f"\n→ {c.name} {json.dumps(c.arguments, ensure_ascii=False, default=str)}"
            for c in e.response.tool_calls
        )
        out[key] = (digests.get(key, ""), e.response.text + calls)
    return out
