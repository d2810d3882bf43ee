"""A run going on in the background (`Workflow.start`): its folder known at once, `cancel()` to
stop it the way Ctrl-C does, and `result()` for how it ended. A cancelled run (by `cancel()`, or
by cancelling its `task`) gives its partial result, read from its folder: status `cancelled`,
what each agent had said, usage and cost so far; `flowrun.resume(run_dir)` continues it."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from pathlib import Path

from flowrun.api.results import RunResult, read_result
from flowrun.runtime.summary.folder import is_run_folder
from flowrun.states import exit_code

CANCELLED = "cancelled through the Python API"


class RunHandle:
    """A run started with `Workflow.start`; `await handle` is `await handle.result()`."""

    def __init__(self, task: asyncio.Task[RunResult], run_dir: Path) -> None:
        self.task = task  # the run; cancelling it is cancel()
        self.run_dir = run_dir

    @property
    def run_id(self) -> str:
        return self.run_dir.name

    def done(self) -> bool:
        return self.task.done()

    def cancel(self, reason: str = CANCELLED) -> bool:
        """Stop the run as Ctrl-C does: its tools' processes are stopped, its end is recorded
        (`cancelled`, resumable); `result()` then gives what it had done. False when it had
        ended already."""
        return self.task.cancel(reason)

    async def result(self) -> RunResult:
        """How the run ended, once it has; a cancelled one's partial result (`read_result`).
        A mistake found before the run began (an input, a key) is raised here. Waiting does
        not tie the run to the caller: a caller cancelled meanwhile leaves the run going."""
        await asyncio.wait([self.task])
        if not self.task.cancelled():
            return self.task.result()
        if not await asyncio.to_thread(is_run_folder, self.run_dir):  # stopped before it began
            message = "cancelled before it began: nothing was recorded"
            return RunResult("cancelled", exit_code("cancelled"), message, None, {}, self.run_dir, _agents=[])
        return await asyncio.to_thread(read_result, self.run_dir)

    def __await__(self) -> Generator[object, None, RunResult]:
        return self.result().__await__()
