"""`flowrun.resume`: a stopped or waiting run continued from its event log, with the options it
recorded (some may change) and, for a chat or a `--message`, who talks to it."""

from __future__ import annotations

from pathlib import Path
from typing import cast

from flowrun.api.launch import execute, new_run, probe_sandbox
from flowrun.api.recorded import option_changes, recorded_run
from flowrun.api.results import RunResult
from flowrun.api.workflow import Workflow
from flowrun.errors import UsageError
from flowrun.pinned import read_json_object
from flowrun.records import RunRecord, UsageRecord
from flowrun.runtime.decide import expire_locked
from flowrun.runtime.durable.ledger import Ledger
from flowrun.runtime.durable.run_folder import RunFolderLock, never_started, settled_meta
from flowrun.runtime.kinds import kind_records
from flowrun.runtime.loop.approvals import Approver
from flowrun.runtime.models.prefetch import prefetch as prefetch_sdks
from flowrun.runtime.options import (
    AskUser,
    Conversation,
    Interjection,
    OnEvent,
    ReadMessage,
    RunHooks,
    RunOptions,
)
from flowrun.states import exit_code

# what a resumed run keeps from its recording (the rest may change: sandbox, yes, verbosity, ...)
# (memory_dir too: a resumed run writes the memories it was writing)
RECORDED_FOR_GOOD = ("model", "agent_models", "dry_run", "no_thinking", "workdir", "overrides", "memory_dir")
RESUME_KEYWORDS = ("on_event", "ask_user", "approve", "message", "read", "interject")


async def resume(
    run_dir: str | Path,
    *,
    on_event: OnEvent | None = None,
    ask_user: AskUser | None = None,
    approve: Approver | None = None,
    message: str | None = None,
    read: ReadMessage | None = None,
    interject: Interjection | None = None,
    **changes: object,
) -> RunResult:
    """Continue a stopped run (crash, kill, Ctrl-C, cancelled task) or a waiting one from its
    event log: recorded model answers, tool results and decisions (also those taken while it
    waited: `flowrun.respond`, `flowrun approve`) are used again, then the run goes live where
    the log ends; decisions past their deadline are taken first (denied, unanswered). It runs
    with the options it recorded (its models, dry run, `--set`s, workdir, memory folder, sandbox,
    limits ...);
    `changes` (RunOptions field names: `sandbox`, `yes`, `verbosity`, `limits`, `stream`,
    `decisions`, `decide_within`) change them from here on, a None value keeping the recorded
    one. `message` is an instruction from the user to the entry agent (or the chat's
    agent) where the recorded run ends: a finished run continues with it. A chat goes on with
    `read` (as in `Workflow.chat`) when given. The callbacks are `Workflow.run`'s."""
    run_dir = Path(run_dir)
    changes = option_changes(
        changes, RECORDED_FOR_GOOD, "a resumed run keeps its recorded {name}", RESUME_KEYWORDS
    )
    async with RunFolderLock(run_dir, create=False):  # one process at a time, before reading anything
        meta, workflow = recorded_run(run_dir)
        meta = settled_meta(run_dir, meta)  # died after its run_end: it ended
        expire_locked(run_dir)  # decisions past their deadline are taken (by "deadline") first
        talk = _resumed_conversation(meta, workflow, message, read)
        if meta.get("status") == "completed" and talk is None:
            return _recorded_result(run_dir, meta)
        options = RunOptions.from_record(meta).changed(RESUME_KEYWORDS, **changes)
        hooks = RunHooks(on_event, ask_user, approve, talk, interject)
        inputs = dict(meta.get("inputs") or {})
        ledger = None  # a run stopped before its first event starts from the beginning
        if not never_started(run_dir):
            ledger = Ledger.from_events(run_dir / "events.jsonl", "resume", kind_records())
        run = new_run(workflow.project, workflow.loaded, inputs, run_dir, options, hooks, ledger)
        prefetch_sdks(run.project, run.spec, run.models.choice)
        await probe_sandbox(run)
        return await execute(run, resume=ledger is not None)


def _resumed_conversation(
    meta: RunRecord, workflow: Workflow, message: str | None, read: ReadMessage | None
) -> Conversation | None:
    """Who talks to the resumed run: the chat's reader, or `message` once (to the chat's agent
    or the workflow's entry agent); None when nobody does."""
    once = _once(message) if message else None
    if chat := meta.get("chat"):
        reader = once or read
        return Conversation(str(chat), reader, chat=True) if reader is not None else None
    if once is None:
        return None
    if not workflow.spec.entry:
        raise UsageError(
            "--message goes to the entry agent, and this workflow has `steps:` instead",
            "resume without --message",
        )
    return Conversation(workflow.spec.entry, once)


def _once(message: str) -> ReadMessage:
    """A reader that gives `message`, then nothing."""
    sent = False

    async def read(answer: str | None) -> str | None:
        nonlocal sent
        if sent:
            return None
        sent = True
        return message

    return read


def _recorded_result(run_dir: Path, meta: RunRecord) -> RunResult:
    """A finished run as its folder records it (resuming a completed run changes nothing)."""
    status = str(meta.get("status"))
    output = run_dir / name if (name := meta.get("output")) else None
    usage = cast(UsageRecord, read_json_object(run_dir / "usage.json"))
    return RunResult(
        status=status,
        exit_code=exit_code(status),
        message="already completed; nothing to resume",
        output=output if output is not None and output.exists() else None,
        usage=usage,
        run_dir=run_dir,
    )
