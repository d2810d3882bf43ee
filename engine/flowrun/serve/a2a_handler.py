"""The A2A methods of `flowrun serve a2a` (the a2a-sdk's RequestHandler; its JSON-RPC binding
calls them): SendMessage and SendStreamingMessage start a run of the workflow (or, on a task
that waits, take its decision or resume it), GetTask and ListTasks read run folders,
CancelTask stops the run resumably, SubscribeToTask follows a run's log. The runs are
ServedRuns', the same as `flowrun serve http`'s."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING

from a2a.server.request_handlers import RequestHandler, validate_request_params
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import (
    ExtendedAgentCardNotConfiguredError,
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from flowrun.errors import FlowrunError
from flowrun.paths import is_dir
from flowrun.serve.a2a_tasks import (
    add_message,
    agent_message,
    build_task,
    decision_of,
    inputs_of,
    new_record,
    pending_of,
    read_record,
    run_artifacts,
    task_state,
    write_record,
)
from flowrun.serve.event_feed import POLL_S, LogFollower
from flowrun.serve.served_runs import Conflict, NotFound, ServedRuns

if TYPE_CHECKING:
    from a2a.server.context import ServerCallContext
    from a2a.server.events import Event

    from flowrun.runtime.durable.runs_index import RunEntry

ENDED = (TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED)
STOPPED = (*ENDED, TaskState.TASK_STATE_INPUT_REQUIRED)
SKILL_KEYS = ("skill", "workflow")  # a message's metadata naming the workflow, at the root endpoint


def _params(e: FlowrunError) -> InvalidParamsError:
    return InvalidParamsError(message=e.message + (f" ({e.hint})" if e.hint else ""))


class RunsHandler(RequestHandler):
    """One endpoint: a workflow's (`workflow` set), or the root's (any served workflow, the
    message's metadata `skill` choosing when several are served)."""

    def __init__(self, runs: Callable[[], ServedRuns], workflow: str | None) -> None:
        self.runs = runs  # the server's ServedRuns, made once its loop runs
        self.workflow = workflow

    # ------------------------------------------------------------ reading tasks

    def entry(self, task_id: str) -> RunEntry:
        served = self.runs()
        try:
            found = served.entry(task_id)
        except NotFound:
            raise TaskNotFoundError(f"no task {task_id!r} here") from None
        if self.workflow is not None and found.workflow != self.workflow:
            raise TaskNotFoundError(f"task {task_id!r} is not a task of {self.workflow!r}")
        return found

    async def task(self, task_id: str, artifacts: bool = True) -> Task:
        served = self.runs()
        entry = await asyncio.to_thread(self.entry, task_id)
        return build_task(entry, read_record(served.runs_dir, task_id), artifacts)

    @validate_request_params
    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        from a2a.utils.task import apply_history_length

        return apply_history_length(await self.task(params.id), params)

    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        from flowrun.runtime.durable.runs_index import list_runs

        served = self.runs()
        size = params.page_size if params.HasField("page_size") and params.page_size > 0 else 50
        try:
            offset = int(params.page_token or 0)
        except ValueError:
            given = params.page_token
            raise InvalidParamsError(message=f"page_token {given!r} is not one of this server's") from None
        if not is_dir(served.runs_dir):
            return ListTasksResponse(page_size=size)
        page = await asyncio.to_thread(list_runs, served.runs_dir, workflow=self.workflow, limit=10_000)
        tasks = []
        for entry in page:
            task = build_task(entry, read_record(served.runs_dir, entry.id), params.include_artifacts)
            if params.context_id and task.context_id != params.context_id:
                continue
            if params.status and task.status.state != params.status:
                continue
            tasks.append(task)
        chosen = tasks[offset : offset + size]
        more = str(offset + size) if offset + size < len(tasks) else ""
        return ListTasksResponse(tasks=chosen, next_page_token=more, page_size=size, total_size=len(tasks))

    # ------------------------------------------------------------ cancelling

    @validate_request_params
    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        """Stop the run (it ends cancelled, resumable); a task waiting for input is cancelled
        where it stands."""
        served = self.runs()
        entry = await asyncio.to_thread(self.entry, params.id)
        record = read_record(served.runs_dir, params.id)
        if task_state(entry, record) in ENDED:
            raise TaskNotCancelableError(f"task {params.id} has ended ({entry.status})")
        # recorded first: whoever sees the run stop sees the task canceled, not input-required
        write_record(served.runs_dir, params.id, {**record, "canceled": True})
        if served.running(params.id):
            try:
                served.stop(params.id)
            except Conflict as e:
                write_record(served.runs_dir, params.id, record)
                raise TaskNotCancelableError(e.message) from None
            await self.settled(params.id)
        return await self.task(params.id)

    async def settled(self, run_id: str) -> None:
        """Until the run is no longer running (this server's task done, its folder's lock free)."""
        served = self.runs()
        while True:
            task = served.tasks.get(run_id)
            if (task is None or task.done()) and not served.running(run_id):
                return
            await served.changes.wait(run_id, POLL_S)

    # ------------------------------------------------------------ sending

    async def begin(self, params: SendMessageRequest) -> tuple[str, int]:
        """Start the run a message asks for, or act on the task it names; (run id, the log's
        last seq before: where its stream begins)."""
        served = self.runs()
        message = params.message
        try:
            if message.task_id:
                return await self.follow_up(message)
            workflow = served.workflow(self.chosen(message))
            inputs = inputs_of(workflow, message)
            run_id = await served.start(workflow.name, inputs, None)
        except FlowrunError as e:
            raise _params(e) from None
        context_id = message.context_id or uuid.uuid4().hex
        write_record(served.runs_dir, run_id, new_record(workflow.name, context_id, message))
        return run_id, 0

    def chosen(self, message: Message) -> str:
        served = self.runs()
        if self.workflow is not None:
            return self.workflow
        if len(served.workflows) == 1:
            return next(iter(served.workflows))
        for key in SKILL_KEYS:
            if key in message.metadata:
                return str(message.metadata[key])
        raise InvalidParamsError(
            message="this server serves several workflows: send to one's endpoint "
            "(/a2a/NAME), or name it in the message's metadata as `skill` "
            f"(one of: {', '.join(sorted(served.workflows))})"
        )

    async def follow_up(self, message: Message) -> tuple[str, int]:
        """A message on an existing task: the decision its run waits for, or a resume of a run
        that was stopped (not cancelled)."""
        from flowrun.runtime.durable.runs_index import last_line

        served = self.runs()
        run_id = message.task_id
        entry = await asyncio.to_thread(self.entry, run_id)
        record = read_record(served.runs_dir, run_id)
        if message.context_id and record.get("context_id") not in (None, message.context_id):
            raise InvalidParamsError(message=f"task {run_id} is not of context {message.context_id}")
        state = task_state(entry, record)
        if state == TaskState.TASK_STATE_WORKING:
            raise UnsupportedOperationError(
                message=f"task {run_id} is working: send a message once it needs input (GetTask)"
            )
        if state != TaskState.TASK_STATE_INPUT_REQUIRED:
            raise UnsupportedOperationError(
                message=f"task {run_id} has ended ({entry.status}): send a new message without its task id"
            )
        seq = last_line(entry.path / "events.jsonl").get("seq")
        after = seq if isinstance(seq, int) else 0
        add_message(served.runs_dir, run_id, message)
        pending = pending_of(entry)
        if pending:
            await served.decide(run_id, decision_of(message, pending))
        else:
            await served.resume(run_id)
        return run_id, after

    @validate_request_params
    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        """The task once its run stops (completed, failed, waiting for input), or at once with
        `return_immediately`."""
        from a2a.utils.task import apply_history_length

        run_id, _ = await self.begin(params)
        if not params.configuration.return_immediately:
            await self.settled(run_id)
        return apply_history_length(await self.task(run_id), params.configuration)

    @validate_request_params
    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        run_id, after = await self.begin(params)
        async for event in self.stream(run_id, after):
            yield event

    @validate_request_params
    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        from flowrun.runtime.durable.runs_index import last_line

        task = await self.task(params.id)
        if task.status.state in STOPPED:
            state = TaskState.Name(task.status.state)
            raise UnsupportedOperationError(
                message=f"task {params.id} is not working ({state}): GetTask reads it"
            )
        seq = last_line(self.runs().runs_dir / params.id / "events.jsonl").get("seq")
        async for event in self.stream(params.id, seq if isinstance(seq, int) else 0):
            yield event

    async def stream(self, run_id: str, after: int) -> AsyncGenerator[Event, None]:
        """The task, then a working status with a message for each step of note in the run's
        log after `after`, then (once the run stops) its artifacts and its last status."""
        served = self.runs()
        first = await self.task(run_id, artifacts=False)
        first.status.state = TaskState.TASK_STATE_WORKING
        first.status.ClearField("message")
        yield first
        context_id = first.context_id
        follower = LogFollower(served.runs_dir / run_id / "events.jsonl", after)
        while True:
            lines = await asyncio.to_thread(follower.read)
            for _, kind, line in lines:
                said = progress(kind, line)
                if said:
                    status = TaskStatus(state=TaskState.TASK_STATE_WORKING)
                    status.message.CopyFrom(agent_message(run_id, context_id, said))
                    status.message.metadata.update({"flowrun_event": kind})
                    yield TaskStatusUpdateEvent(task_id=run_id, context_id=context_id, status=status)
            if lines:
                continue
            task = served.tasks.get(run_id)
            if (task is None or task.done()) and not served.running(run_id):
                if await asyncio.to_thread(follower.read):
                    continue  # it wrote more as it ended: read from the top
                break
            await served.changes.wait(run_id, POLL_S)
        last = await self.task(run_id)
        entry = await asyncio.to_thread(self.entry, run_id)
        if last.status.state == TaskState.TASK_STATE_COMPLETED:
            for artifact in run_artifacts(entry):
                yield TaskArtifactUpdateEvent(
                    task_id=run_id, context_id=context_id, artifact=artifact, last_chunk=True
                )
        yield TaskStatusUpdateEvent(task_id=run_id, context_id=context_id, status=last.status)

    # ------------------------------------------------------------ not offered

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError


def progress(kind: str, line: bytes) -> str:
    """A line for people about a log event worth telling a client (an agent starting or
    ending, a tool call); "" for the others."""
    if kind not in ("agent_start", "agent_end", "tool_call"):
        return ""
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return ""
    if not isinstance(event, dict):
        return ""
    who = str(event.get("agent_id") or event.get("agent") or "")
    if kind == "agent_start":
        return f"{who} started"
    if kind == "agent_end":
        return f"{who} ended {event.get('status') or ''}".rstrip()
    return f"{who} calls {event.get('tool')}"
