"""Fallback chains through `flowrun run`: a primary model that keeps answering 503 on one wire
format, a fallback on the other, the cooldown that skips the primary and then tries it again,
the switches as events and the usage per model; resume and replay across the switches; validate
and the missing-key check know the fallback models."""

from __future__ import annotations

import json
import signal
import threading
import time
from pathlib import Path

import pytest
import yaml
from support.cli import popen_cli, run_cli
from support.env import FAST_RETRIES, WIRES, model_env
from support.project import model, workflow, write_project
from support.runs import events
from support.wire_server import Reply, ToolCallSpec, WireRequest, WireServer

PRIMARY, BACKUP = "primary-model", "backup-model"


def fallback_project(tmp: Path, primary_api: str, cooldown: float = 30.0) -> None:
    backup_api = "openai" if primary_api == "anthropic" else "anthropic"
    main = model(primary_api, model=PRIMARY, max_retries=1, fallback=["spare"], cooldown_s=cooldown)
    models = {"main": main | {"price": {"input": 1.0, "output": 2.0}}}
    models["spare"] = model(backup_api, model=BACKUP, price={"input": 10.0, "output": 20.0})
    spec = workflow(name="fb", models=models, default_model="main", entry="worker")
    write_project(tmp, spec, {"worker": ["list_directory"]}, name="fb.yaml")


class Outage:
    """The primary model answers 503 to its first `failures` requests, then works; the backup
    always works and holds its second answer until `hold` seconds after the primary's last 503
    (the client's cooldown starts after that 503, so with `hold` a little over the cooldown,
    the primary's cooldown has run out when the answer comes; the cooldown itself is long
    enough for the second call to come within it, a first SDK import on a busy machine
    included). Replies: two tool calls, then a text answer (by assistant turns)."""

    def __init__(self, failures: int, hold: float) -> None:
        self.failures = failures
        self.hold = hold
        self.lock = threading.Lock()
        self.failed_at = time.monotonic()

    def __call__(self, request: WireRequest) -> Reply:
        if request.body.get("model") == PRIMARY:
            with self.lock:
                failing = self.failures > 0
                self.failures -= 1 if failing else 0
                if failing:
                    self.failed_at = time.monotonic()
            if failing:
                return Reply(status=503)
        turn = request.assistant_turns
        delay = 0.0
        if request.body.get("model") == BACKUP and turn == 1:
            delay = max(0.0, self.failed_at + self.hold - time.monotonic())
        if turn < 2:
            return Reply(tool_calls=[ToolCallSpec("list_directory", {"path": "."})], delay_s=delay)
        return Reply(text=f"done by {request.body.get('model')}", delay_s=delay)


@pytest.mark.parametrize("primary_api", WIRES)
def test_fallback_after_503s_then_cooldown_then_primary_again(tmp_path: Path, primary_api: str) -> None:
    fallback_project(tmp_path, primary_api, cooldown=12.0)
    with WireServer(Outage(failures=2, hold=13.0)) as server:
        proc = run_cli(
            ["fb.yaml", "--run-id", "r"], cwd=tmp_path, env=model_env(server, *WIRES, **FAST_RETRIES)
        )
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = tmp_path / "runs" / "r"
    evs = events(run_dir)

    # call 1: the primary failed (1 try + 1 retry), then the backup answered on the other wire format;
    # call 2: the primary was cooling down, so it went straight to the backup;
    # call 3: the cooldown was over, the primary was tried again and answered
    models = [(r.api, r.body["model"]) for r in requests]
    backup_api = "openai" if primary_api == "anthropic" else "anthropic"
    assert models == [
        (primary_api, PRIMARY),
        (primary_api, PRIMARY),
        (backup_api, BACKUP),
        (backup_api, BACKUP),
        (primary_api, PRIMARY),
    ]
    switches = [e for e in evs if e["type"] == "model_fallback"]
    assert [(e["step"], e["from_model"], e["to_model"]) for e in switches] == [
        (1, "main", "spare"),
        (2, "main", "spare"),
    ]
    assert "HTTP 503" in switches[0]["reason"] and "after 1 retry" in switches[0]["reason"]
    assert "cooling down" in switches[1]["reason"]
    served = [e.get("served_by") for e in evs if e["type"] == "model_response"]
    assert served == ["spare", "spare", None]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    assert evs[-1]["message"] == f"done by {PRIMARY}"

    # usage and cost per model: two calls on the spare (at its price), one on the main model
    usage = json.loads((run_dir / "usage.json").read_text())
    lines = {line["model"]: line for line in usage["by_agent_model"]}
    assert lines["spare"]["calls"] == 2 and lines["main"]["calls"] == 1
    assert lines["spare"]["cost_usd"] == pytest.approx((2 * 10 * 10.0 + 2 * 5 * 20.0) / 1e6)
    assert lines["main"]["cost_usd"] == pytest.approx((10 * 1.0 + 5 * 2.0) / 1e6)
    assert usage["by_model"]["spare"]["fallback_calls"] == 2
    shown = run_cli(["show", str(run_dir)]).stdout
    assert "model call 1: main → spare (agent 'worker': model 'main'" in shown
    assert "model call 2: main → spare (main is cooling down after a failure" in shown

    # replay offline across the switches: the same answers, the same usage per model
    again = run_cli(["replay", str(run_dir), "--into", str(tmp_path / "again"), "-q"])
    assert again.returncode == 0, again.stdout + again.stderr
    replayed = json.loads((tmp_path / "again" / "usage.json").read_text())
    assert replayed["by_agent_model"] == usage["by_agent_model"]


def test_no_fallback_for_errors_that_are_not_retryable(tmp_path: Path) -> None:
    fallback_project(tmp_path, "anthropic")

    def refuse(request: WireRequest) -> Reply:
        return Reply(status=400) if request.body.get("model") == PRIMARY else Reply(text="never")

    with WireServer(refuse) as server:
        proc = run_cli(
            ["fb.yaml", "--run-id", "r"], cwd=tmp_path, env=model_env(server, *WIRES, **FAST_RETRIES)
        )
        requests = server.requests
    assert proc.returncode == 1
    assert "HTTP 400" in proc.stderr and "Traceback" not in proc.stderr
    assert [r.body["model"] for r in requests] == [PRIMARY]
    assert not any(e["type"] == "model_fallback" for e in events(tmp_path / "runs" / "r"))


def test_every_model_of_the_chain_failing_fails_the_run(tmp_path: Path) -> None:
    fallback_project(tmp_path, "openai")

    def down(request: WireRequest) -> Reply:
        return Reply(status=529 if request.api == "anthropic" else 503)

    with WireServer(down) as server:
        proc = run_cli(
            ["fb.yaml", "--run-id", "r"], cwd=tmp_path, env=model_env(server, *WIRES, **FAST_RETRIES)
        )
    assert proc.returncode == 1
    assert "model 'spare'" in proc.stderr and "HTTP 529" in proc.stderr
    switches = [e for e in events(tmp_path / "runs" / "r") if e["type"] == "model_fallback"]
    assert len(switches) == 1


def test_resume_after_a_kill_keeps_the_fallback_answers(tmp_path: Path) -> None:
    fallback_project(tmp_path, "anthropic", cooldown=60)
    run_dir = tmp_path / "runs" / "k"
    with WireServer(Outage(failures=2, hold=30)) as server:
        child = popen_cli(
            ["fb.yaml", "--run-id", "k", "-q"], tmp_path, model_env(server, *WIRES, **FAST_RETRIES)
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            evs = events(run_dir) if (run_dir / "events.jsonl").exists() else []
            if any(e["type"] == "model_request" and e["step"] == 2 for e in evs):
                break
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=120)
        before = len(server.requests)
        # the resumed process has a fresh cooldown table: the primary works again now
        proc = run_cli(
            ["resume", str(run_dir), "-q"], cwd=tmp_path, env=model_env(server, *WIRES, **FAST_RETRIES)
        )
        after = [r.body["model"] for r in server.requests[before:]]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert after == [PRIMARY, PRIMARY]  # calls 2 and 3 live; call 1 came from the log
    usage = json.loads((run_dir / "usage.json").read_text())
    lines = {line["model"]: line["calls"] for line in usage["by_agent_model"]}
    assert lines == {"spare": 1, "main": 2}


def test_validate_and_the_key_check_know_the_fallbacks(tmp_path: Path) -> None:
    fallback_project(tmp_path, "anthropic")
    wf = yaml.safe_load((tmp_path / "fb.yaml").read_text())
    wf["models"]["main"]["fallback"] = ["spar", "main"]
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(wf))
    proc = run_cli(["validate", "bad.yaml", "--format", "json"], cwd=tmp_path)
    found = {(d["path"], d["code"]) for d in json.loads(proc.stdout)["diagnostics"]}
    assert ("models.main.fallback[0]", "unknown-model") in found
    assert ("models.main.fallback[1]", "invalid") in found
    proc = run_cli(
        ["fb.yaml", "--run-id", "x"], cwd=tmp_path, env={"ANTHROPIC_API_KEY": "k-for-the-main-model"}
    )
    assert proc.returncode == 1
    assert "OPENAI_API_KEY (for worker)" in proc.stderr


FAILURES = {"m-429": Reply(status=429), "m-500": Reply(status=500), "m-529": Reply(status=529)}
TIMEOUT_MODEL = "m-timeout"


def failing_primaries(request: WireRequest) -> Reply:
    """Each primary model fails its own way; a hung one answers after its client gave up."""
    model = request.body.get("model")
    if model in FAILURES:
        return FAILURES[model]
    if model == TIMEOUT_MODEL:
        # far past the client's 0.5 s: an SDK import on a busy machine can hold the event loop
        # for seconds, and a reply waiting when it wakes would beat the timer
        return Reply(text="too late", delay_s=30.0)
    return Reply(text=f"{request.system} answered by {model}")


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
@pytest.mark.parametrize("primary_api", WIRES)
def test_fallback_on_each_retryable_failure(tmp_path: Path, primary_api: str, stream: bool) -> None:
    """429, a 5xx, 529 overloaded and a timeout each switch to the fallback once the primary's
    own retries are used up: four agents at once, each on a primary that fails its own way."""
    backup_api = "openai" if primary_api == "anthropic" else "anthropic"
    primaries = {
        f"p{model.removeprefix('m-')}": {
            "provider": primary_api,
            "model": model,
            "max_retries": 1,
            "fallback": ["spare"],
            **({"timeout_s": 0.5} if model == TIMEOUT_MODEL else {}),
        }
        for model in [*FAILURES, TIMEOUT_MODEL]
    }
    workflow = {
        "version": 1,
        "kind": "workflow",
        "name": "classes",
        "models": {**primaries, "spare": {"provider": backup_api, "model": BACKUP}},
        "steps": [{"parallel": [{"agent": f"a{name}", "task": "Answer."} for name in primaries]}],
    }
    agents = {f"a{name}": {"prompt": f"agent a{name}", "model": name} for name in primaries}
    write_project(tmp_path, workflow, agents, name="classes.yaml")
    with WireServer(failing_primaries) as server:
        args = ["classes.yaml", "--run-id", "r", "--stream" if stream else "--no-stream"]
        proc = run_cli(args, cwd=tmp_path, env=model_env(server, *WIRES, **FAST_RETRIES))
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {r.stream for r in requests} == {stream}
    # each primary: its first try and its one retry, on its own wire format; then the spare (a
    # retry that times out may give up before the busy server has read it)
    for failing in FAILURES:
        assert [r.api for r in requests if r.body["model"] == failing] == [primary_api] * 2, failing
    assert [r.api for r in requests if r.body["model"] == TIMEOUT_MODEL] in ([primary_api], [primary_api] * 2)
    assert [r.api for r in requests if r.body["model"] == BACKUP] == [backup_api] * 4
    evs = events(tmp_path / "runs" / "r")
    reasons = {e["from_model"]: e["reason"] for e in evs if e["type"] == "model_fallback"}
    assert {e["to_model"] for e in evs if e["type"] == "model_fallback"} == {"spare"}
    assert "HTTP 429" in reasons["p429"] and "HTTP 500" in reasons["p500"]
    assert "HTTP 529" in reasons["p529"] and "timeout" in reasons["ptimeout"]
    assert all("after 1 retry" in reason for reason in reasons.values())
    answers = {e["agent"]: e["response"]["text"] for e in evs if e["type"] == "model_response"}
    assert answers == {f"a{n}": f"agent a{n} answered by {BACKUP}" for n in primaries}
    usage = json.loads((tmp_path / "runs" / "r" / "usage.json").read_text())
    assert usage["by_model"]["spare"]["fallback_calls"] == 4
    assert {line["model"] for line in usage["by_agent_model"]} == {"spare"}
