"""A worker process of the local backend's process pool (batch/processes.py), started by the
batch's parent as `python -m flowrun.batch.worker CONFIG`: it loads the workflow once, then runs
the jobs the parent sends, as tasks of its event loop, exactly as batch/local.py runs them in
one process, and reports to the parent (the messages are in batch/protocol.py).

- The protocol has private copies of fds 0 and 1; fd 1 then points at stderr and fd 0 at
  /dev/null, so a stray `print` or a child process that inherits them cannot corrupt it.
- Rate limits stay the batch's: the worker's rate-limit book asks the parent for each call's
  start time (the parent answers from one book for every worker).
- The worker ignores SIGINT (Ctrl-C reaches the whole process group): the parent decides. The
  end of its input (the parent closed it, or died) and SIGTERM stop it: the running items are
  cancelled (their runs end `cancelled`, resumable), reported, and the worker exits.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NoReturn

from flowrun import collector
from flowrun.api import Workflow, load
from flowrun.batch import protocol
from flowrun.batch.folder import ItemResult
from flowrun.batch.jobs import Job, cost_listener, relative_run_dir, run_job, stopped
from flowrun.errors import FlowrunError
from flowrun.runtime.models import rate_limits

CLOSE_S = 10.0  # at most this long to hand the last messages to a parent that stopped reading
INTERNAL_ERROR = 70


class Channel:
    """The worker's side of the pipe to the parent: messages written without blocking the loop,
    in order; usable from any thread (an event may come from a tool's worker thread)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, transport: asyncio.WriteTransport) -> None:
        self.loop = loop
        self.transport = transport
        self.thread = threading.get_ident()

    def send(self, message: Mapping[str, object]) -> None:
        data = protocol.encode(message)
        if threading.get_ident() == self.thread:
            self._write(data)
        else:
            self.loop.call_soon_threadsafe(self._write, data)

    def _write(self, data: bytes) -> None:
        if not self.transport.is_closing():  # the parent is gone: nobody to tell
            self.transport.write(data)


class _Closed(asyncio.Protocol):
    def __init__(self) -> None:
        self.lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(None)


class ParentBook:
    """The worker's rate-limit book: every start time comes from the parent's one book."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.waiting: dict[int, asyncio.Future[float]] = {}
        self.next_id = 0

    def reserve(self, limit: rate_limits.Limit, tokens: int) -> Awaitable[float]:
        self.next_id += 1
        answer: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = answer
        self.channel.send(
            {"op": "reserve", "id": self.next_id, "limit": protocol.limit_dict(limit), "tokens": tokens}
        )
        return answer

    def settle(self, limit: rate_limits.Limit, estimated: int, actual: int) -> None:
        message = {"op": "settle", "limit": protocol.limit_dict(limit), "estimated": estimated}
        self.channel.send({**message, "actual": actual})

    def answered(self, reserve_id: int, delay: float) -> None:
        answer = self.waiting.pop(reserve_id, None)
        if answer is not None and not answer.done():  # a cancelled call no longer waits
            answer.set_result(delay)


class Worker:
    def __init__(self, workflow: Workflow, channel: Channel, book: ParentBook) -> None:
        self.workflow = workflow
        self.channel = channel
        self.book = book
        self.items: dict[str, asyncio.Task[None]] = {}

    async def serve(self, reader: asyncio.StreamReader) -> None:
        """Run what the parent sends until its input ends or SIGTERM; then stop the running items."""
        loop = asyncio.get_running_loop()
        term = asyncio.Event()
        loop.add_signal_handler(signal.SIGTERM, term.set)
        reading = asyncio.create_task(self._read(reader))
        termed = asyncio.create_task(term.wait())
        try:
            await asyncio.wait([reading, termed], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (reading, termed):
                task.cancel()
            self.stop()
            await asyncio.gather(reading, termed, *self.items.values(), return_exceptions=True)

    async def _read(self, reader: asyncio.StreamReader) -> None:
        while line := await reader.readline():
            message = protocol.decode(line)
            if message is not None:
                self._dispatch(message)

    def _dispatch(self, message: dict[str, Any]) -> None:
        op = message["op"]
        if op == "job":
            job = protocol.job_of(message["job"])
            task = asyncio.create_task(self._run(job))
            task.add_done_callback(lambda done: self._stopped_before_start(job, done))
            self.items[job.item_id] = task
        elif op == "reserved":
            self.book.answered(int(message["id"]), float(message["delay"]))
        elif op == "stop":
            self.stop()

    def stop(self) -> None:
        for task in self.items.values():
            task.cancel()

    async def _run(self, job: Job) -> None:
        try:
            result = await run_job(job, cost_listener(job.item_id, self._spent), self.workflow)
        except asyncio.CancelledError:
            result = stopped(job)  # `cancelled` or `interrupted` (resumable), or not started
        except Exception as e:  # run_job makes every ending a result; this is a flowrun bug
            result = ItemResult(
                id=job.item_id,
                line=job.line,
                status="failed",
                run_dir=relative_run_dir(job),
                error=f"internal error: {type(e).__name__}: {e}"[:500],
            )
        finally:
            self.items.pop(job.item_id, None)
        self.channel.send(protocol.result_message(result))

    def _stopped_before_start(self, job: Job, task: asyncio.Task[None]) -> None:
        """A job stopped before its task ran a line (the stop came with it) is reported too."""
        if task.cancelled():
            self.items.pop(job.item_id, None)
            self.channel.send(protocol.result_message(stopped(job)))

    def _spent(self, item_id: str, cost_usd: float) -> None:
        self.channel.send({"op": "spent", "item": item_id, "usd": cost_usd})


# ---------------------------------------------------------------- the process


def _take_protocol_fds() -> tuple[int, int]:
    """Private copies of stdin and stdout for the protocol (not inherited by child processes);
    fd 0 becomes /dev/null and fd 1 a copy of stderr."""
    to_parent, from_parent = os.dup(1), os.dup(0)
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return to_parent, from_parent


async def _connect(to_parent: int, from_parent: int) -> tuple[Channel, _Closed, asyncio.StreamReader]:
    loop = asyncio.get_running_loop()
    transport, closed = await loop.connect_write_pipe(_Closed, os.fdopen(to_parent, "wb", buffering=0))
    reader = asyncio.StreamReader(limit=protocol.LINE_LIMIT)
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(from_parent, "rb", buffering=0)
    )
    return Channel(loop, transport), closed, reader


def _load(config: dict[str, Any]) -> Workflow:
    overrides: list[str] | dict[str, object] = config.get("overrides") or []
    return load(config["workflow"], overrides)


async def _warm(workflow: Workflow) -> None:
    """Before saying ready, what the first run of this process would wait for (`warm_imports`,
    in a thread). The worker was started while the parent plans the items, so this overlaps
    the plan instead of the first items' calls."""
    await asyncio.to_thread(warm_imports, workflow)


def warm_imports(workflow: Workflow) -> None:
    """What a worker's first run would wait for: the SDKs of the workflow's models (and the
    HTTP client), the price table when answers are priced from it, and the clients' SSL
    context. A failure is left for the first call to report, as in one process."""
    from flowrun.providers import prices
    from flowrun.providers.clients import import_sdk_now, keep_imported, ssl_context
    from flowrun.runtime.models.prefetch import sdk_needs

    with contextlib.suppress(Exception):
        sdks, also, priced = sdk_needs(workflow.project, workflow.spec, workflow.default_models())
        for sdk in sdks:
            import_sdk_now(sdk, *also)
        if priced:
            prices.warm()
        if "aiohttp" in also:
            ssl_context()
        keep_imported()  # the price table too: the collector's passes skip it from now on


async def serve(config: dict[str, Any], to_parent: int, from_parent: int) -> int:
    channel, closed, reader = await _connect(to_parent, from_parent)
    try:
        workflow = _load(config)
    except FlowrunError as e:
        channel.send({"op": "error", "message": e.message, "hint": e.hint, "exit_code": e.exit_code})
        return await _close(channel, closed, e.exit_code)
    except Exception as e:
        message = f"internal error: {type(e).__name__}: {e}"
        channel.send({"op": "error", "message": message, "hint": None, "exit_code": INTERNAL_ERROR})
        return await _close(channel, closed, INTERNAL_ERROR)
    await _warm(workflow)
    return await _serve_loaded(workflow, channel, closed, reader)


async def _serve_loaded(
    workflow: Workflow, channel: Channel, closed: _Closed, reader: asyncio.StreamReader
) -> int:
    book = ParentBook(channel)
    rate_limits.use_book(book)
    channel.send({"op": "ready", "pid": os.getpid()})
    await Worker(workflow, channel, book).serve(reader)
    return await _close(channel, closed, 0)


async def _serve_forked(workflow: Workflow, to_parent: int, from_parent: int) -> int:
    channel, closed, reader = await _connect(to_parent, from_parent)
    return await _serve_loaded(workflow, channel, closed, reader)


def run_forked(workflow: Workflow) -> int:
    """The worker's life in a process forked from the batch's (batch/forked.py), with the parent's
    pipes already on fds 0-2 and the workflow, its SDKs and its price table already in memory;
    its exit status."""
    to_parent, from_parent = _take_protocol_fds()  # (SIGINT is already ignore_interrupt's: forked.py)
    return asyncio.run(_serve_forked(workflow, to_parent, from_parent))


async def _close(channel: Channel, closed: _Closed, code: int) -> int:
    """Hand the last messages over, then end."""
    channel.transport.close()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(closed.lost), CLOSE_S)
    return code


def main(argv: list[str] | None = None) -> NoReturn:
    collector.tune()
    to_parent, from_parent = _take_protocol_fds()
    # Ctrl-C reaches the parent too: it decides. A handler, not SIG_IGN, which the processes
    # that tools start would inherit
    signal.signal(signal.SIGINT, ignore_interrupt)
    args = sys.argv[1:] if argv is None else argv
    config = json.loads(args[0])
    code = asyncio.run(serve(config, to_parent, from_parent))
    _leave(code)


def ignore_interrupt(signum: int, frame: object) -> None:
    """SIGINT: the parent tells this worker when to stop."""


def _leave(code: int) -> NoReturn:
    """Exit without the interpreter's module teardown once everything is written (as the
    command line does, cli/exit.py): the parent waits for its workers at the end of a batch."""
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)
    exit_now(code)


def exit_now(code: int) -> NoReturn:
    """Run the exit handlers, flush the standard streams and leave, without module teardown
    (a forked worker's way out too: batch/forked.py, which must not unwind its parent's stack)."""
    run_exit_handlers: Callable[[], None] | None = getattr(atexit, "_run_exitfuncs", None)
    if run_exit_handlers is not None:
        run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
