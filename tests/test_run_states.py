"""One run summary in every view: run folders of every end state, made by real `flowrun`
processes (completed with a persistent sub-agent called twice, failed, budget_exceeded, waiting,
cancelled by Ctrl-C, killed with SIGKILL in the middle of a tool call, killed before its first
event, and a replay), and every view of each says the same state, tokens and cost: `flowrun
runs`, `flowrun show`, `flowrun show --html`, `flowrun.list_runs`, and the HTTP API's list and
run (GET /v1/runs, GET /v1/runs/{id}); the invocations' tokens add up to the run's.

The states themselves are one list (flowrun/states.py): the exit codes, the eval grader's
`status` values and the docs' table are read from or checked against it here."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import httpx
import pytest
import yaml
from support.cli import flowrun_cmd, popen_cli, run_cli
from support.env import clean_env
from support.paths import REPO
from support.procs import wait_for

import flowrun
from flowrun.manifest.eval_specs import RunStatus
from flowrun.states import EXIT_CODES, NAMES

pytestmark = pytest.mark.xdist_group("run-states")  # one runs folder, made once

PRICE = {"input": 1.0, "output": 2.0}  # per million tokens: every run has a cost
SHELL_WAIT = "touch started.mark && sleep 600"


def agent(name: str, tools: list[Any]) -> str:
    return yaml.safe_dump(
        {"version": 1, "kind": "agent", "name": name, "prompt": f"You are {name}.", "tools": tools}
    )


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"text": "", "tool_calls": [{"name": name, "arguments": arguments}]}


SCRIPTS: dict[str, dict[str, list[dict[str, Any]]]] = {
    # a persistent worker called twice: two invocations of one instance
    "ok": {
        "boss": [call("worker", task="first"), call("worker", task="second"), {"text": "All done."}],
        "worker": [{"text": "did the first"}, {"text": "did the second"}],
    },
    "fail": {"boss": [call("list_directory", path=".")]},  # no second reply: the model fails
    "budget": {"boss": [call("list_directory", path="."), {"text": "never asked"}]},
    "wait": {"boss": [call("write_file", path="x.txt", content="x"), {"text": "wrote it"}]},
    "slow": {"boss": [call("execute_shell", command=SHELL_WAIT), {"text": "never asked"}]},
}


def write_project(root: Path) -> None:
    (root / "agents.d").mkdir(parents=True)
    tools = [{"worker": {"session": "persistent"}}, "list_directory", {"write_file": {"approve": "ask"}}]
    (root / "agents.d" / "boss.yaml").write_text(agent("boss", [*tools, "execute_shell"]))
    (root / "agents.d" / "worker.yaml").write_text(agent("worker", ["list_directory"]))
    for name, replies in SCRIPTS.items():
        (root / f"{name}.script.yaml").write_text(
            yaml.safe_dump({"version": 1, "kind": "script", "agents": replies})
        )
        model = {"provider": "scripted", "model": "s", "script": f"{name}.script.yaml", "price": PRICE}
        workflow: dict[str, Any] = {
            "version": 1,
            "kind": "workflow",
            "name": name,
            "models": {"s": model},
            "default_model": "s",
            "entry": "boss",
            "task": "Do the job.",
        }
        if name == "budget":
            workflow["limits"] = {"max_total_steps": 1}
        (root / f"{name}.yaml").write_text(yaml.safe_dump(workflow))


def env() -> dict[str, str]:
    return {"FLOWRUN_RETRY_BASE_S": "0.01"}


def stop_in_the_shell(root: Path, run_id: str, how: signal.Signals) -> None:
    """Start the `slow` workflow, and once its shell command runs, stop it `how`: SIGINT (as
    Ctrl-C: the run records `cancelled`) or SIGKILL of its whole group (nothing recorded)."""
    proc = subprocess.Popen(
        [*flowrun_cmd(), "slow.yaml", "--run-id", run_id, "-q", "--sandbox", "off"],
        cwd=root,
        env=clean_env(env()),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    run_dir = root / "runs" / run_id
    try:
        assert wait_for(lambda: any(run_dir.rglob("started.mark")) or proc.poll() is not None)
        assert proc.poll() is None, proc.communicate()
        if how == signal.SIGKILL:
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.send_signal(how)
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the shell's sleep, if it outlived flowrun


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A runs folder holding a run of every end state (its folder name says which)."""
    root = tmp_path_factory.mktemp("states")
    write_project(root)
    for name, code in (("ok", 0), ("fail", 1), ("budget", 4), ("wait", 75)):
        done = run_cli([f"{name}.yaml", "--run-id", name, "-q"], cwd=root, env=env())
        assert done.returncode == code, (name, done.stdout, done.stderr)
    stop_in_the_shell(root, "cancelled", signal.SIGINT)
    stop_in_the_shell(root, "killed", signal.SIGKILL)
    # killed before its first event: as prepare() leaves a folder (run.json first, no log yet)
    early = root / "runs" / "early"
    early.mkdir()
    meta = json.loads((root / "runs" / "ok" / "run.json").read_text()) | {
        "status": "running",
        "run_id": "early",
    }
    (early / "run.json").write_text(json.dumps(meta))
    (early / "usage.json").write_text(
        json.dumps({"total_tokens": 0, "total_cost_usd": None, "by_agent_model": []})
    )
    replayed = run_cli(["replay", "runs/ok", "-q"], cwd=root, env=env())
    assert replayed.returncode == 0, replayed.stderr
    return root / "runs"


EXPECTED = {
    "ok": "completed",
    "ok-replay": "completed",
    "fail": "failed",
    "budget": "budget_exceeded",
    "wait": "waiting",
    "cancelled": "cancelled",
    "killed": "interrupted",
    "early": "interrupted",
}


@pytest.fixture(scope="module")
def api(runs: Path) -> Iterator[str]:
    """`flowrun ui` on the runs folder: the HTTP API's address."""
    proc = popen_cli(["ui", "--port", "0", "--runs-dir", str(runs)], runs.parent)
    try:
        assert proc.stderr is not None
        said = ""
        for line in proc.stderr:
            said += line
            if line.startswith("the web UI: "):
                yield line.split()[-1].rstrip("/")
                break
        else:
            raise AssertionError(f"flowrun ui did not start: {said}")
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def cost_text(cost: float | None) -> str:
    return "unknown" if cost is None else f"${cost:.4f}"


def runs_table(runs: Path) -> dict[str, list[str]]:
    """`flowrun runs`: each run's cells."""
    listed = run_cli(["runs", "--runs-dir", str(runs), "--limit", "0"])
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    return {cells[0]: cells for cells in (re.split(r"\s{2,}", line.strip()) for line in lines[1:])}


def shown(run_dir: Path) -> dict[str, str]:
    """`flowrun show RUN`: its summary's state, tokens and cost."""
    done = run_cli(["show", str(run_dir)])
    assert done.returncode == 0, done.stderr
    status = re.search(r"^status: (\S+)", done.stdout, re.MULTILINE)
    steps = re.search(r"^model steps: (\d+) · ([\d,]+) tokens .* · cost (\S+)", done.stdout, re.MULTILINE)
    assert status and steps, done.stdout
    return {"status": status[1], "steps": steps[1], "tokens": steps[2], "cost": steps[3]}


def report(run_dir: Path, target: Path) -> dict[str, Any]:
    """`flowrun show RUN --html FILE`: the summary the page embeds."""
    done = run_cli(["show", str(run_dir), "--html", str(target)])
    assert done.returncode == 0, done.stderr
    found = re.search(
        r'<script type="application/json" id="flowrun-data">(.*?)</script>', target.read_text(), re.S
    )
    assert found
    data: dict[str, Any] = json.loads(found[1])
    return data


def test_every_view_says_the_same_state_tokens_and_cost(runs: Path, api: str, tmp_path: Path) -> None:
    table = runs_table(runs)
    listed = {entry.id: entry for entry in flowrun.list_runs(runs)}
    with httpx.Client(base_url=api, timeout=60) as http:
        page = http.get("/v1/runs", params={"limit": 100}).json()
        api_list = {run["id"]: run for run in page["runs"]}
        details = {run_id: http.get(f"/v1/runs/{run_id}").json() for run_id in EXPECTED}
    assert set(listed) == set(EXPECTED) == set(api_list) == set(table)
    for run_id, state in EXPECTED.items():
        entry, detail = listed[run_id], details[run_id]
        said = (run_id, detail)
        assert entry.status == state == api_list[run_id]["status"] == detail["status"], said
        assert table[run_id][2] == state, table[run_id]
        tokens, cost = entry.total_tokens, entry.cost_usd
        assert api_list[run_id]["total_tokens"] == detail["total_tokens"] == tokens, said
        assert api_list[run_id]["cost_usd"] == detail["cost_usd"] == cost, said
        # the usage the API sends is counted from the log, like the invocations it shows
        assert detail["usage"]["total_tokens"] == tokens, said
        assert sum(inv["total_tokens"] for inv in detail["invocations"]) == tokens, said
        assert table[run_id][5] == f"{tokens:,}" and table[run_id][6] == cost_text(cost), table[run_id]
        if run_id != "early":  # (no event: nothing to show but the error saying so)
            show = shown(runs / run_id)
            assert show == {
                "status": state,
                "steps": str(entry.steps),
                "tokens": f"{tokens:,}",
                "cost": cost_text(cost),
            }
            embedded = report(runs / run_id, tmp_path / f"{run_id}.html")["summary"]
            assert (embedded["status"], embedded["total_tokens"], embedded["cost_usd"]) == (
                state,
                tokens,
                cost,
            )


def test_what_each_state_holds(runs: Path, api: str) -> None:
    with httpx.Client(base_url=api, timeout=60) as http:
        ok = http.get("/v1/runs/ok").json()
        killed = http.get("/v1/runs/killed").json()
        waiting = http.get("/v1/runs/wait").json()
        early = http.get("/v1/runs/early").json()
    # the persistent worker's two calls: two invocations of one instance, each under its call
    workers = [inv for inv in ok["invocations"] if inv["agent"] == "worker"]
    assert len(workers) == 2 and workers[0]["agent_id"] == workers[1]["agent_id"]
    boss = ok["invocations"][0]
    assert [boss["calls"][c]["agents"] for c in boss["calls"] if boss["calls"][c]["tool"] == "worker"] == [
        [workers[0]["index"]],
        [workers[1]["index"]],
    ]
    usage = json.loads((runs / "ok" / "usage.json").read_text())
    assert ok["usage"]["total_tokens"] == usage["total_tokens"] and ok["cost_usd"] > 0
    assert ok["replay"] == "ok-replay"
    # a killed run: counted from its log (usage.json still says 0), its open call cut at the kill
    assert json.loads((runs / "killed" / "usage.json").read_text())["total_tokens"] == 0
    assert killed["total_tokens"] > 0 and killed["cost_usd"] > 0
    shell = [s for s in killed["spans"] if s["tool"] == "execute_shell"]
    assert len(shell) == 1 and shell[0]["outcome"] == "interrupted" and shell[0]["end"] is not None
    assert killed["invocations"][0]["status"] == "interrupted"
    # waiting: the decision it waits for, drawn as a wait on the timeline
    assert [p["tool"] for p in waiting["pending"]] == ["write_file"]
    assert [s["outcome"] for s in waiting["spans"] if s["kind"] == "wait"] == ["waiting"]
    assert early["events"] == 0 and early["invocations"] == [] and early["total_tokens"] == 0


def test_show_refuses_a_folder_with_no_event(runs: Path) -> None:
    done = run_cli(["show", str(runs / "early")])
    assert done.returncode != 0 and "holds no events" in done.stderr and "Traceback" not in done.stderr


def test_the_states_are_one_list() -> None:
    """Exit codes, the eval grader's `status` values and the docs' table come from (or match)
    flowrun/states.py."""
    # what a graded run may have ended in: never running, nor still queued
    assert set(get_args(RunStatus)) == set(NAMES) - {"running", "queued"}
    assert EXIT_CODES == {
        "waiting": 75,
        "completed": 0,
        "failed": 1,
        "max_steps": 3,
        "budget_exceeded": 4,
        "cancelled": 130,
        "interrupted": 130,
    }
    page = (REPO / "docs" / "reference" / "run-folder.md").read_text()
    table = {m[1] for m in re.finditer(r"^\| `([a-z_]+)` \|", page, re.MULTILINE)}
    assert set(NAMES) <= table, "docs/reference/run-folder.md lists every state"


def test_an_unknown_state_is_refused_in_every_listing(runs: Path, api: str) -> None:
    listed = run_cli(["runs", "--runs-dir", str(runs), "--status", "finished"])
    assert listed.returncode == 2 and "no run state 'finished'" in listed.stderr, listed.stderr
    assert "cancelled" in listed.stderr and "Traceback" not in listed.stderr
    refused = httpx.get(f"{api}/v1/runs", params={"status": "finished"}, timeout=60)
    assert refused.status_code == 400 and "no run state" in refused.json()["error"]
    # the names of earlier versions still find their runs
    assert [e.id for e in flowrun.list_runs(runs, status="incomplete")] == [
        e.id for e in flowrun.list_runs(runs, status="interrupted")
    ]
