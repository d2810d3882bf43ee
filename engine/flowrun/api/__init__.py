"""The Python API: load a workflow, run it, resume or replay a run folder.

    import flowrun

    wf = flowrun.load("examples/research.yaml")           # ManifestInvalid lists every problem
    result = await wf.run({"question": "..."}, dry_run=True)
    print(result.status, result.output, result.usage["total_tokens"])
    options = flowrun.RunOptions(model="openai:gpt-4o", sandbox="off")   # as run.json records them
    result = await wf.run({"question": "..."}, options, on_event=print)  # the callbacks: keyword arguments

    async with wf.stream({"question": "..."}, dry_run=True) as events:   # typed events as they happen
        async for event in events:
            ...
    print(events.result.status)

Cancelling the task that awaits `run()` stops the run the way Ctrl-C does: the folder is kept,
`run.json` says `interrupted`, and `flowrun.resume(run_dir)` continues it.

The rooms behind this facade: workflow.py (`load`, `Workflow`), launch.py (starting a run in its
folder), resuming.py, replaying.py and recorded.py (a recorded run read again), results.py and
stream.py (what the calls return).
"""

from __future__ import annotations

from flowrun.api.launch import new_run_id
from flowrun.api.replaying import replay, replay_events, replay_options
from flowrun.api.results import ReplayResult, RunResult
from flowrun.api.resuming import resume
from flowrun.api.stream import EventStream
from flowrun.api.workflow import Workflow, load
from flowrun.providers.clients import keep_imported

__all__ = [
    "EventStream",
    "ReplayResult",
    "RunResult",
    "Workflow",
    "load",
    "new_run_id",
    "replay",
    "replay_events",
    "replay_options",
    "resume",
]

keep_imported()  # flowrun's modules live as long as the process (providers/clients.keep_imported)
