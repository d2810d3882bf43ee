"""The Ray backend on a local Ray cluster started once for these tests (`ray_cluster`, in one
xdist group): items as Ray tasks writing their run folders in place or shipping them back, a
rate limit shared by the workers through the coordinator actor, the batch's budget cancelling
running tasks resumably, and the command line joining the cluster by its address."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.cli import run_cli
from support.wire_server import WireServer
from test_batch import CALL_COST, answerer, burst_ok, make_project, question_of, results, write_items

import flowrun

pytestmark = pytest.mark.xdist_group("ray")


def test_items_run_as_ray_tasks_under_a_shared_rate_limit(ray_cluster: str, tmp_path: Path) -> None:
    with WireServer(answerer()) as server:
        workflow = make_project(tmp_path / "p", server, rate_limit="{requests_per_minute: 120}")
        items = write_items(tmp_path / "items.jsonl", [f"q{i}" for i in range(6)])
        out = tmp_path / "out"
        summary = asyncio.run(
            flowrun.run_batch(workflow, items, out=out, concurrency=6, backend="ray", ray_cpus=0.25)
        )
        times = [r.received for r in server.requests]
    assert summary.ok and summary.completed == 6, summary
    assert summary.cost_usd == pytest.approx(6 * 2 * CALL_COST)
    shown = [round(t - min(times), 3) for t in sorted(times)]
    # six workers, one limit (the actor's); each worker's first call also opens its connection
    assert len(times) == 12 and burst_ok(times, 120, jitter_s=1.0), shown
    for line in results(out):
        assert line["status"] == "completed"
        assert (out / line["output"]).read_text().startswith("Answer to: q")
        assert json.loads((out / line["run_dir"] / "run.json").read_text())["status"] == "completed"


def test_workers_ship_run_folders_back(ray_cluster: str, tmp_path: Path) -> None:
    with WireServer(answerer()) as server:
        workflow = make_project(tmp_path / "p", server)
        items = write_items(tmp_path / "items.jsonl", ["a", "b", "c"])
        out = tmp_path / "out"
        summary = asyncio.run(
            flowrun.run_batch(workflow, items, out=out, concurrency=3, backend="ray", ship_runs=True)
        )
    assert summary.ok
    for line in results(out):
        run_dir = out / line["run_dir"]
        assert (run_dir / "answer.md").read_text() == f"Answer to: {question_of_run(run_dir)}\n"
        events = (run_dir / "events.jsonl").read_text().splitlines()
        assert json.loads(events[-1])["type"] == "run_end"


def question_of_run(run_dir: Path) -> str:
    return str(json.loads((run_dir / "run.json").read_text())["inputs"]["question"])


def test_the_budget_cancels_ray_tasks_resumably(ray_cluster: str, tmp_path: Path) -> None:
    with WireServer(answerer(delay_s=0.2)) as server:
        workflow = make_project(tmp_path / "p", server)
        items = write_items(tmp_path / "items.jsonl", [f"q{i}" for i in range(4)])
        out = tmp_path / "out"
        stopped = asyncio.run(
            flowrun.run_batch(workflow, items, out=out, concurrency=1, backend="ray", max_cost_usd=0.05)
        )
        assert stopped.status == "budget_exceeded" and stopped.exit_code == 4
        assert stopped.completed == 1 and stopped.stopped == 1 and stopped.pending == 2
        cancelled = next(r for r in results(out) if r["status"] == "cancelled")
        meta = json.loads((out / cancelled["run_dir"] / "run.json").read_text())
        assert meta["status"] == "cancelled"
        before = len(server.requests)
        done = asyncio.run(flowrun.run_batch(workflow, items, out=out, concurrency=2, backend="ray"))
        later = server.requests[before:]
    assert done.ok and done.completed == 4
    resumed = [r.assistant_turns for r in later if question_of(r) == meta["inputs"]["question"]]
    assert resumed == [1]  # its recorded first call was not asked again


def test_the_command_line_joins_a_cluster_by_address(ray_cluster: str, tmp_path: Path) -> None:
    with WireServer(answerer()) as server:
        workflow = make_project(tmp_path / "p", server)
        items = write_items(tmp_path / "items.jsonl", ["x", "y"])
        out = tmp_path / "out"
        proc = run_cli(
            [
                "batch",
                str(workflow),
                str(items),
                "--out",
                str(out),
                "--backend",
                "ray",
                "--address",
                ray_cluster,
                "--set",
                "models.m.max_tokens=77",  # each worker loads the workflow with it
            ],
            cwd=tmp_path,
            timeout=240,
        )
    assert proc.returncode == 0, proc.stderr
    assert "2 items: 2 completed, 0 failed" in proc.stdout
    assert sorted(question_of(r) for r in server.requests) == ["x", "x", "y", "y"]
    assert {r.body["max_tokens"] for r in server.requests} == {77}


def test_ray_workers_run_items_with_the_batch_options(ray_cluster: str, tmp_path: Path) -> None:
    """Each Ray task runs its item with the options an in-process batch gives it (run.json)."""
    with WireServer(answerer()) as server:
        workflow = make_project(tmp_path / "p", server)
        items = write_items(tmp_path / "items.jsonl", ["x", "y"])
        options = flowrun.RunOptions(
            dry_run=True, sandbox="off", yes=True, overrides=["models.m.max_tokens=77"]
        )
        seen = {}
        for backend in ("local", "ray"):
            out = tmp_path / backend
            summary = asyncio.run(
                flowrun.run_batch(
                    workflow, items, options, out=out, backend=backend, processes=None, stream=False
                )
            )
            assert summary.ok, summary
            seen[backend] = [
                json.loads((out / r["run_dir"] / "run.json").read_text())["options"] for r in results(out)
            ]
    expected = {**options.to_dict(), "stream": False, "overrides": ["models.m.max_tokens=77"]}
    assert seen["ray"] == seen["local"] == [expected] * 2


def test_a_cluster_that_cannot_be_joined_is_one_line(tmp_path: Path) -> None:
    """A wrong address (no cluster runs there) or a ray:// one without `ray[client]`: one line
    naming the address and what to check, never an internal error; nothing ran."""
    with WireServer(answerer()) as server:
        workflow = make_project(tmp_path / "p", server)
        items = write_items(tmp_path / "items.jsonl", ["x"])
        # (a host that is not there takes Ray a minute and more to give up on: the same path;
        # "auto" finds this session's own cluster)
        for address in ("ray://127.0.0.1:9",):
            out = tmp_path / f"out-{len(address)}"
            args = [
                "batch",
                str(workflow),
                str(items),
                "--out",
                str(out),
                "--backend",
                "ray",
                "--address",
                address,
            ]
            proc = run_cli(args, cwd=tmp_path, env={"RAY_ADDRESS": ""}, timeout=240)
            assert proc.returncode == 1, proc.stdout + proc.stderr
            assert f"error: cannot join the Ray cluster at {address}: " in proc.stderr, proc.stderr
            assert "hint: check the address" in proc.stderr and "internal error" not in proc.stderr
        assert server.requests == []
