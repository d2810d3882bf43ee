"""The A2A side of a run of `flowrun serve a2a`: a task is a run (the task id is the run id),
its state read from the run folder, its artifacts the run's answer and declared output file.
What the run folder cannot hold (the task's context id, whether it was cancelled through A2A,
the messages it was sent) is kept in `RUNS_DIR/.a2a/RUN_ID.json`, so tasks survive a restart.
Also here: a message's parts made into a workflow's inputs, and into a decision."""

from __future__ import annotations

import json
import mimetypes
import os
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from flowrun.errors import UsageError
from flowrun.pinned import read_json_object, read_whole
from flowrun.runtime.durable.decisions import PendingDecision, pending_in_meta

if TYPE_CHECKING:
    from a2a.types import Artifact, Message, Part, Task, TaskState

    from flowrun.api import Workflow
    from flowrun.runtime.durable.runs_index import RunEntry

RECORDS = ".a2a"  # under the runs folder: not a run folder (no events.jsonl), skipped by the index
MAX_ARTIFACT_BYTES = 8 << 20  # a bigger output file is named in a text part, not sent
YES = ("yes", "y", "allow", "approve", "approved", "ok")
NO = ("no", "n", "deny", "denied", "reject", "refuse")
ANSWER_HINT = (
    "answer with a message on this task: the answer's text for a question; `yes`, or `no` "
    '(`no: REASON`) for an approval or more budget; or a data part {"allow": true} / {"answer": "..."}'
)


# ---------------------------------------------------------------- the task's own record


def record_path(runs_dir: Path, run_id: str) -> Path:
    return runs_dir / RECORDS / f"{run_id}.json"


def read_record(runs_dir: Path, run_id: str) -> dict[str, object]:
    return read_json_object(record_path(runs_dir, run_id))


def write_record(runs_dir: Path, run_id: str, record: Mapping[str, object]) -> None:
    """Atomically (a reader never sees half a record)."""
    path = record_path(runs_dir, run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    os.replace(temp, path)


def new_record(workflow: str, context_id: str, message: Message) -> dict[str, object]:
    return {"workflow": workflow, "context_id": context_id, "canceled": False, "history": [_dict(message)]}


def add_message(runs_dir: Path, run_id: str, message: Message) -> None:
    record = read_record(runs_dir, run_id)
    history = record.get("history")
    record["history"] = [*(history if isinstance(history, list) else []), _dict(message)]
    write_record(runs_dir, run_id, record)


def _dict(message: Message) -> dict[str, object]:
    from google.protobuf.json_format import MessageToDict

    return MessageToDict(message)


# ---------------------------------------------------------------- run -> task


STOPPED = ("waiting", "cancelled", "interrupted")  # a run that goes on when asked to


def task_state(entry: RunEntry, record: Mapping[str, object]) -> TaskState:
    """working while it runs; input-required while it waits for a decision (or was stopped
    without a cancel: a message resumes it); completed; canceled (a cancel through A2A);
    failed for any other end (failed, max_steps, budget_exceeded)."""
    from a2a.types import TaskState

    if entry.status == "running":
        return TaskState.TASK_STATE_WORKING
    if entry.status == "completed":
        return TaskState.TASK_STATE_COMPLETED
    if record.get("canceled") is True and entry.status in STOPPED:
        return TaskState.TASK_STATE_CANCELED
    if entry.status in STOPPED:
        return TaskState.TASK_STATE_INPUT_REQUIRED
    return TaskState.TASK_STATE_FAILED


def build_task(entry: RunEntry, record: Mapping[str, object], artifacts: bool = True) -> Task:
    """The task of a run as its folder and record stand now."""
    from a2a.types import Message, Task, TaskState, TaskStatus
    from google.protobuf.json_format import ParseDict

    state = task_state(entry, record)
    context_id = str(record.get("context_id") or entry.id)
    history: list[Message] = []
    raw_history = record.get("history")
    for raw in raw_history if isinstance(raw_history, list) else []:
        if isinstance(raw, dict):
            history.append(ParseDict(raw, Message(), ignore_unknown_fields=True))
    status = TaskStatus(state=state)
    status.timestamp.FromSeconds(int(entry.ended or entry.started or 0))
    said = status_text(entry, state)
    if said:
        status.message.CopyFrom(agent_message(entry.id, context_id, said, pending_data(entry, state)))
    task = Task(id=entry.id, context_id=context_id, status=status, history=history)
    task.metadata.update({"flowrun_status": entry.status, "workflow": entry.workflow})
    if artifacts and state == TaskState.TASK_STATE_COMPLETED:
        task.artifacts.extend(run_artifacts(entry))
    return task


def status_text(entry: RunEntry, state: TaskState) -> str:
    from a2a.types import TaskState

    if state == TaskState.TASK_STATE_WORKING:
        return ""
    if state == TaskState.TASK_STATE_INPUT_REQUIRED:
        pending = pending_of(entry)
        if not pending:
            return "the run was stopped before it ended; send any message on this task to resume it"
        asked = [f"- {p.describe()}" for p in pending]
        return "\n".join(["the run waits for a decision:", *asked, ANSWER_HINT])
    if state == TaskState.TASK_STATE_CANCELED:
        return "cancelled (the run stopped resumably: `flowrun resume` continues it)"
    message = final_message(entry.path)
    if state == TaskState.TASK_STATE_FAILED:
        return f"the run ended {entry.status}" + (f": {message}" if message else "")
    return message


def pending_data(entry: RunEntry, state: TaskState) -> list[dict[str, object]]:
    from a2a.types import TaskState

    if state != TaskState.TASK_STATE_INPUT_REQUIRED:
        return []
    return [p.to_dict() for p in pending_of(entry)]


def pending_of(entry: RunEntry) -> list[PendingDecision]:
    if entry.status != "waiting":
        return []
    return pending_in_meta(read_json_object(entry.path / "run.json"))


def agent_message(
    task_id: str, context_id: str, text: str, data: Sequence[Mapping[str, object]] = ()
) -> Message:
    from a2a.types import Message, Part, Role

    parts = [Part(text=text)]
    if data:
        from google.protobuf.json_format import ParseDict

        part = Part(media_type="application/json")
        ParseDict(json.loads(json.dumps(list(data), default=str)), part.data.list_value)
        parts.append(part)
    return Message(
        message_id=uuid.uuid4().hex, role=Role.ROLE_AGENT, task_id=task_id, context_id=context_id, parts=parts
    )


def final_message(folder: Path) -> str:
    """The run's final answer (or what went wrong): its `run_end` event's message."""
    from flowrun.runtime.durable.runs_index import last_line

    last = last_line(folder / "events.jsonl")
    message = last.get("message") if last.get("type") == "run_end" else None
    return message if isinstance(message, str) else ""


def run_artifacts(entry: RunEntry) -> list[Artifact]:
    """The run's answer, and its declared output file (run.json's `output`) when it was written."""
    from a2a.types import Artifact, Part

    found: list[Artifact] = []
    answer = final_message(entry.path)
    if answer:
        found.append(Artifact(artifact_id="answer", name="answer", parts=[Part(text=answer)]))
    output = read_json_object(entry.path / "run.json").get("output")
    if isinstance(output, str) and output:
        part = _file_part(entry.path, output)
        if part is not None:
            found.append(
                Artifact(
                    artifact_id=f"output:{output}",
                    name=output,
                    description="the workflow's declared output",
                    parts=[part],
                )
            )
    return found


def _file_part(folder: Path, name: str) -> Part | None:
    from a2a.types import Part

    path = folder / name
    try:
        real = path.resolve(strict=True)
        if not real.is_relative_to(folder.resolve()) or not real.is_file():
            return None
        size = real.stat().st_size
        media = mimetypes.guess_type(name)[0] or "text/plain"
        if size > MAX_ARTIFACT_BYTES:
            return Part(text=f"{name} is {size} bytes, too large to send: read it in the run folder")
        data = read_whole(real)
    except OSError:
        return None
    try:
        return Part(text=data.decode("utf-8"), filename=Path(name).name, media_type=media)
    except UnicodeDecodeError:
        return Part(raw=data, filename=Path(name).name, media_type=media)


# ---------------------------------------------------------------- message -> inputs, decision


def text_of(message: Message) -> str:
    return "\n".join(part.text for part in message.parts if part.WhichOneof("content") == "text").strip()


def data_of(message: Message) -> dict[str, object]:
    """The message's data parts that are objects, merged (a later key wins); a data part that
    is not an object is a UsageError."""
    from google.protobuf.json_format import MessageToDict

    found: dict[str, object] = {}
    for part in message.parts:
        if part.WhichOneof("content") != "data":
            continue
        value = MessageToDict(part.data)
        if not isinstance(value, dict):
            raise UsageError(
                "a data part must be a JSON object", 'e.g. {"question": "..."}: the inputs by name'
            )
        found.update(value)
    return found


def inputs_of(workflow: Workflow, message: Message) -> dict[str, object]:
    """The run's inputs: a data part's object, and the text for the one text input it leaves
    (the required one, or the only one); text no input takes is a UsageError."""
    specs = workflow.inputs
    inputs = data_of(message)
    for name, value in inputs.items():  # JSON numbers come as doubles through protobuf
        integer = name in specs and specs[name].type == "integer"
        if integer and isinstance(value, float) and value.is_integer():
            inputs[name] = int(value)
    text = text_of(message)
    if not text:
        return inputs
    if not specs:
        return inputs  # the workflow takes no inputs: the text is kept in the task's history
    open_text = [name for name, spec in specs.items() if spec.type == "string" and name not in inputs]
    required = [name for name in open_text if specs[name].is_required]
    target = None
    if len(required) == 1:
        target = required[0]
    elif not required and len(open_text) == 1:
        target = open_text[0]
    if target is None:
        names = ", ".join(f"{n} ({s.type}{', required' if s.is_required else ''})" for n, s in specs.items())
        raise UsageError(
            f"workflow {workflow.name!r} has several inputs ({names}); the text cannot choose one",
            'send a data part with the inputs by name, e.g. {"' + next(iter(specs)) + '": ...}',
        )
    inputs[target] = text
    return inputs


def decision_of(message: Message, pending: list[PendingDecision]) -> dict[str, object]:
    """The decision a follow-up message takes (a body for `ServedRuns.decide`): a data part's
    fields (allow, answer, reason, grant, call, user) as they are; else its text, for the first
    pending decision (or the one the data's `call` names): the answer to a question, yes / no
    (`no: REASON`) for an approval or a budget."""
    body = data_of(message)
    body["via"] = "a2a"
    if any(name in body for name in ("allow", "answer")):
        return body
    text = text_of(message)
    if not text:
        raise UsageError("the task waits for a decision and the message has no text", ANSWER_HINT)
    call = body.get("call")
    named = [p for p in pending if isinstance(call, str) and p.matches(call)]
    if not (named or pending):
        raise UsageError("the task waits for no decision", "send a new message without the task id")
    target = (named or pending)[0]
    if target.kind == "question":
        body["answer"] = text
        body.setdefault("call", target.ref)
        return body
    word, _, reason = text.partition(":")
    word = word.strip().lower().rstrip(".!")
    if word in YES:
        body["allow"] = True
    elif word in NO:
        body["allow"] = False
        if reason.strip():
            body["reason"] = reason.strip()
    else:
        raise UsageError(f"{text[:80]!r} is neither yes nor no, for: {target.describe()}", ANSWER_HINT)
    body.setdefault("call", target.ref)
    return body
