"""Issue 11, through the CLI: every fault and bad input ends in a documented exit code and
status with one clear line, the run folder intact and events.jsonl strictly parseable.

1 budgets across concurrent sub-agents, 3 the run-folder lock, 4 SIGTERM, 5 a kill before the
first event, 7 run ids, inputs and unwritable folders, 8 the smaller ones (NUL bytes in tool
arguments, a damaged log, interrupts at the edges, calls in flight at a crash). Item 2 (model
answers) is in test_model_answers.py, item 6 (YAML) in test_yaml_limits.py."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cli import flowrun_cmd, popen_cli, run_cli, run_unprivileged
from support.env import FAST_RETRIES, clean_env, model_env, point_sdks
from support.paths import CRASH_POINTS, REPO
from support.procs import DEADLINE_S, pids_with, reading_stdin, wait_for
from support.project import model, scripted_project, workflow, write_files, write_project
from support.runs import check_log, no_traceback, status_of
from support.wire_server import Reply, Script, ToolCallSpec, WireServer, call
from test_resume_replay import slow_script

import flowrun
from flowrun.events import AgentEndEvent, Event

HELPER = {"prompt": "You help.", "tools": ["list_directory", "write_file"]}


def fan_out(n: int, helper_steps: int = 3) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """A boss calling `n` helpers at once; each helper takes `helper_steps` model calls and
    writes a file on its first."""
    boss = [{"tool_calls": [{"name": "helper", "arguments": {"task": f"part {i}"}} for i in range(n)]}]
    boss.append({"text": "all parts done"})
    note = {"path": "notes.md", "content": "x\n", "mode": "append"}
    helper = [{"tool_calls": [{"name": "write_file", "arguments": note}]}]
    helper += [{"tool_calls": [{"name": "list_directory", "arguments": {}}]}] * (helper_steps - 2)
    helper.append({"text": "part done"})
    agents = {"boss": {"prompt": "You lead.", "tools": ["helper"]}, "helper": HELPER}
    return agents, {"boss": boss, "helper": helper}


# ---------------------------------------------------------------- 1. budgets in concurrent sub-agents


@pytest.mark.parametrize(("helpers", "steps"), [(4, 5), (200, 60)], ids=["4-helpers", "200-helpers"])
def test_budget_crossed_by_concurrent_sub_agents_ends_budget_exceeded(
    tmp_path: Path, helpers: int, steps: int
) -> None:
    agents, replies = fan_out(helpers)
    scripted_project(tmp_path, agents, replies, limits={"max_total_steps": steps, "max_concurrency": 8})
    proc = run_cli(["wf.yaml", "--run-id", "r"], cwd=tmp_path, timeout=300)
    no_traceback(proc)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "max_total_steps" in proc.stderr and f"({steps})" in proc.stderr
    run_dir = tmp_path / "runs" / "r"
    assert status_of(run_dir) == "budget_exceeded"
    events = check_log(run_dir)
    assert sum(e["type"] == "model_request" for e in events) == steps  # no call past the limit
    assert any(e["type"] == "budget_exceeded" and e["limit"] == "max_total_steps" for e in events)
    # the helpers' work so far is kept: their answers in the log, their file on disk
    assert any(e["type"] == "model_response" and e["agent"] == "helper" for e in events)
    assert (run_dir / "notes.md").read_text().startswith("x\n")
    assert not (run_dir / "run.lock").exists()


def test_budget_exceeded_run_resumes_after_the_limit_is_raised(tmp_path: Path) -> None:
    agents, replies = fan_out(4)
    scripted_project(tmp_path, agents, replies, limits={"max_total_steps": 5})
    proc = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    run_dir = tmp_path / "runs" / "r"
    # same limit: stops again at once, nothing asked twice
    proc = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path)
    assert proc.returncode == 4, proc.stderr
    wf = tmp_path / "wf.yaml"
    wf.write_text(wf.read_text().replace("max_total_steps: 5", "max_total_steps: 100"))
    proc = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    events = check_log(run_dir)
    assert [e["status"] for e in events if e["type"] == "run_end"] == [
        "budget_exceeded",
        "budget_exceeded",
        "completed",
    ]
    calls = [(e["agent_id"], e["step"]) for e in events if e["type"] == "model_response"]
    assert len(calls) == len(set(calls)) == 1 + 4 * 3 + 1  # every model call answered once


def test_budget_in_the_research_roster_with_parallel_searchers(tmp_path: Path) -> None:
    """The issue's case: research.yaml with `max_total_steps: 5`, the orchestrator sending
    three searchers at once, over the real anthropic SDK."""
    research = (
        (REPO / "examples" / "research.yaml")
        .read_text()
        .replace("max_total_steps: 300", "max_total_steps: 5")
    )
    (tmp_path / "research.yaml").write_text(research)
    script = slow_script(0)
    first = script.agents["orchestrator"][0]
    script.agents["orchestrator"][0] = Reply(tool_calls=first.tool_calls * 3)
    with WireServer(script) as server:
        proc = run_cli(
            ["research.yaml", "--question", "q", "--run-id", "r", "-q"],
            cwd=tmp_path,
            env=model_env(server, "anthropic", **FAST_RETRIES),
        )
    no_traceback(proc)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    run_dir = tmp_path / "runs" / "r"
    assert status_of(run_dir) == "budget_exceeded"
    check_log(run_dir)


def test_sub_agents_appending_to_one_file_at_once_lose_nothing(tmp_path: Path) -> None:
    """40 helpers at once, each appending its line to one file and inserting one into
    another: every line is there once (appends and edits are one at a time per file)."""
    boss = [{"tool_calls": [{"name": "helper", "arguments": {"task": f"part {i}"}} for i in range(40)]}]
    boss.append({"text": "all parts done"})
    append = {"path": "notes.md", "content": "note\n", "mode": "append"}
    insert = {"path": "list.md", "insert_line": 1, "position": "after", "new_content": "entry"}
    helper = [
        {
            "tool_calls": [
                {"name": "write_file", "arguments": append},
                {"name": "edit_file", "arguments": insert},
            ]
        },
        {"text": "part done"},
    ]
    agents = {
        "boss": {"prompt": "You lead.", "tools": ["helper"]},
        "helper": {"prompt": "You help.", "tools": ["write_file", "edit_file"]},
    }
    scripted_project(
        tmp_path,
        agents,
        {"boss": boss, "helper": helper},
        limits={"max_concurrency": 40},
        workspace={"files": {"list.md": "# entries\n"}},
    )
    proc = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = tmp_path / "runs" / "r"
    events = check_log(run_dir)
    results = [e["result"] for e in events if e["type"] == "tool_result" and e["tool"] != "helper"]
    assert len(results) == 80 and all(r["status"] == "success" for r in results), results[:3]
    assert (run_dir / "notes.md").read_text() == "note\n" * 40
    assert (run_dir / "list.md").read_text() == "# entries\n" + "entry\n" * 40


def foreach_project(tmp: Path, limits: dict[str, Any]) -> Path:
    """A `foreach:` step over the `items` input, 8 branches at once; each branch appends one
    line (its item) to notes.md, then looks around, then answers."""
    note = {"path": "notes.md", "content": "item\n", "mode": "append"}
    helper = [
        {"tool_calls": [{"name": "write_file", "arguments": note}]},
        {"tool_calls": [{"name": "list_directory", "arguments": {}}]},
        {"text": "part done"},
    ]
    step = {"agent": "helper", "task": "Do {{ item }}."}
    foreach = {"input": "items", "concurrency": 8, "collect": "results.json", "step": step}
    scripted_project(
        tmp,
        {"helper": HELPER},
        {"helper": helper},
        limits=limits,
        inputs={"items": {"type": "list", "description": "things"}},
        steps=[{"foreach": foreach}],
        entry=None,
    )
    return tmp


@pytest.mark.parametrize(
    ("limit", "value", "raised"),
    [("max_total_steps", 25, 1000), ("max_total_tokens", 90, 10**9)],
    ids=["steps", "tokens"],
)
def test_budget_crossed_inside_a_foreach_step_stops_every_branch_and_resumes(
    tmp_path: Path, limit: str, value: int, raised: int
) -> None:
    """Branches of a fan-out step share the run's budget: the first to cross it stops the
    others; nothing they wrote is lost, and after the limit is raised `resume` finishes every
    item with each model call answered once and each append made once."""
    foreach_project(tmp_path, {limit: value})
    items = json.dumps(list(range(20)))
    proc = run_cli(["wf.yaml", "--items", items, "--run-id", "r", "-q"], cwd=tmp_path, timeout=300)
    no_traceback(proc)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert f"error: {limit} (" in proc.stderr
    run_dir = tmp_path / "runs" / "r"
    assert status_of(run_dir) == "budget_exceeded"
    events = check_log(run_dir)
    assert any(e["type"] == "budget_exceeded" and e["limit"] == limit for e in events)
    if limit == "max_total_steps":
        assert sum(e["type"] == "model_request" for e in events) == value
    appended = [e for e in events if e["type"] == "tool_result" and e["tool"] == "write_file"]
    intents = [e for e in events if e["type"] == "tool_intent"]
    lines = (run_dir / "notes.md").read_text().count("item\n")
    assert len(appended) <= lines <= len(intents)  # every logged append is on disk
    assert not (run_dir / "run.lock").exists()

    wf = tmp_path / "wf.yaml"
    wf.write_text(wf.read_text().replace(f"{limit}: {value}", f"{limit}: {raised}"))
    proc = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    events = check_log(run_dir)
    assert [e["status"] for e in events if e["type"] == "run_end"] == ["budget_exceeded", "completed"]
    calls = [(e["agent_id"], e["step"]) for e in events if e["type"] == "model_response"]
    assert len(calls) == len(set(calls)) == 20 * 3
    # nothing lost, nothing twice: every logged append is on disk once; a call in flight at
    # the stop is answered EFFECT_UNKNOWN on resume (not made again): it ran or it did not
    results = [e["result"] for e in events if e["type"] == "tool_result" and e["tool"] == "write_file"]
    done = sum(r["status"] == "success" for r in results)
    unknown = sum((r.get("error") or {}).get("code") == "EFFECT_UNKNOWN" for r in results)
    assert done + unknown == 20
    assert done <= (run_dir / "notes.md").read_text().count("item\n") <= 20
    assert set((run_dir / "notes.md").read_text().splitlines()) == {"item"}
    collected = json.loads((run_dir / "results.json").read_text())
    assert [r["status"] for r in collected] == ["completed"] * 20


# ---------------------------------------------------------------- 3. the run-folder lock


def slow_project(tmp: Path) -> Path:
    """One agent on an anthropic model (slow_server answers it)."""
    spec = workflow(model("anthropic", api_key_env="ANTHROPIC_API_KEY", stream=False), name="slow", entry="w")
    write_project(tmp, spec, {"w": {"prompt": "You are the slow worker.", "tools": ["write_file"]}})
    return tmp


def slow_server(delay_s: float) -> WireServer:
    call = ToolCallSpec("write_file", {"path": "out.md", "content": "once\n", "mode": "append"})
    return WireServer(
        Script({"slow worker": [Reply(tool_calls=[call], delay_s=delay_s), Reply(text="done")]})
    )


def test_two_runs_with_one_run_id_never_share_the_folder(tmp_path: Path) -> None:
    slow_project(tmp_path)
    with slow_server(6) as server:
        env = model_env(server, "anthropic", **FAST_RETRIES)
        first = popen_cli(["wf.yaml", "--run-id", "same", "-q"], tmp_path, env)
        assert wait_for(lambda: (tmp_path / "runs" / "same" / "run.lock").exists())
        second = run_cli(["wf.yaml", "--run-id", "same", "-q"], cwd=tmp_path, env=env)
        out, err = first.communicate(timeout=DEADLINE_S)
        assert first.returncode == 0, out + err
        # after the first ended, the same id is refused as an existing run (not shared either)
        third = run_cli(["wf.yaml", "--run-id", "same", "-q"], cwd=tmp_path, env=env)
    no_traceback(second)
    assert second.returncode == 2
    assert f"error: run is in use by pid {first.pid} (runs/same)" in second.stderr
    assert third.returncode == 2 and "already exists" in third.stderr
    run_dir = tmp_path / "runs" / "same"
    events = check_log(run_dir)
    assert sum(e["type"] == "model_request" for e in events) == 2
    assert (run_dir / "out.md").read_text() == "once\n"
    assert not (run_dir / "run.lock").exists()


def test_one_run_id_started_by_five_processes_at_once_runs_once(tmp_path: Path) -> None:
    """Started at the same instant: one process runs, each other one is refused (in use, or
    already exists once the first has ended), and the folder holds one run."""
    simple_project(tmp_path)
    args = ["wf.yaml", "--topic", "tides", "--run-id", "same", "-q"]
    children = [popen_cli(args, tmp_path) for _ in range(5)]
    results = [(child.wait(timeout=DEADLINE_S), *child.communicate(timeout=DEADLINE_S)) for child in children]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2, 2, 2, 2], results
    for code, out, err in results:
        no_traceback((out, err))
        if code == 2:
            assert "error: run is in use by pid" in err or "already exists" in err, err
    run_dir = tmp_path / "runs" / "same"
    events = check_log(run_dir)
    assert sum(e["type"] == "model_request" for e in events) == 2
    assert (run_dir / "out.md").read_text() == "written\n"


def test_two_resumes_at_once_do_not_double_the_model_calls(tmp_path: Path) -> None:
    slow_project(tmp_path)
    with slow_server(6) as server:
        env = model_env(server, "anthropic", **FAST_RETRIES)
        child = popen_cli(["wf.yaml", "--run-id", "r", "-q"], tmp_path, env)
        run_dir = tmp_path / "runs" / "r"
        assert wait_for(lambda: len(server.requests) == 1)
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=DEADLINE_S)
        before = len(server.requests)
        resumes = [popen_cli(["resume", str(run_dir), "-q"], tmp_path, env) for _ in range(2)]
        results = [(p.wait(timeout=DEADLINE_S), *p.communicate()) for p in resumes]
        asked = len(server.requests) - before
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], results
    assert any("error: run is in use by pid" in err for _, _, err in results)
    assert asked == 2  # the call lost with the kill, then the final answer: once each
    events = check_log(run_dir)
    assert events[-1]["status"] == "completed"
    assert (run_dir / "out.md").read_text() == "once\n"


def test_a_stale_lock_of_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    agents, replies = fan_out(1)
    scripted_project(tmp_path, agents, replies)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    run_dir = tmp_path / "runs" / "r"
    run_dir.mkdir(parents=True)
    (run_dir / "run.lock").write_text(f"{dead.pid}\n")  # what a SIGKILLed owner leaves
    proc = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check_log(run_dir)
    assert not (run_dir / "run.lock").exists()


def test_the_lock_is_released_on_every_exit_path(tmp_path: Path) -> None:
    """Failed (exit 1), budget (4), refused folder (2), Ctrl-C (130), SIGTERM (143): no
    `run.lock` is left and the next process gets the folder."""
    agents, replies = fan_out(2)
    replies["boss"] = [replies["boss"][0]]  # the script ends early: a failed run
    scripted_project(tmp_path, agents, replies)
    proc = run_cli(["wf.yaml", "--run-id", "failed", "-q"], cwd=tmp_path)
    assert proc.returncode == 1 and "script script.yaml has 1 replies" in proc.stderr
    assert not (tmp_path / "runs" / "failed" / "run.lock").exists()
    proc = run_cli(["wf.yaml", "--run-id", "failed", "-q"], cwd=tmp_path)
    assert proc.returncode == 2 and "already exists" in proc.stderr
    assert not (tmp_path / "runs" / "failed" / "run.lock").exists()
    check_log(tmp_path / "runs" / "failed")

    slow_project(tmp_path / "slow")
    for sig, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        with slow_server(30) as server:
            child = popen_cli(
                ["wf.yaml", "--run-id", sig.name, "-q"],
                tmp_path / "slow",
                model_env(server, "anthropic", **FAST_RETRIES),
            )
            assert wait_for(lambda server=server: len(server.requests) == 1)
            child.send_signal(sig)
            _, err = child.communicate(timeout=DEADLINE_S)
        run_dir = tmp_path / "slow" / "runs" / sig.name
        assert child.returncode == code, err
        assert not (run_dir / "run.lock").exists()
        assert status_of(run_dir) == "cancelled"
        check_log(run_dir)


async def test_the_python_api_takes_the_lock_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    slow_project(tmp_path)
    with slow_server(8) as server:
        point_sdks(monkeypatch, server, "anthropic")
        wf = flowrun.load(tmp_path / "wf.yaml")
        runs = tmp_path / "runs"
        first = asyncio.create_task(wf.run(runs_dir=runs, run_id="api"))
        await asyncio.to_thread(wait_for, lambda: len(server.requests) == 1)
        with pytest.raises(flowrun.RunInUse, match=f"in use by pid {os.getpid()}"):
            await wf.run(runs_dir=runs, run_id="api")
        with pytest.raises(flowrun.RunInUse):
            await flowrun.resume(runs / "api")
        # a CLI resume meanwhile is refused with exit 2
        proc = await asyncio.to_thread(
            run_cli,
            ["resume", str(runs / "api"), "-q"],
            tmp_path,
            model_env(server, "anthropic", **FAST_RETRIES),
        )
        assert proc.returncode == 2 and "in use by pid" in proc.stderr
        result = await first
    assert result.status == "completed"
    check_log(runs / "api")
    assert not (runs / "api" / "run.lock").exists()


# ---------------------------------------------------------------- 4. SIGTERM


def test_sigterm_kills_the_sandboxed_children_and_leaves_a_resumable_run(tmp_path: Path) -> None:
    token = f"flowrun-term-{os.getpid()}-{time.monotonic_ns()}"
    command = (
        f"echo ran >> count.txt; (setsid bash -c 'exec -a {token}-orphan sleep 300' &); "
        f"exec -a {token}-main sleep 300"
    )
    agents = {"boss": {"prompt": "You run things.", "tools": ["execute_shell"]}}
    replies = {
        "boss": [
            {"tool_calls": [{"name": "execute_shell", "arguments": {"command": command, "timeout": 600}}]},
            {"text": "done"},
        ]
    }
    scripted_project(tmp_path, agents, replies)
    child = popen_cli(["wf.yaml", "--run-id", "t"], tmp_path)
    try:
        assert wait_for(lambda: len(pids_with(token)) == 2), "the shell children never started"
    finally:
        child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=DEADLINE_S)
    no_traceback((out, err))
    assert child.returncode == 143, out + err
    assert "error: cancelled (SIGTERM)" in err and "flowrun resume runs/t" in err
    assert wait_for(lambda: not pids_with(token)), "a child outlived flowrun"
    run_dir = tmp_path / "runs" / "t"
    assert status_of(run_dir) == "cancelled"
    events = check_log(run_dir)
    assert events[-1]["message"].startswith("cancelled (SIGTERM)")
    assert any(e["type"] == "tool_intent" and e["tool"] == "execute_shell" for e in events)

    proc = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    events = check_log(run_dir)
    # the command that was running is not run a second time: its effect is unknown
    assert (run_dir / "count.txt").read_text() == "ran\n"
    result = next(e["result"] for e in events if e["type"] == "tool_result")
    assert result["error"]["code"] == "EFFECT_UNKNOWN"


# ---------------------------------------------------------------- 5. a kill before the first event


def simple_project(tmp: Path) -> Path:
    agents = {"w": {"prompt": "You write.", "tools": ["write_file"]}}
    call = {"name": "write_file", "arguments": {"path": "out.md", "content": "written\n"}}
    replies = {"w": [{"tool_calls": [call]}, {"text": "written"}]}
    return scripted_project(
        tmp,
        agents,
        replies,
        entry="w",
        inputs={"topic": {"description": "t"}},
        workspace={"files": {"topic.txt": "{{ topic }}\n"}},
    ).parent


def never_started_states(run_dir: Path, dead_pid: int) -> dict[str, dict[str, bytes | None]]:
    """What a kill at each moment between making the folder and the first event leaves."""
    meta = {
        "run_id": run_dir.name,
        "workflow": "wf",
        "workflow_file": str(run_dir.parents[1] / "wf.yaml"),
        "inputs": {"topic": "tides"},
        "status": "running",
    }
    meta_bytes = json.dumps(meta).encode()
    return {
        "empty": {},
        "lock-only": {"run.lock": f"{dead_pid}\n".encode()},
        "log-file": {"run.lock": b"", "flowrun.log": b""},
        "meta": {"run.lock": b"", "flowrun.log": b"", "run.json": meta_bytes},
        "seeded": {"run.json": meta_bytes, "workspace/": None, "events.jsonl": b"", "topic.txt": b"tides\n"},
        "torn-first-event": {
            "run.json": meta_bytes,
            "workspace/": None,
            "events.jsonl": b'{"seq": 1, "t": 1.0, "ty',
        },
    }


@pytest.mark.parametrize("how", ["rerun", "resume"])
def test_a_folder_stopped_before_its_first_event_is_accepted(tmp_path: Path, how: str) -> None:
    simple_project(tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for state, files in never_started_states(tmp_path / "runs" / "x", dead.pid).items():
        run_dir = tmp_path / "runs" / state
        run_dir.mkdir(parents=True)
        for rel, data in files.items():
            if data is None:
                (run_dir / rel).mkdir()
            else:
                (run_dir / rel).write_bytes(data)
        if how == "rerun":
            proc = run_cli(["wf.yaml", "--topic", "tides", "--run-id", state, "-q"], cwd=tmp_path)
            expect = 0
        else:
            proc = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path)
            # with no run.json there is nothing to say which workflow ran: the same id is used again
            expect = 0 if "run.json" in files else 1
        no_traceback(proc)
        assert proc.returncode == expect, (state, proc.stdout + proc.stderr)
        if expect == 1:
            assert "with the same --run-id" in proc.stderr
            continue
        assert status_of(run_dir) == "completed", state
        check_log(run_dir)
        assert (run_dir / "out.md").read_text() == "written\n"
        assert (run_dir / "topic.txt").read_text() == "tides\n"


def test_sigkill_right_after_the_folder_appears_always_leaves_a_usable_folder(tmp_path: Path) -> None:
    """Real kills, as early as the folder can be seen: resume (or the same id again) works."""
    simple_project(tmp_path)
    for attempt in range(4):
        run_id = f"k{attempt}"
        run_dir = tmp_path / "runs" / run_id
        child = popen_cli(["wf.yaml", "--topic", "tides", "--run-id", run_id, "-q"], tmp_path)
        assert wait_for(run_dir.exists, 60)
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=DEADLINE_S)
        proc = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path)
        if proc.returncode == 1 and "same --run-id" in proc.stderr:  # killed before run.json
            proc = run_cli(["wf.yaml", "--topic", "tides", "--run-id", run_id, "-q"], cwd=tmp_path)
        no_traceback(proc)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        check_log(run_dir)
        assert (run_dir / "topic.txt").read_text() == "tides\n"


def test_a_crash_at_each_change_of_the_run_folder_leaves_it_resumable_or_reusable(tmp_path: Path) -> None:
    """The process dies (as with SIGKILL: no cleanup) just before its k-th change to the run
    folder (a folder made, a file opened for writing, a rename, a removal), for every k until
    the run gets through: each time `flowrun resume` finishes the run, or, when the folder has
    no run.json yet, the same --run-id does; the log is strict and the files whole."""
    simple_project(tmp_path)
    runs = tmp_path / "runs"
    crashes = 0
    for at in range(1, 200):
        run_id = f"c{at}"
        run_dir = runs / run_id
        env = {"PYTHONPATH": str(CRASH_POINTS), "FLOWRUN_TEST_CRASH_ROOT": str(runs)}
        env["FLOWRUN_TEST_CRASH_AT"] = str(at)
        proc = run_cli(["wf.yaml", "--topic", "tides", "--run-id", run_id, "-q"], cwd=tmp_path, env=env)
        no_traceback(proc)
        if proc.returncode == 0:  # the run needs fewer changes than `at`: every point was tried
            break
        assert proc.returncode == 137, proc.stdout + proc.stderr
        crashes += 1
        recover = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path)
        if not run_dir.exists():  # died before making it: resume says so, the id is free
            assert recover.returncode == 2 and "does not exist" in recover.stderr
        if recover.returncode != 0:  # no run.json yet: resume says to use the same --run-id
            assert run_dir.exists() or recover.returncode == 2, recover.stderr
            assert not run_dir.exists() or "same --run-id" in recover.stderr, recover.stderr
            recover = run_cli(["wf.yaml", "--topic", "tides", "--run-id", run_id, "-q"], cwd=tmp_path)
        no_traceback(recover)
        assert recover.returncode == 0, (at, recover.stdout + recover.stderr)
        assert status_of(run_dir) == "completed", at
        events = check_log(run_dir)
        assert sum(e["type"] == "run_end" for e in events) == 1, at
        assert (run_dir / "out.md").read_text() == "written\n", at
        assert (run_dir / "topic.txt").read_text() == "tides\n", at
        assert not (run_dir / "run.lock").exists()
    assert crashes >= 15, crashes  # the folder, the lock, run.json, the log, seeds, the tool's write, the end


def test_a_crash_at_each_change_of_a_resume_leaves_it_resumable(tmp_path: Path) -> None:
    """The same for `flowrun resume` of a run stopped after its first tool result: killed
    before its k-th change to the folder, for every k, and resumed again, the run completes
    once, its log strict, the tool's file written once."""
    template = interrupted_run(tmp_path / "t")
    runs = tmp_path / "runs"
    runs.mkdir()
    crashes = 0
    for at in range(1, 200):
        run_dir = runs / f"c{at}"
        shutil.copytree(template, run_dir)
        env = {"PYTHONPATH": str(CRASH_POINTS), "FLOWRUN_TEST_CRASH_ROOT": str(runs)}
        env["FLOWRUN_TEST_CRASH_AT"] = str(at)
        proc = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path / "t", env=env)
        no_traceback(proc)
        if proc.returncode == 0:
            break
        assert proc.returncode == 137, proc.stdout + proc.stderr
        crashes += 1
        again = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path / "t")
        no_traceback(again)
        assert again.returncode == 0, (at, again.stdout + again.stderr)
        assert status_of(run_dir) == "completed", at
        events = check_log(run_dir)
        assert sum(e["type"] == "run_end" for e in events) == 1, at
        assert sum(e["type"] == "tool_result" for e in events) == 1, at
        assert (run_dir / "out.md").read_text() == "written\n", at
    assert crashes >= 8, crashes


# ---------------------------------------------------------------- 7. run ids, inputs, folders


@pytest.mark.parametrize("run_id", ["../../x", "/tmp/abs-run-id", "a/b", "..", ".", "", "a\nb", "x" * 300])
def test_run_ids_are_names_not_paths(tmp_path: Path, run_id: str) -> None:
    simple_project(tmp_path / "p")
    proc = run_cli(["wf.yaml", "--topic", "t", "--run-id", run_id, "-q"], cwd=tmp_path / "p")
    no_traceback(proc)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "run id" in proc.stderr and "hint:" in proc.stderr
    assert not (tmp_path / "x").exists() and not Path("/tmp/abs-run-id").exists()
    assert not (tmp_path / "p" / "runs").exists()


def test_non_utf8_arguments_and_files_are_named(tmp_path: Path) -> None:
    simple_project(tmp_path)
    argv = [os.fsencode(a) for a in [*flowrun_cmd(), "wf.yaml", "--run-id", "r", "-q", "--topic"]]
    proc = subprocess.run(
        [*argv, b"caf\xe9 \xff"], cwd=tmp_path, env=clean_env(FAST_RETRIES), capture_output=True, timeout=60
    )
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "--topic is not valid UTF-8: byte 0xe9 at character 4" in err and "Traceback" not in err
    (tmp_path / "latin1.txt").write_bytes(b"line one\ncaf\xe9\n")
    proc2 = run_cli(["wf.yaml", "--run-id", "r", "--topic", "@latin1.txt"], cwd=tmp_path)
    assert proc2.returncode == 2
    assert "--topic @latin1.txt is not UTF-8 text: byte 0xe9 at offset 12 (line 2)" in proc2.stderr
    proc3 = run_cli(["wf.yaml", "--run-id", "r", "--topic", "@missing.txt"], cwd=tmp_path)
    assert proc3.returncode == 2 and "--topic @missing.txt: No such file or directory" in proc3.stderr
    # a YAML `!!binary` value in an --inputs file: decoded when it is UTF-8, else named
    (tmp_path / "binary.yaml").write_text("topic: !!binary //4=\n")
    proc4 = run_cli(["wf.yaml", "--run-id", "r", "--inputs", "binary.yaml"], cwd=tmp_path)
    assert proc4.returncode == 2, proc4.stdout + proc4.stderr
    assert "--topic is binary, not UTF-8 text: byte 0xff at offset 0" in proc4.stderr
    assert not (tmp_path / "runs").exists()
    (tmp_path / "binary.yaml").write_text("topic: !!binary dGlkZXM=\n")
    proc5 = run_cli(["wf.yaml", "--run-id", "b", "--inputs", "binary.yaml", "-q"], cwd=tmp_path)
    assert proc5.returncode == 0, proc5.stdout + proc5.stderr
    assert (tmp_path / "runs" / "b" / "topic.txt").read_text() == "tides\n"


@pytest.mark.parametrize("value", [b"caf\xe9", "caf\udce9", ["ok", b"\xff"], {"k": "\ud800"}])
def test_the_python_api_names_input_text_that_is_not_unicode(tmp_path: Path, value: Any) -> None:
    simple_project(tmp_path)
    wf = flowrun.load(tmp_path / "wf.yaml")
    with pytest.raises(flowrun.UsageError, match=r"input 'topic' is (binary, )?not (valid )?UTF-8"):
        wf.run_sync({"topic": value}, runs_dir=tmp_path / "runs", run_id="r")
    assert not (tmp_path / "runs").exists()


def test_inputs_from_files_stdin_and_an_inputs_file(tmp_path: Path) -> None:
    simple_project(tmp_path)
    big = "why? " * 10_000_000  # 50 MB
    (tmp_path / "question.txt").write_text(big)
    proc = run_cli(
        ["wf.yaml", "--run-id", "big", "--topic", "@question.txt", "-q"], cwd=tmp_path, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "runs" / "big" / "topic.txt").read_text() == big + "\n"
    check_log(tmp_path / "runs" / "big")

    piped = subprocess.run(
        [*flowrun_cmd(), "wf.yaml", "--run-id", "stdin", "--topic", "@-", "-q"],
        cwd=tmp_path,
        env=clean_env(FAST_RETRIES),
        input="from a pipe\x00with a NUL",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert piped.returncode == 0, piped.stderr
    assert (tmp_path / "runs" / "stdin" / "topic.txt").read_text() == "from a pipe\x00with a NUL\n"

    proc = run_cli(["wf.yaml", "--run-id", "at", "--topic", "@@handle", "-q"], cwd=tmp_path)
    assert proc.returncode == 0 and (tmp_path / "runs" / "at" / "topic.txt").read_text() == "@handle\n"

    (tmp_path / "inputs.yaml").write_text("topic: from the file\n")
    proc = run_cli(["wf.yaml", "--inputs", "inputs.yaml", "--run-id", "f", "-q"], cwd=tmp_path)
    assert proc.returncode == 0 and (tmp_path / "runs" / "f" / "topic.txt").read_text() == "from the file\n"
    proc = run_cli(
        ["wf.yaml", "--inputs", "inputs.yaml", "--topic", "flag", "--run-id", "g", "-q"], cwd=tmp_path
    )
    assert proc.returncode == 0 and (tmp_path / "runs" / "g" / "topic.txt").read_text() == "flag\n"
    assert json.loads((tmp_path / "runs" / "g" / "run.json").read_text())["inputs"] == {"topic": "flag"}

    (tmp_path / "bad.yaml").write_text("topic: [unclosed\n")
    proc = run_cli(["wf.yaml", "--inputs", "bad.yaml", "--run-id", "h"], cwd=tmp_path)
    assert proc.returncode == 2 and "--inputs bad.yaml:2:1: YAML syntax error" in proc.stderr
    (tmp_path / "list.yaml").write_text("- a\n")
    proc = run_cli(["wf.yaml", "--inputs", "list.yaml", "--run-id", "h"], cwd=tmp_path)
    assert proc.returncode == 2 and "expected a mapping of input names" in proc.stderr
    (tmp_path / "other.yaml").write_text("subject: x\n")
    proc = run_cli(["wf.yaml", "--inputs", "other.yaml", "--run-id", "h"], cwd=tmp_path)
    assert proc.returncode == 2 and "unknown input 'subject'" in proc.stderr
    assert not (tmp_path / "runs" / "h").exists()


def test_an_unusable_runs_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    simple_project(tmp_path)
    (tmp_path / "afile").write_text("not a folder")
    for runs_dir, run_id, reason in (
        ("afile/runs", "r", "Not a directory"),
        (".", "afile", "a file of that name exists"),
        ("/proc/flowrun-cannot-write-here", "r", "No such file or directory"),
    ):
        proc = run_cli(["wf.yaml", "--topic", "t", "--runs-dir", runs_dir, "--run-id", run_id], cwd=tmp_path)
        no_traceback(proc)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert reason in proc.stderr and "hint:" in proc.stderr
    assert (tmp_path / "afile").read_text() == "not a folder"


def test_run_folders_and_engine_files_that_cannot_be_written_are_one_line_and_exit_2(tmp_path: Path) -> None:
    """Permissions enforced (also for root): a read-only runs folder, and on resume a read-only
    run folder, events.jsonl or flowrun.log. Each: one line naming the folder (and file),
    exit 2, the folder as it was; with the permissions back, the run goes on."""
    simple_project(tmp_path)
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro").chmod(0o555)
    proc = run_unprivileged(["wf.yaml", "--topic", "t", "--runs-dir", "ro", "--run-id", "r"], tmp_path)
    no_traceback(proc)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "error: cannot create the run folder ro/r: Permission denied" in proc.stderr
    assert not (tmp_path / "ro" / "r").exists()

    run_dir = interrupted_run(tmp_path)
    for target in (run_dir, run_dir / "events.jsonl", run_dir / "flowrun.log"):
        before = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
        target.chmod(0o555 if target.is_dir() else 0o444)
        proc = run_unprivileged(["resume", str(run_dir), "-q"], tmp_path)
        target.chmod(0o755 if target.is_dir() else 0o644)
        no_traceback(proc)
        assert proc.returncode == 2, (target.name, proc.stdout + proc.stderr)
        assert f"error: cannot write in the run folder {run_dir}" in proc.stderr, proc.stderr
        assert "Permission denied" in proc.stderr and "hint:" in proc.stderr
        assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()} == before
    proc = run_unprivileged(["resume", str(run_dir), "-q"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check_log(run_dir)


# ---------------------------------------------------------------- 8. the smaller ones


PLAIN = {"integer": 1, "number": 1, "boolean": False, "array": []}
# text a model may send in any string argument: NUL, paths too long for the OS (whole and one
# component), outside paths, home, a newline, nothing, an option, a glob, control characters
HOSTILE_TEXT = [
    "a\x00b",
    "x" * 5000,
    "d/" * 2100 + "f",
    "n" * 300,
    "../../../etc/passwd",
    "/etc/passwd",
    "~/x",
    "a\nb",
    "",
    "-rf",
    "*",
    "\u202e\x7f\x1b[2J",
]


def test_nul_bytes_in_any_argument_of_any_built_in_tool_are_never_internal(tmp_path: Path) -> None:
    """Every string parameter of every built-in tool, in turn, carries a NUL byte (and each
    other hostile text): each call ends in a result the model can act on, never INTERNAL (the
    old use_skill answer to a NUL), and nothing lands outside the run folder."""
    calls = []
    for manifest in sorted((REPO / "tools.d").glob("*.yaml")):
        spec = yaml.safe_load(manifest.read_text())
        if spec["name"] in (
            "ask_user",
            "finish",
            "all_finished",
            "web_search",
            "visit_url",
            "update_dashboard",
        ):
            continue
        props = spec["parameters"].get("properties", {})
        required = spec["parameters"].get("required", [])
        base = {k: PLAIN.get(str(p.get("type")), "ok") for k, p in props.items() if k in required}
        for key, prop in props.items():
            if prop.get("type") in ("string", ["array", "string"]):
                calls += [{"name": spec["name"], "arguments": {**base, key: text}} for text in HOSTILE_TEXT]
    # a lone surrogate escape decodes to text that is not Unicode: refused before any tool runs
    calls.append({"name": "write_file", "arguments": '{"path": "s.md", "content": "a\\ud800b"}'})
    calls.append({"name": "use_skill", "arguments": {"skill": "demo", "file": "a\x00b"}})
    tools = sorted({c["name"] for c in calls})
    (tmp_path / "skills" / "demo").mkdir(parents=True)
    (tmp_path / "skills" / "demo" / "SKILL.md").write_text("---\nname: demo\ndescription: d\n---\nbody\n")
    scripted_project(
        tmp_path,
        {"boss": {"prompt": "You try things.", "tools": tools, "max_steps": len(calls) + 1}},
        {"boss": [*({"tool_calls": [c]} for c in calls), {"text": "done"}]},
    )
    proc = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = [e for e in check_log(tmp_path / "runs" / "r") if e["type"] == "tool_result"]
    assert len(results) == len(calls)
    internal = [
        (e["tool"], e["result"]["text"])
        for e in results
        if (e["result"].get("error") or {}).get("code") == "INTERNAL"
    ]
    assert not internal
    skill = results[-1]["result"]
    assert skill["error"]["code"] == "INVALID_PARAM" and "NUL" in skill["text"]
    surrogate = results[-2]["result"]
    assert surrogate["error"]["code"] == "INVALID_PARAM" and "not valid Unicode" in surrogate["text"]
    assert not (tmp_path / "runs" / "r" / "s.md").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "agents.d",
        "runs",
        "script.yaml",
        "skills",
        "wf.yaml",
    ]


def test_a_full_disk_fails_the_run_with_one_line_and_a_strict_log(tmp_path: Path) -> None:
    """The file size limit stands in for a full disk: writing the log fails mid-run. The run
    ends `failed` with one line, the half-written line is cut off again, and once there is room
    `resume` completes it."""
    long = "word " * 2000
    step = {"text": long, "tool_calls": [{"name": "list_directory", "arguments": {}}]}
    scripted_project(
        tmp_path,
        # the same call twelve times fills the log; the loop guard is not what is tested here
        {"w": {"prompt": "You talk.", "tools": ["list_directory"], "max_repeated_calls": 20}},
        {"w": [step] * 12 + [{"text": "done"}]},
        entry="w",
    )

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, 60_000))

    proc = subprocess.run(
        [*flowrun_cmd(), "wf.yaml", "--run-id", "r", "-q"],
        cwd=tmp_path,
        env=clean_env(FAST_RETRIES),
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=small_files,
    )
    no_traceback(proc)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "error: cannot write the run folder runs/r: File too large" in proc.stderr
    run_dir = tmp_path / "runs" / "r"
    assert status_of(run_dir) == "failed"
    check_log(run_dir, ended=False)  # every line whole; the run_end itself did not fit
    proc = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    check_log(run_dir)


def interrupted_run(tmp: Path) -> Path:
    """A finished two-step run whose log is then cut after its first tool result, as a
    crash leaves it."""
    simple_project(tmp)
    proc = run_cli(["wf.yaml", "--topic", "tides", "--run-id", "r", "-q"], cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    run_dir = tmp / "runs" / "r"
    lines = (run_dir / "events.jsonl").read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if '"tool_result"' in line) + 1
    (run_dir / "events.jsonl").write_text("".join(lines[:cut]))
    (run_dir / "run.json").write_text((run_dir / "run.json").read_text().replace('"completed"', '"running"'))
    return run_dir


def _damage(lines: list[bytes], how: str) -> tuple[list[bytes], int, str]:
    """The log's lines damaged `how`: (lines, the line number named, what the error says)."""
    if how == "bytes":
        lines[2] = b'{"seq": 3, "type": "model_req\xff'
        return lines, 3, "this line is not a JSON object"
    if how == "zeros":  # what a power cut can leave in a block of the file
        lines[2] = b"\x00" * 300
        return lines, 3, "this line is not a JSON object"
    if how == "no-type":
        lines[2] = b'{"seq": 3, "t": 1.0}'
        return lines, 3, "this line has no event type"
    if how == "unreadable":
        event = json.loads(lines[4])
        assert event["type"] == "model_response"
        lines[4] = json.dumps({**event, "response": "garbage"}).encode()
        return lines, 5, "a model_response event whose fields cannot be read"
    if how == "missing":
        del lines[3]
        return lines, 4, "seq 5 after 3: a line missing"
    if how == "repeated":
        lines.insert(4, lines[4])
        return lines, 6, "seq 5 after 5"
    lines[3], lines[4] = lines[4], lines[3]  # moved
    return lines, 4, "seq 5 after 3"


@pytest.mark.parametrize("how", ["bytes", "zeros", "no-type", "unreadable", "missing", "repeated", "moved"])
def test_damage_in_the_middle_of_the_log_is_named_not_skipped(tmp_path: Path, how: str) -> None:
    """Damage anywhere before the last line (bytes that are not JSON, zeros, a line without a
    type or with fields that cannot be read, a line missing, repeated or moved): resume and
    replay refuse with the file and line, and change nothing; the viewers still read it."""
    run_dir = interrupted_run(tmp_path)
    log = run_dir / "events.jsonl"
    lines, number, what = _damage(log.read_bytes().split(b"\n"), how)
    log.write_bytes(b"\n".join(lines))
    before = log.read_bytes()
    proc = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path)
    no_traceback(proc)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"{log}:{number}: the event log is damaged ({what}" in proc.stderr, proc.stderr
    assert "hint:" in proc.stderr
    assert log.read_bytes() == before and status_of(run_dir) == "running"
    assert not (run_dir / "run.lock").exists()
    proc = run_cli(["replay", str(run_dir), "-q"], cwd=tmp_path)
    assert proc.returncode == 1 and "the event log is damaged" in proc.stderr
    # the viewers still read the intact lines
    proc = run_cli(["show", str(run_dir)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_a_torn_last_line_is_cut_and_the_log_stays_strict(tmp_path: Path) -> None:
    run_dir = interrupted_run(tmp_path)
    with (run_dir / "events.jsonl").open("ab") as f:
        f.write(b'{"seq": 99, "t": 1.0, "type": "model_re')  # the process died mid-write
    proc = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    events = check_log(run_dir)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    # resumed again (already completed): still strict
    assert run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path).returncode == 0


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["int", "term"])
def test_a_signal_before_the_run_folder_exists_says_nothing_was_started(
    tmp_path: Path, sig: signal.Signals, code: int
) -> None:
    simple_project(tmp_path)
    child = popen_cli(["wf.yaml", "--topic", "@-", "--run-id", "r"], tmp_path, stdin=subprocess.PIPE)
    # it waits for the question on stdin
    assert wait_for(lambda: reading_stdin(child.pid) or child.poll() is not None)
    assert child.poll() is None, child.communicate()
    child.send_signal(sig)
    child.wait(timeout=DEADLINE_S)  # stdin stays open: the signal ends it
    _, err = child.communicate(timeout=DEADLINE_S)
    assert child.returncode == code, err
    assert "nothing was started: no run folder was made" in err
    assert "folder is kept" not in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("first", "second"),
    [(signal.SIGINT, signal.SIGINT), (signal.SIGINT, signal.SIGTERM), (signal.SIGTERM, signal.SIGINT)],
    ids=["int-int", "int-term", "term-int"],
)
def test_a_second_signal_while_the_run_stops_changes_nothing(
    tmp_path: Path, first: signal.Signals, second: signal.Signals
) -> None:
    """Ctrl-C pressed twice (or SIGTERM and Ctrl-C): the first decides; the run records its
    stop whole and the command exits with the first one's code and line."""
    token = f"flowrun-wait-{os.getpid()}-{first}-{second}"
    command = f"exec -a {token} sleep 300"  # found on the host by its argv[0]
    shell = {"name": "execute_shell", "arguments": {"command": command, "timeout": 600}}
    scripted_project(
        tmp_path,
        {"w": {"prompt": "You wait.", "tools": ["execute_shell"]}},
        {"w": [{"tool_calls": [shell]}, {"text": "done"}]},
        entry="w",
    )
    outcome = {"Ctrl-C": (130, "cancelled (Ctrl-C)"), "SIGTERM": (143, "cancelled (SIGTERM)")}
    # the second signal right after the first, a moment later, or once the first was handled
    # (it stopped the tool's process)
    for attempt, gap in enumerate((0.0, 0.05, None)):
        run_dir = tmp_path / "runs" / f"s{attempt}"
        child = popen_cli(["wf.yaml", "--run-id", run_dir.name, "-q"], tmp_path)
        assert wait_for(lambda child=child: pids_with(token) or child.poll() is not None)  # the tool runs
        assert child.poll() is None, child.communicate()
        child.send_signal(first)
        if gap is None:
            assert wait_for(lambda: not pids_with(token))
        else:
            time.sleep(gap)
        child.send_signal(second)
        out, err = child.communicate(timeout=DEADLINE_S)
        no_traceback((out, err))
        assert status_of(run_dir) == "cancelled"
        events = check_log(run_dir)
        # signals sent together may be handled in either order: the one handled first decides
        # the exit code and the recorded reason alike; once the first was handled, it is that one
        decided = "Ctrl-C" if first == signal.SIGINT else "SIGTERM"
        if gap is not None:
            decided = events[-1]["message"].split(" (")[1].split(")")[0]
        code, reason = outcome[decided]
        assert child.returncode == code, (gap, child.returncode, err)
        assert events[-1]["message"].startswith(reason), events[-1]["message"]
        assert f"flowrun resume {run_dir.relative_to(tmp_path)}" in err


def test_ctrl_c_in_a_chat_waiting_for_the_user_names_its_folder(tmp_path: Path) -> None:
    scripted_project(
        tmp_path,
        {"w": {"prompt": "You chat.", "tools": ["list_directory"]}},
        {"w": [{"text": "hello to you"}, {"text": "more"}]},
        entry="w",
    )
    child = popen_cli(["chat", "wf.yaml", "--run-id", "c"], tmp_path, stdin=subprocess.PIPE)
    assert child.stdin is not None
    child.stdin.write("hello\n")
    child.stdin.flush()
    log = tmp_path / "runs" / "c" / "events.jsonl"
    assert wait_for(lambda: log.exists() and b'"model_response"' in log.read_bytes(), 60)
    assert wait_for(lambda: reading_stdin(child.pid) or child.poll() is not None)  # the next message
    assert child.poll() is None, child.communicate()
    child.send_signal(signal.SIGINT)
    child.wait(timeout=DEADLINE_S)  # stdin stays open: the signal, not an end of input, ends it
    _, err = child.communicate(timeout=DEADLINE_S)
    no_traceback(("", err))
    assert child.returncode == 130, err
    assert "flowrun resume runs/c" in err and "RUN_DIR" not in err
    assert status_of(tmp_path / "runs" / "c") == "cancelled"
    check_log(tmp_path / "runs" / "c")


async def test_a_cancel_while_a_finished_run_closes_keeps_it_completed(tmp_path: Path) -> None:
    """The API side of "a SIGINT during exit": the cancel lands after the entry agent ended,
    while the run closes its tools and clients: the run stays `completed`."""
    simple_project(tmp_path)
    wf = flowrun.load(tmp_path / "wf.yaml")
    task: asyncio.Task[flowrun.RunResult] | None = None

    def on_event(event: Event) -> None:
        if isinstance(event, AgentEndEvent) and event.agent_id == "w" and task is not None:
            task.cancel()

    task = asyncio.create_task(
        wf.run({"topic": "tides"}, runs_dir=tmp_path / "runs", run_id="c", on_event=on_event)
    )
    result = await task
    assert result.status == "completed" and result.exit_code == 0
    assert status_of(tmp_path / "runs" / "c") == "completed"
    check_log(tmp_path / "runs" / "c")


def test_a_late_sigint_never_turns_a_completed_run_into_an_interrupted_one(tmp_path: Path) -> None:
    """Ctrl-C sent as the run ends (at varying moments around its end): whatever it hit, the
    exit code, run.json and the log's last event agree, and a run recorded `completed` exits 0."""
    assert_late_signal_changes_nothing(tmp_path, signal.SIGINT, 130)


def test_a_late_sigterm_never_turns_a_completed_run_into_an_interrupted_one(tmp_path: Path) -> None:
    """The same for SIGTERM, which the default handler would turn into a silent exit 143 if it
    came back for a moment as the command's event loop closes."""
    assert_late_signal_changes_nothing(tmp_path, signal.SIGTERM, 143)


def assert_late_signal_changes_nothing(tmp_path: Path, sig: signal.Signals, code: int) -> None:
    simple_project(tmp_path)
    seen = set()
    for attempt in range(6):
        run_dir = tmp_path / "runs" / f"s{attempt}"
        child = popen_cli(["wf.yaml", "--topic", "tides", "--run-id", run_dir.name, "-q"], tmp_path)
        log = run_dir / "events.jsonl"
        # early attempts hit the end of the agent, the last ones the process exit after run_end
        # (so a loaded machine still tests the "completed, then Ctrl-C" case)
        mark = b'"run_end"' if attempt >= 4 else b'"agent_end"'
        assert wait_for(lambda log=log, mark=mark: log.exists() and mark in log.read_bytes(), 60)
        time.sleep(0.005 * attempt)  # at a slightly different moment each time
        child.send_signal(sig)
        out, err = child.communicate(timeout=DEADLINE_S)
        no_traceback((out, err))
        status = status_of(run_dir)
        events = check_log(run_dir)
        assert events[-1]["status"] == status
        assert child.returncode == {"completed": 0, "cancelled": code}[status], (status, out, err)
        seen.add(status)
    assert "completed" in seen


@pytest.mark.parametrize(
    ("tool", "arguments", "repeated"),
    [
        ("write_file", {"path": "log.md", "content": "entry\n", "mode": "append"}, False),
        ("execute_shell", {"command": "echo entry >> log.md"}, False),
        ("stamp", {"line": "entry"}, False),
        ("run_skill_script", {"skill": "stamper", "script": "scripts/stamp.sh"}, False),
        ("write_file", {"path": "log.md", "content": "entry\n", "mode": "overwrite"}, True),
    ],
    ids=["append", "shell", "command-tool", "skill-script", "overwrite"],
)
def test_a_call_in_flight_at_a_crash_is_not_repeated_blindly(
    tmp_path: Path, tool: str, arguments: dict[str, Any], repeated: bool
) -> None:
    """The call ran, then the process died before its result was logged (the log is cut
    there). On resume a call that is not safe to repeat is answered EFFECT_UNKNOWN and the file
    keeps one entry; a safe one (overwrite) runs again."""
    stamp = (
        "version: 1\nkind: tool\nname: stamp\ndescription: Append a line to log.md.\n"
        "parameters: {type: object, properties: {line: {type: string}}, required: [line]}\n"
        "implementation: {command: [bash, -c, 'echo \"$0\" >> log.md', '{{ line }}']}\n"
    )
    scripted_project(
        tmp_path,
        {"w": {"prompt": "You log.", "tools": [tool]}},
        {"w": [{"tool_calls": [{"name": tool, "arguments": arguments}]}, {"text": "logged"}]},
        entry="w",
    )
    write_files(
        tmp_path,
        {
            "tools.d/stamp.yaml": stamp,
            "skills/stamper/SKILL.md": "---\nname: stamper\ndescription: Stamps log.md.\n---\nRun it.\n",
            "skills/stamper/scripts/stamp.sh": "echo entry >> log.md\n",
        },
    )
    proc = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = tmp_path / "runs" / "r"
    assert (run_dir / "log.md").read_text() == "entry\n"
    lines = (run_dir / "events.jsonl").read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if '"tool_result"' in line)
    assert ('"tool_intent"' in lines[cut - 1]) is not repeated  # recorded just before the call
    (run_dir / "events.jsonl").write_text("".join(lines[:cut]))
    (run_dir / "run.json").write_text((run_dir / "run.json").read_text().replace('"completed"', '"running"'))

    proc = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    events = check_log(run_dir)
    result = next(e["result"] for e in events if e["type"] == "tool_result")
    if repeated:
        assert result["status"] == "success"
    else:
        assert result["error"]["code"] == "EFFECT_UNKNOWN" and "not run again" in result["text"]
    assert (run_dir / "log.md").read_text() == "entry\n"


def test_mcp_tools_are_repeated_on_resume_only_when_the_server_says_so(tmp_path: Path) -> None:
    """An MCP tool without hints is not safe to repeat (recorded, then EFFECT_UNKNOWN on a
    resume that finds it unfinished); one the server marks read-only (or idempotent) is."""
    from test_mcp_client import WORKER, mcp_project, run, stdio_server

    servers = {"calc": stdio_server(f"mcp-marker-{time.monotonic_ns()}", tools=["add", "lookup"])}
    workflow = mcp_project(tmp_path, servers, ["calc"])
    replies = [
        Reply(tool_calls=[call("calc__add", a=2, b=40)]),
        Reply(tool_calls=[call("calc__lookup", key="k")]),
        Reply(text="All done."),
    ]
    with WireServer(Script({WORKER: replies})) as server:
        code, out, run_dir = run(tmp_path, workflow, server, "anthropic")
        assert code == 0, out
        lines = (run_dir / "events.jsonl").read_text().splitlines(keepends=True)
        intents = [json.loads(line)["tool"] for line in lines if '"tool_intent"' in line]
        assert intents == ["calc__add"]
        cut = next(i for i, line in enumerate(lines) if '"tool_result"' in line)
        (run_dir / "events.jsonl").write_text("".join(lines[:cut]))
        meta = run_dir / "run.json"
        meta.write_text(meta.read_text().replace('"completed"', '"running"'))
        env = model_env(server, "anthropic")
        proc = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path, env=env, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = {e["tool"]: e["result"] for e in check_log(run_dir) if e["type"] == "tool_result"}
    assert results["calc__add"]["error"]["code"] == "EFFECT_UNKNOWN"
    assert results["calc__lookup"]["status"] == "success"
