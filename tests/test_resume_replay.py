"""Runs that survive: SIGKILL then `flowrun resume`, Ctrl-C, offline `flowrun replay`, and
budgets; all through the CLI against the scripted wire server."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from support.cli import popen_cli, run_cli
from support.env import FAST_RETRIES, WIRES, model_env
from support.paths import CRASH_POINTS, REPO
from support.project import SCRIPTED, model, scripted_project, workflow, write_project
from support.runs import live_events as events
from support.wire_server import Reply, Script, ToolCallSpec, WireServer
from test_e2e_research import MATCH, NOTES


def slow_script(delay: float) -> Script:
    """The research script, with the searcher's second model call held for `delay` seconds."""
    return Script(
        {
            "orchestrator": [
                Reply(tool_calls=[ToolCallSpec("searcher", {"task": "Find how sorting works"})]),
                Reply(tool_calls=[ToolCallSpec("writer", {"task": "Write the report"})]),
                Reply(text="The report is complete."),
            ],
            "searcher": [
                Reply(tool_calls=[ToolCallSpec("web_search", {"query": "sorting key functions"})]),
                Reply(
                    tool_calls=[ToolCallSpec("write_file", {"path": "workspace/notes.md", "content": NOTES})],
                    delay_s=delay,
                ),
                Reply(text="Notes in workspace/notes.md."),
            ],
            "writer": [
                Reply(tool_calls=[ToolCallSpec("read_file", {"path": "workspace/notes.md"})]),
                Reply(
                    tool_calls=[
                        ToolCallSpec("write_file", {"path": "report.md", "content": "# Report\n\nStable.\n"})
                    ]
                ),
                Reply(text="Report written."),
            ],
        },
        MATCH,
    )


def start(tmp: Path, server: WireServer, run_id: str) -> subprocess.Popen[str]:
    args = [str(REPO / "examples" / "research.yaml"), "--question", "How does sorting work?"]
    args += ["--runs-dir", str(tmp / "runs"), "--run-id", run_id, "-q"]
    return popen_cli(args, tmp, model_env(server, "anthropic", **FAST_RETRIES))


def wait_for(run_dir: Path, predicate: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (run_dir / "events.jsonl").exists() and predicate(events(run_dir)):
            return
        time.sleep(0.05)
    raise AssertionError("the run never reached the expected point")


def searcher_waiting(evs: list[dict[str, Any]]) -> bool:
    return any(e["type"] == "model_request" and e["agent"] == "searcher" and e["step"] == 2 for e in evs)


def identity(request: Any) -> tuple[str, int]:
    agent = next(key for key, needle in MATCH.items() if needle in request.system)
    return agent, request.assistant_turns


def test_sigkill_then_resume_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    # the reference: one uninterrupted run
    with WireServer(slow_script(0)) as server:
        proc = run_cli(
            [
                str(REPO / "examples" / "research.yaml"),
                "--question",
                "How does sorting work?",
                "--runs-dir",
                str(tmp_path / "ref"),
                "--run-id",
                "r",
                "-q",
            ],
            env=model_env(server, "anthropic"),
        )
        assert proc.returncode == 0, proc.stderr
        reference = (tmp_path / "ref" / "r" / "report.md").read_text()
        reference_calls = len(server.requests)

    with WireServer(slow_script(2.0)) as server:
        run_dir = tmp_path / "runs" / "k"
        child = start(tmp_path, server, "k")
        wait_for(run_dir, searcher_waiting)
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=120)
        recorded = {(e["agent"], e["step"] - 1) for e in events(run_dir) if e["type"] == "model_response"}
        assert ("searcher", 0) in recorded  # a sub-agent had started and answered once
        before = len(server.requests)

        proc = run_cli(["resume", str(run_dir), "-q"], env=model_env(server, "anthropic", **FAST_RETRIES))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        after = server.requests[before:]

    assert (run_dir / "report.md").read_text() == reference
    assert (run_dir / "workspace" / "notes.md").read_text() == NOTES
    # no step already recorded was asked again
    assert not {identity(r) for r in after} & recorded
    assert before - 0 + len(after) <= reference_calls + 1  # at most the one call in flight is repeated
    final = events(run_dir)
    keys = [
        (e["type"], e.get("agent_id"), e.get("step"), e.get("call_id"))
        for e in final
        if e["type"] in ("model_response", "tool_result")
    ]
    assert len(keys) == len(set(keys)), "an event was written twice"
    assert final[-1]["type"] == "run_end" and final[-1]["status"] == "completed"
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"


def test_sigint_leaves_a_resumable_run(tmp_path: Path) -> None:
    with WireServer(slow_script(2.0)) as server:
        run_dir = tmp_path / "runs" / "i"
        child = start(tmp_path, server, "i")
        wait_for(run_dir, searcher_waiting)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=120)
        assert child.returncode == 130, err
        assert "Traceback" not in err and "flowrun resume" in err
        assert json.loads((run_dir / "run.json").read_text())["status"] == "cancelled"
        assert events(run_dir)[-1]["status"] == "cancelled"
        proc = run_cli(["resume", str(run_dir), "-q"], env=model_env(server, "anthropic", **FAST_RETRIES))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (run_dir / "report.md").read_text().startswith("# Report")


def test_replay_makes_no_requests_and_reproduces_the_output(tmp_path: Path) -> None:
    with WireServer(slow_script(0)) as server:
        proc = run_cli(
            [
                str(REPO / "examples" / "research.yaml"),
                "--question",
                "How does sorting work?",
                "--runs-dir",
                str(tmp_path / "runs"),
                "--run-id",
                "p",
                "-q",
            ],
            env=model_env(server, "anthropic"),
        )
        assert proc.returncode == 0, proc.stderr
    # the server is stopped: any request would fail the replay
    proc = run_cli(["replay", str(tmp_path / "runs" / "p"), "--into", str(tmp_path / "again"), "-q"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "output reproduced: report.md" in proc.stdout
    assert (tmp_path / "again" / "report.md").read_text() == (
        tmp_path / "runs" / "p" / "report.md"
    ).read_text()
    assert (tmp_path / "again" / "workspace" / "notes.md").read_text() == NOTES


def test_replay_reports_the_first_differing_step(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    research = (REPO / "examples" / "research.yaml").read_text()
    (project / "research.yaml").write_text(research)
    with WireServer(slow_script(0)) as server:
        proc = run_cli(
            ["research.yaml", "--question", "q", "--run-id", "d", "-q"],
            cwd=project,
            env=model_env(server, "anthropic"),
        )
        assert proc.returncode == 0, proc.stderr
    # change the workflow's task: the orchestrator's first request no longer matches
    (project / "research.yaml").write_text(research.replace("Research this question", "Study this question"))
    proc = run_cli(["replay", str(project / "runs" / "d"), "-q"])
    assert proc.returncode == 1
    assert "first differing step" in proc.stdout + proc.stderr and "orchestrator" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("limits", "model_extra"),
    [
        ({"max_total_tokens": 50}, {}),
        ({"max_cost_usd": 0.00001}, {"price": {"input": 100.0, "output": 100.0}}),
    ],
    ids=["tokens", "cost"],
)
def test_token_and_cost_budgets_stop_cleanly(
    tmp_path: Path, limits: dict[str, Any], model_extra: dict[str, Any]
) -> None:
    agents = {"w": {"prompt": "You work. " * 40, "tools": ["list_directory"]}}
    replies = [{"tool_calls": [{"name": "list_directory", "arguments": {}}]}] * 20
    models = {"m": {**SCRIPTED, **model_extra}}
    scripted_project(tmp_path, agents, {"w": replies}, entry="w", limits=limits, models=models)
    proc = run_cli(["wf.yaml", "--run-id", "r"], cwd=tmp_path)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    run_dir = tmp_path / "runs" / "r"
    assert json.loads((run_dir / "run.json").read_text())["status"] == "budget_exceeded"
    limit = next(iter(limits))
    assert any(e["type"] == "budget_exceeded" and e["limit"] == limit for e in events(run_dir))
    requests = sum(e["type"] == "model_request" for e in events(run_dir))
    assert 1 <= requests < 20


def test_resume_without_run_json_uses_the_log(tmp_path: Path) -> None:
    """A crash before run.json was written: resume reads the workflow and inputs from run_start."""
    replies = [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "out.md", "content": "once"}}]},
        {"text": "written"},
    ]
    scripted_project(
        tmp_path,
        {"w": {"prompt": "You write.", "tools": ["write_file"]}},
        {"w": replies},
        inputs={"topic": {"description": "t"}},
        entry="w",
        task="write about {{ topic }}",
    )
    proc = run_cli(["wf.yaml", "--topic", "tides", "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = tmp_path / "runs" / "r"
    # pretend the process died just after the agent's last answer was logged
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    cut = next(i for i, line in enumerate(lines) if '"type": "agent_end"' in line)
    (run_dir / "events.jsonl").write_text("\n".join(lines[:cut]) + '\n{"seq": 99, "type": "tool_ca')
    (run_dir / "run.json").unlink()
    proc = run_cli(["resume", str(run_dir), "-q"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    evs = events(run_dir)
    assert evs[-1]["type"] == "run_end" and evs[-1]["status"] == "completed"
    assert sum(e["type"] == "model_response" for e in evs) == 2  # nothing asked twice
    assert json.loads((run_dir / "run.json").read_text())["inputs"] == {"topic": "tides"}
    assert (run_dir / "out.md").read_text() == "once"


# ---------------------------------------------------------------- a kill at every write of the run folder

WRITER = "version: 1\nkind: agent\nname: w\nprompt: You write.\ntools: [read_file, write_file]\n"


def three_steps(request: Any) -> Reply:
    """A write, a read, an answer: three model calls, two tools (a pure function of the request)."""
    turn = request.assistant_turns
    if turn == 0:
        return Reply(tool_calls=[ToolCallSpec("write_file", {"path": "out.md", "content": "written\n"})])
    if turn == 1:
        return Reply(tool_calls=[ToolCallSpec("read_file", {"path": "out.md"})])
    return Reply(text="done")


def wire_project(tmp: Path, server: WireServer, api: str) -> None:
    provider = "openai-compatible" if api == "openai" else "anthropic"
    entry = model(provider, base_url=server.base_url(api), api_key_env="K")
    spec = workflow(entry, entry="w", task="Write the note.")
    write_project(tmp, spec, files={"agents.d/w.yaml": WRITER})


def write_points(tmp: Path, env: dict[str, str], crash: dict[str, str]) -> list[int]:
    """The crash points of a whole run that are writes of its event log (the other changes of
    the run folder are killed at one by one in test_hardening's crash tests). Traced on a second
    run: the first one also makes the runs folder, which shifts the numbers."""
    points: list[int] = []
    for run_id in ("first", "traced"):
        proc = run_cli(
            ["wf.yaml", "--run-id", run_id, "-q"], cwd=tmp, env={**env, **crash, "FLOWRUN_TEST_CRASH_AT": "0"}
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        log = f"write {tmp / 'runs' / run_id / 'events.jsonl'}"
        traced = [line.split(": ", 1) for line in proc.stderr.splitlines() if line.startswith("crash point ")]
        points = [int(where.split()[-1]) for where, what in traced if what == log]
    return points


@pytest.mark.parametrize("api", WIRES)
def test_a_kill_at_every_write_asks_no_answered_model_request_again(tmp_path: Path, api: str) -> None:
    """The process dies (as with SIGKILL) just before each write of its event log (each group of
    events is one write): at each, in turn, for every write of a whole run; then `resume` (or the
    same --run-id, before run.json) finishes the run. Counted at the scripted server: no model
    call whose answer the log held is asked again, and over both processes at most the one call
    in flight at the kill is asked twice."""
    with WireServer(three_steps) as server:
        wire_project(tmp_path, server, api)
        runs = tmp_path / "runs"
        env = {"K": "test-key-5566", "FLOWRUN_RETRY_BASE_S": "0.01"}
        crash = {"PYTHONPATH": str(CRASH_POINTS), "FLOWRUN_TEST_CRASH_ROOT": str(runs)}
        crash |= {"FLOWRUN_TEST_CRASH_WRITES": "1", "FLOWRUN_TEST_CRASH_TRACE": "1"}
        points = write_points(tmp_path, env, crash)
        traced = runs / "traced"
        # the log was written in groups: fewer writes than events, one per effect boundary at
        # least (3 requests, 3 answers, 2 tool calls, the end)
        assert 9 <= len(points) < len(events(traced)), (points, len(events(traced)))
        for at in points:
            run_id = f"c{at}"
            run_dir = runs / run_id
            first = len(server.requests)
            proc = run_cli(
                ["wf.yaml", "--run-id", run_id, "-q"],
                cwd=tmp_path,
                env={**env, **crash, "FLOWRUN_TEST_CRASH_AT": str(at)},
            )
            assert proc.returncode == 137, proc.stdout + proc.stderr
            assert proc.stderr.splitlines()[-1].endswith(f"write {run_dir / 'events.jsonl'}"), proc.stderr
            answered = {e["step"] - 1 for e in events(run_dir) if e["type"] == "model_response"}
            mark = len(server.requests)
            recover = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path, env=env)
            if recover.returncode != 0:  # killed before run.json: the same --run-id starts it again
                assert "does not exist" in recover.stderr or "same --run-id" in recover.stderr, recover.stderr
                recover = run_cli(["wf.yaml", "--run-id", run_id, "-q"], cwd=tmp_path, env=env)
            assert recover.returncode == 0, (at, recover.stdout + recover.stderr)
            asked_again = [r.assistant_turns for r in server.requests[mark:]]
            assert not set(asked_again) & answered, (at, asked_again, answered)
            assert len(server.requests) - first <= 3 + 1, at  # at most the call in flight twice
            final = events(run_dir)
            assert [e["seq"] for e in final] == list(range(1, len(final) + 1)), at
            assert sum(e["type"] == "run_end" for e in final) == 1, at
            assert sum(e["type"] == "model_response" for e in final) == 3, at
            assert json.loads((run_dir / "run.json").read_text())["status"] == "completed", at
            assert (run_dir / "out.md").read_text() == "written\n", at
