"""A running workflow's events as an async iterator (`Workflow.stream`), and its result once it
has ended."""

from __future__ import annotations

import asyncio

from flowrun.api.results import RunResult
from flowrun.errors import RunError
from flowrun.events import Event


class EventStream:
    """The events of a running workflow as an async iterator; `result` once it has ended."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._task: asyncio.Task[RunResult] | None = None
        self._loop = asyncio.get_running_loop()

    def attach(self, task: asyncio.Task[RunResult]) -> None:
        self._task = task
        task.add_done_callback(lambda _: self._queue.put_nowait(None))

    def put(self, event: Event) -> None:
        # events may come from a tool's worker thread: hand them to the loop's thread
        self._loop.call_soon_threadsafe(self._queue.put_nowait, event)

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Event:
        event = await self._queue.get()
        if event is None:
            raise StopAsyncIteration
        return event

    @property
    def result(self) -> RunResult:
        if self._task is None or not self._task.done():
            raise RunError("the run has not ended yet", "iterate over all events first")
        return self._task.result()
