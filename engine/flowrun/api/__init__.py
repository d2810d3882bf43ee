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
`run.json` says `cancelled`, and `flowrun.resume(run_dir)` continues it; `flowrun.read_result(
run_dir)` reads its partial result. `wf.start(...)` runs it in the background instead: its
handle's `cancel()` stops it and `await handle.result()` returns that partial result.

The rooms behind this facade: workflow.py (`load`, `Workflow`), launch.py (starting a run in its
folder), resuming.py, replaying.py and recorded.py (a recorded run read again), results.py,
handle.py and stream.py (what the calls return).
"""

from __future__ import annotations

from flowrun.api.handle import RunHandle
from flowrun.api.launch import new_run_id, tightened
from flowrun.api.recorded import recorded_run
from flowrun.api.replaying import REPLAY_CHANGES, replay, replay_events, replay_options
from flowrun.api.results import AgentAnswer, ReplayResult, RunResult, read_result
from flowrun.api.resuming import RECORDED_FOR_GOOD, RESUME_KEYWORDS, resume
from flowrun.api.stream import EventStream
from flowrun.api.workflow import RUN_KEYWORDS, ModelChoiceArg, RunArguments, RunPlace, Workflow, load
from flowrun.providers.clients import keep_imported

# every name api.py offered before it was split (what `flowrun` exports is flowrun.__all__)
__all__ = [
    "RECORDED_FOR_GOOD",
    "REPLAY_CHANGES",
    "RESUME_KEYWORDS",
    "RUN_KEYWORDS",
    "AgentAnswer",
    "EventStream",
    "ModelChoiceArg",
    "ReplayResult",
    "RunArguments",
    "RunHandle",
    "RunPlace",
    "RunResult",
    "Workflow",
    "load",
    "new_run_id",
    "read_result",
    "recorded_run",
    "replay",
    "replay_events",
    "replay_options",
    "resume",
    "tightened",
]

keep_imported()  # flowrun's modules live as long as the process (providers/clients.keep_imported)
