"""The Python API (flowrun.load / Workflow.run / stream / resume / replay) against the scripted
wire server through the real `openai` SDK: typed events, cancellation, resume."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.env import point_sdks
from support.paths import REPO
from support.procs import DEADLINE_S, wait_for
from support.wire_server import Script, WireServer
from test_e2e_research import MATCH, research_script

import flowrun
import flowrun.api
from flowrun.errors import RunError
from flowrun.events import (
    AgentStartEvent,
    Event,
    ModelRequestEvent,
    ModelResponseEvent,
    RunEndEvent,
    RunResumedEvent,
    ToolCallEvent,
)

RESEARCH = REPO / "examples" / "research.yaml"
QUESTION = {"question": "How does Python sort?"}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> WireServer:
    with WireServer(research_script()) as srv:
        point_sdks(monkeypatch, srv, "openai")
        monkeypatch.setenv("FLOWRUN_RETRY_BASE_S", "0.01")
        yield srv


def slow_writer(delay: float) -> Script:
    """The research script with the writer's first answer held back `delay` seconds."""
    script = research_script()
    writer = script.agents["writer"]
    script.agents["writer"] = [dataclasses.replace(writer[0], delay_s=delay), *writer[1:]]
    return script


def test_load_reads_the_workflow_and_its_inputs() -> None:
    wf = flowrun.load(RESEARCH)
    assert isinstance(wf, flowrun.Workflow)
    assert wf.name == "research" and list(wf.inputs) == ["question"]
    assert wf.inputs["question"].is_required


def test_load_raises_one_error_with_every_diagnostic(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nkind: workflow\nname: bad\nentry: nobody\nmodles: {}\n")
    with pytest.raises(flowrun.ManifestInvalid) as caught:
        flowrun.load(bad)
    codes = {d.code for d in caught.value.diagnostics}
    assert {"unknown-key"} <= codes
    assert "bad.yaml:5:1" in str(caught.value)
    assert isinstance(caught.value, flowrun.FlowrunError)


async def test_run_with_a_callback_gets_typed_events(server: WireServer, tmp_path: Path) -> None:
    wf = flowrun.load(RESEARCH)
    events: list[Event] = []
    result = await wf.run(
        QUESTION, runs_dir=tmp_path, run_id="r1", model="openai:gpt-test", on_event=events.append
    )
    assert result.status == "completed" and result.exit_code == 0 and result.ok
    assert result.run_dir == tmp_path / "r1" and result.run_id == "r1"
    assert result.output == tmp_path / "r1" / "report.md" and result.output.read_text().startswith("# Report")
    assert result.usage["total_tokens"] == sum(
        e.response.usage.total for e in events if isinstance(e, ModelResponseEvent)
    )
    assert isinstance(events[0], flowrun.events.RunStartEvent) and isinstance(events[-1], RunEndEvent)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    starts = [e.agent for e in events if isinstance(e, AgentStartEvent)]
    assert starts == ["orchestrator", "searcher", "writer"]
    # what the callback saw is what the log holds
    lines = (result.run_dir / "events.jsonl").read_text().splitlines()
    assert [json.loads(line)["type"] for line in lines] == [e.type for e in events]
    assert len(server.requests) == sum(isinstance(e, ModelRequestEvent) for e in events)


async def test_stream_yields_events_then_the_result(server: WireServer, tmp_path: Path) -> None:
    wf = flowrun.load(RESEARCH)
    seen: list[str] = []
    async with wf.stream(QUESTION, runs_dir=tmp_path, model="openai:gpt-test") as events:
        async for event in events:
            seen.append(event.type)
    assert seen[0] == "run_start" and seen[-1] == "run_end" and "tool_result" in seen
    assert events.result.status == "completed"


def test_run_sync_and_inputs_are_checked(server: WireServer, tmp_path: Path) -> None:
    wf = flowrun.load(RESEARCH)
    with pytest.raises(flowrun.UsageError, match="missing input 'question'"):
        wf.run_sync({}, runs_dir=tmp_path)
    with pytest.raises(flowrun.UsageError, match="unknown input 'qestion'"):
        wf.run_sync({"qestion": "x"}, runs_dir=tmp_path)
    result = wf.run_sync(QUESTION, runs_dir=tmp_path, run_id="sync", dry_run=True)
    assert result.status == "completed" and (tmp_path / "sync" / "report.md").exists()


async def test_cancel_leaves_a_resumable_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with WireServer(slow_writer(30.0)) as srv:
        point_sdks(monkeypatch, srv, "openai")
        wf = flowrun.load(RESEARCH)
        writer_waiting = asyncio.Event()

        def watch(event: Event) -> None:
            if isinstance(event, ModelRequestEvent) and event.agent == "writer":
                writer_waiting.set()

        task = asyncio.create_task(
            wf.run(QUESTION, runs_dir=tmp_path, run_id="c1", model="openai:gpt-test", on_event=watch)
        )
        await asyncio.wait_for(writer_waiting.wait(), DEADLINE_S)

        def writer_asked() -> bool:
            return any(MATCH["writer"] in r.system for r in srv.requests)

        assert await asyncio.to_thread(wait_for, writer_asked)  # the writer's request is on the wire
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        before = len(srv.requests)
    run_dir = tmp_path / "c1"
    assert json.loads((run_dir / "run.json").read_text())["status"] == "cancelled"
    lines = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert lines[-1]["type"] == "run_end" and lines[-1]["status"] == "cancelled"

    with WireServer(research_script()) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        resumed: list[Event] = []
        result = await flowrun.resume(run_dir, on_event=resumed.append)
        after = srv.requests
    assert result.status == "completed" and (run_dir / "report.md").exists()
    assert isinstance(resumed[0], RunResumedEvent)
    # only the writer's unanswered call and what followed went to the model again
    recorded = sum(1 for e in lines if e["type"] == "model_response")
    assert before == recorded + 1
    assert all("You are the orchestrator" not in r.system or r.assistant_turns >= 2 for r in after)
    assert len(after) == 3 + 2  # the writer's three calls, then the orchestrator's last two


async def test_replay_reproduces_without_a_network(server: WireServer, tmp_path: Path) -> None:
    wf = flowrun.load(RESEARCH)
    original = await wf.run(QUESTION, runs_dir=tmp_path, run_id="rec", model="openai:gpt-test")
    served = len(server.requests)
    again = await flowrun.replay(original.run_dir, into=tmp_path / "again")
    assert len(server.requests) == served  # no model request
    assert again.status == "completed" and again.output_reproduced is True
    assert again.recorded_status == "completed"


async def test_two_replays_of_one_run_at_once_get_a_folder_each(tmp_path: Path) -> None:
    """Without --into a replay goes to RUN-replay, then RUN-replay2, ...: two at once both
    complete, each in its own (they used to pick the same one, and the second failed)."""
    wf = flowrun.load(RESEARCH)
    original = await wf.run(QUESTION, runs_dir=tmp_path, run_id="rec", dry_run=True)
    first, second = await asyncio.gather(flowrun.replay(original.run_dir), flowrun.replay(original.run_dir))
    assert {first.run_dir.name, second.run_dir.name} == {"rec-replay", "rec-replay2"}
    assert first.status == second.status == "completed", (first.message, second.message)
    assert first.output_reproduced and second.output_reproduced


async def test_a_replay_that_stops_before_it_begins_leaves_no_folder(tmp_path: Path) -> None:
    """A recording it cannot read (a damaged line mid-log): the error, and no empty RUN-replay
    folder left behind for the next replay to step over."""
    wf = flowrun.load(RESEARCH)
    original = await wf.run(QUESTION, runs_dir=tmp_path, run_id="rec", dry_run=True)
    log = original.run_dir / "events.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join([*lines[:2], "{not json\n", *lines[2:]]))
    with pytest.raises(RunError, match=r"events\.jsonl"):
        await flowrun.replay(original.run_dir)
    assert names(tmp_path) == ["rec"]


def names(folder: Path) -> list[str]:
    """The run folders (not the runs index a run makes beside them)."""
    return sorted(p.name for p in folder.iterdir() if p.is_dir())


def test_import_flowrun_loads_no_heavy_module() -> None:
    code = (
        "import sys, flowrun; heavy = {'pydantic', 'jsonschema', 'rich', 'openai', 'anthropic', 'jinja2',"
        " 'flowrun.api', 'click'}; print(sorted(heavy & set(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_public_names_are_all_exported() -> None:
    for name in flowrun.__all__:
        assert getattr(flowrun, name) is not None
    # each public name is the one `flowrun.api` offers (its facade over api/*.py)
    assert flowrun.RunResult is flowrun.api.RunResult and flowrun.Workflow is flowrun.api.Workflow
    assert flowrun.RunResult.__module__.startswith("flowrun.api.")
    with pytest.raises(AttributeError):
        _ = flowrun.no_such_thing  # type: ignore[attr-defined]


async def test_events_stop_after_a_tool_call_is_cancelled(server: WireServer, tmp_path: Path) -> None:
    """Leaving the stream block early cancels the run; it is left resumable."""
    wf = flowrun.load(RESEARCH)
    async with wf.stream(QUESTION, runs_dir=tmp_path, run_id="early", model="openai:gpt-test") as events:
        async for event in events:
            if isinstance(event, ToolCallEvent):
                break
    meta = json.loads((tmp_path / "early" / "run.json").read_text())
    assert meta["status"] in ("cancelled", "completed")


def test_a_cancel_after_the_outcome_is_decided_leaves_the_run_completed(tmp_path: Path) -> None:
    """A cancel landing while a run writes its end (a batch's budget reached by another item, a
    late Ctrl-C) changes nothing: the caller gets the completed result run.json records."""

    async def main() -> flowrun.RunResult:
        task: asyncio.Task[flowrun.RunResult] | None = None

        def on_event(event: object) -> None:
            if isinstance(event, RunEndEvent) and task is not None:
                task.cancel()  # the end files are written after this event

        wf = flowrun.load(REPO / "examples" / "research.yaml")
        task = asyncio.ensure_future(
            wf.run({"question": "q"}, runs_dir=tmp_path, dry_run=True, on_event=on_event)
        )
        return await task

    result = asyncio.run(main())
    assert result.status == "completed"
    meta = json.loads((result.run_dir / "run.json").read_text())
    assert meta["status"] == "completed"
    assert not (result.run_dir / "run.lock").exists()


async def test_runs_started_in_one_second_get_ids_of_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Generated run ids never clash, whatever the random part gives: here each random value
    comes twice (as two ids of one second in a busy server would), and a folder named by the
    first value of each of the next two minutes is there already (an earlier run's). Every one
    of 12 runs started at once completes in a folder of its own; the earlier one is untouched."""
    import time
    import uuid

    real = uuid.uuid4
    values = iter(
        [uuid.UUID(hex="07" + "0" * 30)] * 2 + [v for v in (real() for _ in range(40)) for _ in (0, 1)]
    )
    monkeypatch.setattr(uuid, "uuid4", lambda: next(values))
    wf = flowrun.load(RESEARCH)
    now = time.time()
    taken = [
        tmp_path / f"{time.strftime('%Y%m%d-%H%M%S', time.localtime(now + s))}-research-070000"
        for s in range(120)
    ]
    for folder in taken:
        folder.mkdir()
        (folder / "run.json").write_text('{"status": "completed"}')
    results = await asyncio.gather(*(wf.run(QUESTION, runs_dir=tmp_path, dry_run=True) for _ in range(12)))
    assert [r.status for r in results] == ["completed"] * 12, [r.message for r in results]
    folders = {r.run_dir for r in results}
    assert len(folders) == 12 and not folders & set(taken)
    assert all((f / "run.json").read_text() == '{"status": "completed"}' for f in taken)
