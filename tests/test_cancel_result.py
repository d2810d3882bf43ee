"""Cancelling a run from the Python API gives its partial result: `Workflow.start`'s handle
(`cancel()`, or cancelling its task) returns status `cancelled`, what each agent had said, the
usage and cost so far, and the run stays resumable; a cancelled `run()` task's folder reads
the same with `flowrun.read_result`. The talker's second model call is held at the wire server
(the real openai SDK over 127.0.0.1), so the run is cancelled in flight."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.env import point_sdks
from support.project import model, workflow, write_project
from support.runs import meta
from support.served import TALK_PRICE, Held, replies
from support.wire_server import WireServer

import flowrun

COST = (10 * TALK_PRICE["input"] + 5 * TALK_PRICE["output"]) / 1e6  # the first call: 10 in, 5 out


def talk(tmp: Path) -> Path:
    spec = workflow(model("openai", price=TALK_PRICE), entry="talker", task="Do the job.")
    return write_project(tmp, spec, {"talker": ["list_directory"]})


def check_partial(result: flowrun.RunResult) -> None:
    assert (result.status, result.exit_code, result.ok) == ("cancelled", 130, False)
    assert "continue with `flowrun resume" in result.message
    (talker,) = result.agents
    assert (talker.agent, talker.status, talker.said) == ("talker", "cancelled", "Looking at the folder.")
    assert (talker.steps, talker.total_tokens, talker.cost_usd) == (1, 15, pytest.approx(COST))
    assert result.usage["total_tokens"] == 15 and result.usage["total_cost_usd"] == pytest.approx(COST)
    assert meta(result.run_dir)["status"] == "cancelled"


@contextmanager
def talker_held(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[flowrun.Workflow, Held]]:
    """The talk workflow, its model server armed to hold the talker's second call (released
    when the block ends, if the test has not released it)."""
    held = Held(replies())
    held.arm()
    with WireServer(held) as server:
        point_sdks(monkeypatch, server, "openai")
        try:
            yield flowrun.load(talk(tmp)), held
        finally:
            held.release.set()


async def in_flight(held: Held) -> None:
    """Until the talker's second model call is held at the server."""
    assert await asyncio.to_thread(held.holding.wait, 120), "the second model call never came"


@pytest.mark.parametrize("how", ["handle.cancel", "handle.task"])
async def test_a_started_run_cancelled_returns_its_partial_result_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    with talker_held(tmp_path, monkeypatch) as (wf, held):
        handle = wf.start(runs_dir=tmp_path / "runs")
        assert handle.run_dir == tmp_path / "runs" / handle.run_id and "-wf-" in handle.run_id
        await in_flight(held)
        assert not handle.done()
        if how == "handle.cancel":
            assert handle.cancel()
        else:
            handle.task.cancel()
        result = await handle
        held.release.set()
        check_partial(result)
        assert result.run_dir == handle.run_dir and not handle.cancel()  # it had ended
        again = await flowrun.resume(result.run_dir)
    assert again.status == "completed" and again.message == "Talked."
    assert [a.said for a in again.agents] == ["Talked."]


async def test_a_cancelled_run_task_is_read_back_with_read_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with talker_held(tmp_path, monkeypatch) as (wf, held):
        task = asyncio.create_task(wf.run(run_dir=tmp_path / "r"))
        await in_flight(held)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    check_partial(flowrun.read_result(tmp_path / "r"))


async def test_a_start_with_a_mistake_raises_it_from_result(tmp_path: Path) -> None:
    wf = flowrun.load(talk(tmp_path))
    handle = wf.start({"nope": 1}, runs_dir=tmp_path / "runs", dry_run=True)
    with pytest.raises(flowrun.UsageError, match="nope"):
        await handle.result()
    assert not handle.run_dir.exists()
    with pytest.raises(flowrun.RunError, match="not a folder"):
        flowrun.read_result(handle.run_dir)


async def test_a_run_cancelled_before_it_began_says_so(tmp_path: Path) -> None:
    wf = flowrun.load(talk(tmp_path))
    handle = wf.start(runs_dir=tmp_path / "runs", dry_run=True)
    assert handle.cancel()  # before the task ever ran: nothing was made
    result = await handle
    assert (result.status, result.exit_code, result.agents, result.usage) == ("cancelled", 130, [], {})
    assert result.message == "cancelled before it began: nothing was recorded"
    assert not handle.run_dir.exists()
