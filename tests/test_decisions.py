"""Durable human decisions: an `approve: ask` call, an `ask_user` question or an `on_budget: ask`
budget with nobody to answer makes the run wait (status `waiting`, exit 75, run.json listing
what it waits for), also from a sub-agent two levels down and from parallel branches at once;
`flowrun approve`, `flowrun answer` and `flowrun.respond` + `flowrun.resume` take the decision
and the run continues from its log. The real openai and anthropic SDKs talk to the scripted wire
server, which counts the requests of each model step: none is ever sent twice."""

from __future__ import annotations

import asyncio
import json
import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from support.cli import popen_cli, run_cli
from support.env import WIRES, model_env, point_sdks
from support.project import model, wire_script, workflow, write_project
from support.runs import events, live_events, meta
from support.served import AGENTS, asked_twice, step_of
from support.served import replies as served_replies
from support.wire_server import Reply, Script, ToolCallSpec, WireRequest, WireServer

import flowrun
from flowrun.runtime.durable.event_log import read_events

WAITING = 75


# ---------------------------------------------------------------- a project and its server


def project(tmp: Path, provider: str, agents: dict[str, list[Any]], **keys: Any) -> Path:
    """A workflow whose agents (name -> tools) use `provider`'s model; `keys` over the default
    (entry: the first agent)."""
    spec = workflow(model(provider), **{"entry": next(iter(agents)), "task": "Do the job.", **keys})
    return write_project(tmp, spec, agents)


def no_step_twice(server: WireServer, script_: Script) -> None:
    twice = asked_twice(server.requests, script_)
    assert server.requests and not twice, twice


def results(run_dir: Path, tool: str) -> list[dict[str, Any]]:
    return [e["result"] for e in events(run_dir) if e["type"] == "tool_result" and e["tool"] == tool]


def consistent(run_dir: Path) -> None:
    """The log reads strictly (each seq once, in order), as resume reads it."""
    read_events(run_dir / "events.jsonl", strict=True)


# ---------------------------------------------------------------- two levels down


def nested(tmp: Path, provider: str, tool: Any = None) -> tuple[Path, Script]:
    """orchestrator -> manager -> worker (serve http's `nested` team and script), whose
    write_file needs an approval."""
    team = {name: AGENTS[name] for name in ("orchestrator", "manager", "worker")}
    wf = project(tmp, provider, team | ({"worker": [tool]} if tool else {}))
    return wf, served_replies()


def check_waiting_for_the_worker(run_dir: Path) -> dict[str, Any]:
    recorded = meta(run_dir)
    assert recorded["status"] == "waiting"
    (pending,) = recorded["pending"]
    assert pending["kind"] == "approval" and pending["tool"] == "write_file" and pending["agent"] == "worker"
    assert pending["arguments"] == {"path": "out.txt", "content": "approved\n"}
    # the instance path, two levels down
    parts = pending["agent_id"].split("/")
    assert [p.split("@")[0] for p in parts] == ["orchestrator", "manager", "worker"]
    log = events(run_dir)
    assert log[-1]["type"] == "run_end" and log[-1]["status"] == "waiting"
    assert [e["call_id"] for e in log if e["type"] == "decision_pending"] == [pending["call_id"]]
    assert not (run_dir / "out.txt").exists()
    consistent(run_dir)
    return dict(pending)


@pytest.mark.parametrize("provider", WIRES)
def test_an_approval_two_levels_down_waits_then_flowrun_approve_completes_it(
    tmp_path: Path, provider: str
) -> None:
    wf, replies = nested(tmp_path, provider)
    with WireServer(replies) as server:
        env = model_env(server, provider)
        first = run_cli([str(wf), "--run-id", "r", "-q"], cwd=tmp_path, env=env)
        assert first.returncode == WAITING, first.stdout + first.stderr
        assert "status: waiting" in first.stdout and "waiting for:" in first.stdout
        assert "flowrun approve" in first.stderr and "Traceback" not in first.stderr
        run_dir = tmp_path / "runs" / "r"
        pending = check_waiting_for_the_worker(run_dir)
        assert len(server.requests) == 3  # one step each; nothing else started

        listed = run_cli(["runs", "--runs-dir", "runs"], cwd=tmp_path)
        assert "waiting" in listed.stdout
        shown = run_cli(["show", str(run_dir)], cwd=tmp_path)
        assert "status: waiting" in shown.stdout and "approve write_file" in shown.stdout

        done = run_cli(["approve", str(run_dir), "--allow", "-q"], cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "status: completed" in done.stdout
        no_step_twice(server, replies)
        assert len(server.requests) == 6
    assert (run_dir / "out.txt").read_text() == "approved\n"
    recorded = meta(run_dir)
    assert recorded["status"] == "completed" and "pending" not in recorded
    log = events(run_dir)
    (decision,) = [e for e in log if e["type"] == "decision"]
    assert decision["allowed"] is True and decision["by"] == "cli" and decision["t"] > 0
    assert decision["agent_id"] == pending["agent_id"] and decision["call_id"] == pending["call_id"]
    approvals = [(e["approved"], e["by"]) for e in log if e["type"] == "approval"]
    assert approvals == [(True, "cli")]
    assert [e["status"] for e in log if e["type"] == "run_end"] == ["waiting", "completed"]
    consistent(run_dir)


@pytest.mark.parametrize("provider", WIRES)
async def test_respond_then_resume_completes_it_in_python(
    tmp_path: Path, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    wf_path, replies = nested(tmp_path, provider)
    with WireServer(replies) as server:
        point_sdks(monkeypatch, server, provider)
        wf = flowrun.load(wf_path)
        result = await wf.run(run_dir=tmp_path / "r")
        assert result.status == "waiting" and result.exit_code == WAITING and not result.ok
        (pending,) = result.pending
        assert pending.kind == "approval" and pending.agent == "worker" and pending.tool == "write_file"
        assert pending.attempt == 0 and pending.ref == f"{pending.agent_id}/{pending.call_id}#0"
        assert flowrun.pending_decisions(result.run_dir) == [pending]

        decision = flowrun.respond(result.run_dir, pending.call_id, allow=True, reason="fine", user="ana")
        assert (decision.allowed, decision.by, decision.user, decision.reason) == (
            True,
            "python",
            "ana",
            "fine",
        )
        assert flowrun.pending_decisions(result.run_dir) == []
        with pytest.raises(flowrun.UsageError, match="already decided"):
            flowrun.respond(result.run_dir, pending.call_id, allow=False)

        again = await flowrun.resume(result.run_dir)
        assert again.status == "completed" and again.exit_code == 0 and again.pending == []
        no_step_twice(server, replies)
        assert len(server.requests) == 6
    assert (tmp_path / "r" / "out.txt").read_text() == "approved\n"


@pytest.mark.parametrize("provider", WIRES)
def test_a_denial_reaches_the_agent_with_its_reason(tmp_path: Path, provider: str) -> None:
    wf, replies = nested(tmp_path, provider)
    with WireServer(replies) as server:
        env = model_env(server, provider)
        first = run_cli([str(wf), "--run-id", "r", "-q"], cwd=tmp_path, env=env)
        assert first.returncode == WAITING, first.stderr
        run_dir = tmp_path / "runs" / "r"
        done = run_cli(
            ["approve", str(run_dir), "--deny", "--reason", "not on Fridays", "-q"], cwd=tmp_path, env=env
        )
        assert done.returncode == 0, done.stdout + done.stderr
        no_step_twice(server, replies)
        worker_after = [
            r for r in server.requests if replies.agent_for(r) == "worker" and r.assistant_turns == 1
        ]
    (request,) = worker_after
    ((_, text, is_error),) = request.tool_results
    assert "did not approve" in text and "not on Fridays" in text
    assert is_error or provider == "openai"  # the chat completions format has no error flag
    assert not (run_dir / "out.txt").exists()
    (result,) = [
        e["result"] for e in events(run_dir) if e["type"] == "tool_result" and e["tool"] == "write_file"
    ]
    assert result["error"]["code"] == "NOT_APPROVED"


# ---------------------------------------------------------------- questions


@pytest.mark.parametrize("provider", WIRES)
def test_an_ask_user_question_waits_for_flowrun_answer(tmp_path: Path, provider: str) -> None:
    wf = project(tmp_path, provider, {"boss": ["ask_user"]})
    replies = wire_script(
        {
            "boss": [
                Reply(tool_calls=[ToolCallSpec("ask_user", {"question": "Which colour?"})]),
                Reply("Done."),
            ]
        }
    )
    with WireServer(replies) as server:
        env = model_env(server, provider)
        first = run_cli([str(wf), "--run-id", "q", "-q"], cwd=tmp_path, env=env)
        assert first.returncode == WAITING, first.stderr
        run_dir = tmp_path / "runs" / "q"
        (pending,) = meta(run_dir)["pending"]
        assert pending["kind"] == "question" and pending["question"] == "Which colour?"
        assert "flowrun answer" in first.stderr

        wrong = run_cli(["approve", str(run_dir), "--allow"], cwd=tmp_path, env=env)
        assert wrong.returncode == 2 and "is a question" in wrong.stderr

        done = run_cli(["answer", str(run_dir), "Blue, please.", "-q"], cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        no_step_twice(server, replies)
        (after,) = [r for r in server.requests if r.assistant_turns == 1]
    assert after.tool_results[0][1] == "Blue, please."
    (decision,) = [e for e in events(run_dir) if e["type"] == "decision"]
    assert decision["answer"] == "Blue, please." and decision["by"] == "cli"


def one_line_refusal(proc: Any) -> str:
    """The refusal's line (exit 2: one line and its hint, no traceback)."""
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2 and "Traceback" not in proc.stderr, proc.stderr
    return str(lines[0])


def test_flowrun_answer_refuses_a_question_already_answered_or_timed_out(tmp_path: Path) -> None:
    """`flowrun show` names the question by its ref; `flowrun answer --call REF` a second time
    is refused with one line saying by whom it was answered, and only the first answer reaches
    the agent. A question whose deadline passed is refused the same way: the deadline took it."""
    wf = project(tmp_path, "openai", {"boss": ["ask_user"]})
    ask = Reply(tool_calls=[ToolCallSpec("ask_user", {"question": "Which colour?"})])
    replies = wire_script({"boss": [ask, Reply("Done.")]})
    with WireServer(replies) as server:
        env = model_env(server, "openai")
        first = run_cli([str(wf), "--run-id", "q", "-q"], cwd=tmp_path, env=env)
        assert first.returncode == WAITING, first.stderr
        run_dir = tmp_path / "runs" / "q"
        (pending,) = meta(run_dir)["pending"]
        ref = pending["ref"]
        assert ref == f"{pending['agent_id']}/{pending['call_id']}#0"
        shown = run_cli(["show", str(run_dir)], cwd=tmp_path)
        assert f"(ref {ref})" in shown.stdout, shown.stdout

        taken = run_cli(["answer", str(run_dir), "Blue.", "--call", ref, "--no-continue"], cwd=tmp_path)
        assert taken.returncode == 0, taken.stdout + taken.stderr
        late = one_line_refusal(run_cli(["answer", str(run_dir), "Red.", "--call", ref], cwd=tmp_path))
        assert ref in late and f"{ref} in {run_dir} was already decided: answered 'Blue.' by cli" in late, (
            late
        )
        done = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        (after,) = [r for r in server.requests if r.assistant_turns == 1]
        assert after.tool_results[0][1] == "Blue."
        assert [e["answer"] for e in events(run_dir) if e["type"] == "decision"] == ["Blue."]

        timed = run_cli([str(wf), "--run-id", "t", "--decide-within", "0.05", "-q"], cwd=tmp_path, env=env)
        assert timed.returncode == WAITING, timed.stderr
    run_dir = tmp_path / "runs" / "t"
    (pending,) = meta(run_dir)["pending"]
    while time.time() <= pending["deadline"]:  # until the deadline has passed
        time.sleep(0.01)
    ref = pending["ref"]
    late = one_line_refusal(run_cli(["answer", str(run_dir), "Blue.", "--call", ref], cwd=tmp_path))
    assert (
        f"{ref} in {run_dir} timed out: nobody decided it before its deadline, so it was left unanswered"
        in late
    ), late
    (decision,) = [e for e in events(run_dir) if e["type"] == "decision"]
    assert (decision.get("answer"), decision["by"], decision["attempt"]) == (None, "deadline", 0)


# ---------------------------------------------------------------- parallel branches


def branches(tmp: Path, provider: str) -> tuple[Path, Script]:
    """Two parallel branches whose first step needs an approval; both model calls are in flight
    together (held by the server), so whichever becomes pending first, the other one finishes
    its call while the run drains and becomes pending too."""
    ask = {"write_file": {"approve": "ask"}}
    wf = project(
        tmp,
        provider,
        {"alpha": [ask], "beta": [ask]},
        entry=None,
        task=None,
        steps=[{"parallel": [{"agent": "alpha", "task": "Side A."}, {"agent": "beta", "task": "Side B."}]}],
    )
    replies = wire_script(
        {
            name: [
                Reply(
                    tool_calls=[ToolCallSpec("write_file", {"path": f"{name}.txt", "content": name})],
                    delay_s=0.3,
                ),
                Reply(f"{name} done."),
            ]
            for name in ("alpha", "beta")
        }
    )
    return wf, replies


@pytest.mark.parametrize("provider", WIRES)
def test_two_parallel_branches_wait_at_once_and_are_decided_one_by_one(tmp_path: Path, provider: str) -> None:
    wf, replies = branches(tmp_path, provider)
    with WireServer(replies) as server:
        env = model_env(server, provider)
        first = run_cli([str(wf), "--run-id", "p", "-q"], cwd=tmp_path, env=env)
        assert first.returncode == WAITING, first.stderr
        run_dir = tmp_path / "runs" / "p"
        pending = meta(run_dir)["pending"]
        assert sorted(p["agent"] for p in pending) == ["alpha", "beta"]
        assert len(server.requests) == 2

        several = run_cli(["approve", str(run_dir), "--allow"], cwd=tmp_path, env=env)
        assert several.returncode == 2 and "2 decisions are pending" in several.stderr
        assert len(several.stderr.strip().splitlines()) == 2  # one line, and its hint
        by_agent = {p["agent"]: p for p in pending}
        call = by_agent["alpha"]["call_id"]
        if by_agent["beta"]["call_id"] == call:  # the same script: the same call id in both
            shared = run_cli(["approve", str(run_dir), "--call", call, "--allow"], cwd=tmp_path, env=env)
            assert shared.returncode == 2 and "have call id" in shared.stderr
        alpha = run_cli(
            ["approve", str(run_dir), "--call", by_agent["alpha"]["ref"], "--allow", "--no-continue"],
            cwd=tmp_path,
            env=env,
        )
        assert alpha.returncode == 0, alpha.stderr
        assert [p["agent"] for p in meta(run_dir)["pending"]] == ["beta"]
        assert meta(run_dir)["status"] == "waiting"
        beta = run_cli(["approve", str(run_dir), "--deny", "-q"], cwd=tmp_path, env=env)  # the one left
        assert beta.returncode == 0, beta.stdout + beta.stderr
        no_step_twice(server, replies)
        assert len(server.requests) == 4
    assert (run_dir / "alpha.txt").read_text() == "alpha" and not (run_dir / "beta.txt").exists()
    assert meta(run_dir)["status"] == "completed"
    consistent(run_dir)


# ---------------------------------------------------------------- SIGKILL while it drains


class HeldFirst:
    """The script, but the first request of `agent` is held until `release` is set."""

    def __init__(self, inner: Script, agent: str) -> None:
        self.inner = inner
        self.agent = agent
        self.release = threading.Event()
        self.held = 0

    def __call__(self, request: WireRequest) -> Reply:
        if self.inner.agent_for(request) == self.agent and request.assistant_turns == 0 and not self.held:
            self.held += 1
            self.release.wait(60)
        return self.inner(request)


def test_sigkill_while_the_run_drains_then_answer_completes_it(tmp_path: Path) -> None:
    """alpha waits for an approval while beta's model call is still in flight; the process is
    killed then. The folder stays consistent, and `flowrun approve` completes the run: only the
    call that was in flight at the kill is asked again."""
    provider = "openai"
    wf, replies = branches(tmp_path, provider)
    for reply in (replies.agents["alpha"][0], replies.agents["beta"][0]):
        reply.delay_s = 0.0
    held = HeldFirst(replies, "beta")
    run_dir = tmp_path / "runs" / "k"
    with WireServer(held) as server:
        child = popen_cli([str(wf), "--run-id", "k", "-q"], tmp_path, model_env(server, provider))
        try:
            deadline = time.monotonic() + 120
            while not any(e["type"] == "decision_pending" for e in live_events(run_dir)):
                assert child.poll() is None and time.monotonic() < deadline, child.communicate()
                time.sleep(0.02)
            assert meta(run_dir)["status"] == "running"  # still draining: beta's call is in flight
            child.send_signal(signal.SIGKILL)
            child.communicate(timeout=30)
        finally:
            held.release.set()
            if child.poll() is None:
                child.kill()
        consistent(run_dir)
        assert not any(e["type"] == "run_end" for e in events(run_dir))
        answered = {(e["agent"], e["step"]) for e in events(run_dir) if e["type"] == "model_response"}
        before = len(server.requests)

        env = model_env(server, provider)
        alpha = run_cli(["approve", str(run_dir), "--allow", "-q"], cwd=tmp_path, env=env)
        assert alpha.returncode == WAITING, alpha.stdout + alpha.stderr  # beta's call, asked again, waits too
        assert [p["agent"] for p in meta(run_dir)["pending"]] == ["beta"]
        done = run_cli(["approve", str(run_dir), "--allow", "-q"], cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        after = [step_of(r, replies) for r in server.requests[before:]]
    assert ("alpha", 1) in answered
    assert not any(
        (agent, turn + 1) in answered for agent, _, turn in after
    )  # nothing answered is asked again
    assert Counter(after)[("beta", "Side B.", 0)] == 1  # the call in flight at the kill, once more
    assert meta(run_dir)["status"] == "completed"
    assert (run_dir / "alpha.txt").read_text() == "alpha" and (run_dir / "beta.txt").read_text() == "beta"
    consistent(run_dir)


# ---------------------------------------------------------------- the deadline


async def test_past_the_deadline_resume_denies_the_approval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = "anthropic"
    wf_path, replies = nested(tmp_path, provider)
    with WireServer(replies) as server:
        point_sdks(monkeypatch, server, provider)
        wf = flowrun.load(wf_path)
        result = await wf.run(run_dir=tmp_path / "r", decide_within=0.05)
        (pending,) = result.pending
        assert pending.deadline is not None
        assert meta(result.run_dir)["options"]["decide_within"] == 0.05
        await asyncio.sleep(max(0.0, pending.deadline - time.time()) + 0.01)  # until it is overdue
        assert pending.overdue()
        with pytest.raises(flowrun.UsageError, match=r"timed out: .*, so it was denied"):
            flowrun.respond(result.run_dir, pending.call_id, allow=True)
        again = await flowrun.resume(result.run_dir)
        assert again.status == "completed"
        no_step_twice(server, replies)
        (after,) = [r for r in server.requests if replies.agent_for(r) == "worker" and r.assistant_turns == 1]
    assert "within the deadline" in after.tool_results[0][1]
    (decision,) = [e for e in events(result.run_dir) if e["type"] == "decision"]
    assert (decision["allowed"], decision["by"]) == (False, "deadline")
    assert not (tmp_path / "r" / "out.txt").exists()


async def test_expire_decisions_takes_only_overdue_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wf_path, replies = nested(tmp_path, "openai")
    with WireServer(replies) as server:
        point_sdks(monkeypatch, server, "openai")
        wf = flowrun.load(wf_path)
        result = await wf.run(run_dir=tmp_path / "r", decide_within="2h")
    (pending,) = result.pending
    assert pending.deadline is not None and pending.deadline - time.time() > 3600
    assert flowrun.expire_decisions(result.run_dir) == []
    (taken,) = flowrun.expire_decisions(result.run_dir, now=pending.deadline + 1)
    assert (taken.allowed, taken.by) == (False, "deadline")
    assert flowrun.pending_decisions(result.run_dir) == [] and meta(result.run_dir)["pending"] == []


# ---------------------------------------------------------------- budgets


@pytest.mark.parametrize("provider", WIRES)
def test_on_budget_ask_waits_and_a_grant_raises_the_limit(tmp_path: Path, provider: str) -> None:
    wf = project(
        tmp_path, provider, {"boss": ["read_file"]}, limits={"max_total_steps": 2, "on_budget": "ask"}
    )
    (tmp_path / "a.txt").write_text("a")
    replies = wire_script(
        {
            "boss": [
                Reply(tool_calls=[ToolCallSpec("read_file", {"path": "question.txt"})]),
                Reply(tool_calls=[ToolCallSpec("read_file", {"path": "question.txt"})]),
                Reply(tool_calls=[ToolCallSpec("read_file", {"path": "question.txt"})]),
                Reply("Done."),
            ]
        }
    )
    with WireServer(replies) as server:
        env = model_env(server, provider)
        first = run_cli([str(wf), "--run-id", "b", "-q"], cwd=tmp_path, env=env)
        assert first.returncode == WAITING, first.stderr
        run_dir = tmp_path / "runs" / "b"
        (pending,) = meta(run_dir)["pending"]
        assert (
            pending["kind"] == "budget" and pending["limit"] == "max_total_steps" and pending["amount"] == 2
        )
        assert len(server.requests) == 2

        more = run_cli(["approve", str(run_dir), "--allow", "--grant", "1", "-q"], cwd=tmp_path, env=env)
        assert more.returncode == WAITING, more.stderr  # 3 steps allowed now; it needs 4
        (pending,) = meta(run_dir)["pending"]
        assert pending["message"] == "max_total_steps (3) reached"
        refused = run_cli(["approve", str(run_dir), "--deny", "-q"], cwd=tmp_path, env=env)
        assert refused.returncode == 4, refused.stderr
        assert meta(run_dir)["status"] == "budget_exceeded"
        no_step_twice(server, replies)
        assert len(server.requests) == 3
    grants = [(e["allowed"], e.get("grant")) for e in events(run_dir) if e["type"] == "decision"]
    assert grants == [(True, 1.0), (False, None)]


def test_a_budget_asked_anew_after_a_resume_refuses_the_earlier_attempts_answer(tmp_path: Path) -> None:
    """The run waits for more steps at 2; the workflow's limit is raised to 3 and the run is
    resumed: it reaches the new limit, a request of its own (attempt 1) in the place of the
    first. An answer naming the first is refused with one line, never applied to the second;
    the second is granted as much again of what it asks (3 more)."""
    provider = "openai"
    wf = project(
        tmp_path, provider, {"boss": ["read_file"]}, limits={"max_total_steps": 2, "on_budget": "ask"}
    )
    read = Reply(tool_calls=[ToolCallSpec("read_file", {"path": "question.txt"})])
    replies = wire_script({"boss": [read, read, read, read, Reply("Done.")]})
    with WireServer(replies) as server:
        env = model_env(server, provider)
        first = run_cli([str(wf), "--run-id", "b", "-q"], cwd=tmp_path, env=env)
        assert first.returncode == WAITING, first.stderr
        run_dir = tmp_path / "runs" / "b"
        (before,) = meta(run_dir)["pending"]
        assert (before["ref"], before["attempt"], before["amount"]) == ("budget-max_total_steps-1#0", 0, 2)

        wf.write_text(wf.read_text().replace("max_total_steps: 2", "max_total_steps: 3"))
        again = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path, env=env)
        assert again.returncode == WAITING, again.stdout + again.stderr
        (now,) = meta(run_dir)["pending"]
        assert (now["ref"], now["attempt"], now["amount"]) == ("budget-max_total_steps-1#1", 1, 3)
        assert now["message"] == "max_total_steps (3) reached"

        stale = run_cli(["approve", str(run_dir), "--call", before["ref"], "--allow"], cwd=tmp_path, env=env)
        assert stale.returncode == 2, stale.stdout + stale.stderr
        assert "belongs to an earlier attempt of the run (attempt 0" in stale.stderr
        assert (
            len(stale.stderr.strip().splitlines()) == 2 and "Traceback" not in stale.stderr
        )  # one line, a hint
        with pytest.raises(flowrun.UsageError, match="earlier attempt"):
            flowrun.respond(run_dir, before["ref"], allow=False)
        assert [p.ref for p in flowrun.pending_decisions(run_dir)] == [now["ref"]]

        done = run_cli(
            ["approve", str(run_dir), "--call", now["ref"], "--allow", "-q"], cwd=tmp_path, env=env
        )
        assert done.returncode == 0, done.stdout + done.stderr
        no_step_twice(server, replies)
        assert len(server.requests) == 5
    decisions = [(e["attempt"], e["grant"], e["amount"]) for e in events(run_dir) if e["type"] == "decision"]
    assert decisions == [(1, 3.0, 3)]
    ends = [e.get("pending") for e in events(run_dir) if e["type"] == "run_end"]
    assert ends == [[before["ref"]], [now["ref"]], []]
    consistent(run_dir)


class EditedWorker:
    """The script, but a worker whose prompt says "twice" writes something else, as a model
    asked live after its prompt changed would: under the same call id, or (`detour`) after a
    call of an unknown tool, so under another."""

    def __init__(self, inner: Script, detour: bool) -> None:
        self.inner = inner
        self.detour = detour

    def __call__(self, request: WireRequest) -> Reply:
        reply = self.inner(request)
        if "twice" not in request.system or self.inner.agent_for(request) != "worker":
            return reply
        if self.detour and request.assistant_turns == 0:
            return Reply(tool_calls=[ToolCallSpec("nope", {})])
        if request.assistant_turns == int(self.detour):
            return Reply(tool_calls=[ToolCallSpec("write_file", {"path": "out.txt", "content": "twice\n"})])
        return reply


@pytest.mark.parametrize("detour", [False, True], ids=["same-call-id", "another-call-id"])
def test_a_call_asked_anew_after_a_prompt_change_is_not_decided_by_the_old_answer(
    tmp_path: Path, detour: bool
) -> None:
    """The worker waits for an approval; its prompt is changed and the run resumed: the worker,
    asked live, makes another call. That call is a request of the new attempt; the old one is
    no longer pending, an answer naming it is refused, and its arguments are never shown."""
    provider = "openai"
    wf, replies = nested(tmp_path, provider)
    with WireServer(EditedWorker(replies, detour)) as server:
        env = model_env(server, provider)
        first = run_cli([str(wf), "--run-id", "r", "-q"], cwd=tmp_path, env=env)
        assert first.returncode == WAITING, first.stderr
        run_dir = tmp_path / "runs" / "r"
        old = check_waiting_for_the_worker(run_dir)

        worker = tmp_path / "agents.d" / "worker.yaml"
        worker.write_text(
            worker.read_text().replace("You are the worker.", "You are the worker. Write it twice.")
        )
        again = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path, env=env)
        assert again.returncode == WAITING, again.stdout + again.stderr
        (new,) = meta(run_dir)["pending"]
        assert new["agent_id"] == old["agent_id"] and (new["call_id"] != old["call_id"]) == detour
        assert new["arguments"] == {"path": "out.txt", "content": "twice\n"} and new["attempt"] == 1
        assert [p.ref for p in flowrun.pending_decisions(run_dir)] == [new["ref"]] != [old["ref"]]

        stale = run_cli(["approve", str(run_dir), "--call", old["ref"], "--allow"], cwd=tmp_path, env=env)
        assert stale.returncode == 2 and "belongs to an earlier attempt" in stale.stderr, stale.stderr
        done = run_cli(["approve", str(run_dir), "--deny", "-q"], cwd=tmp_path, env=env)  # the one left
        assert done.returncode == 0, done.stdout + done.stderr
    assert not (run_dir / "out.txt").exists()
    decisions = [
        (e["call_id"], e["allowed"], e["attempt"]) for e in events(run_dir) if e["type"] == "decision"
    ]
    assert decisions == [(new["call_id"], False, 1)]
    consistent(run_dir)


async def test_an_answer_to_a_decision_taken_or_timed_out_is_refused_in_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wf_path, replies = nested(tmp_path, "openai")
    with WireServer(replies) as server:
        point_sdks(monkeypatch, server, "openai")
        wf = flowrun.load(wf_path)
        result = await wf.run(run_dir=tmp_path / "r")
        (pending,) = result.pending
        flowrun.respond(result.run_dir, pending.ref, allow=True)
        for handle in (pending.ref, pending.call_id):
            with pytest.raises(flowrun.UsageError, match=r"was already decided: allowed by python") as taken:
                flowrun.respond(result.run_dir, handle, answer="late")
            assert "\n" not in taken.value.message
        late = await wf.run(run_dir=tmp_path / "late", decide_within=0.05)
        (overdue,) = late.pending
        await asyncio.sleep(max(0.0, (overdue.deadline or 0) - time.time()) + 0.01)  # until it is overdue
        with pytest.raises(flowrun.UsageError, match="timed out: nobody decided it before its deadline"):
            flowrun.respond(late.run_dir, overdue.ref, allow=True)


# ---------------------------------------------------------------- the old refusal, and callbacks


async def test_decisions_refuse_keeps_the_refusal_and_a_callback_can_take_a_pending_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wf_path, replies = nested(tmp_path, "openai")
    with WireServer(replies) as server:
        point_sdks(monkeypatch, server, "openai")
        wf = flowrun.load(wf_path)
        refused = await wf.run(run_dir=tmp_path / "refused", decisions="refuse")
        assert refused.status == "completed"
        (result,) = [
            e["result"]
            for e in events(refused.run_dir)
            if e["type"] == "tool_result" and e["tool"] == "write_file"
        ]
        assert result["error"]["code"] == "NOT_APPROVED"

        later: list[str] = []

        async def not_now(request: flowrun.ApprovalRequest) -> bool | None:
            later.append(request.agent_id)
            return None  # decide later: the run waits

        waiting = await wf.run(run_dir=tmp_path / "w", approve=not_now)
        assert waiting.status == "waiting" and later == [waiting.pending[0].agent_id]

        async def yes(request: flowrun.ApprovalRequest) -> bool:
            return True

        done = await flowrun.resume(waiting.run_dir, approve=yes)
        assert done.status == "completed"
    (decision,) = [e for e in events(waiting.run_dir) if e["type"] == "decision"]
    assert (decision["allowed"], decision["by"]) == (True, "callback")
    assert (tmp_path / "w" / "out.txt").exists()


# ---------------------------------------------------------------- a batch item


def test_a_batch_item_that_waits(tmp_path: Path) -> None:
    provider = "openai"
    project(
        tmp_path,
        provider,
        {"boss": [{"write_file": {"approve": "ask"}}]},
        inputs={"name": {}},
        task="{{ name }}",
    )
    (tmp_path / "items.jsonl").write_text('{"id": "one", "name": "one"}\n{"id": "two", "name": "two"}\n')
    replies = wire_script(
        {
            "boss": [
                Reply(tool_calls=[ToolCallSpec("write_file", {"path": "f.txt", "content": "x"})]),
                Reply("ok"),
            ]
        }
    )
    args = ["batch", "wf.yaml", "items.jsonl", "--out", "b", "--processes", "1", "-q"]
    with WireServer(replies) as server:
        env = model_env(server, provider)
        first = run_cli(args, cwd=tmp_path, env=env)
        assert first.returncode == WAITING, first.stdout + first.stderr
        assert "2 waiting" in first.stdout and "status: waiting" in first.stdout
        results = [json.loads(line) for line in (tmp_path / "b" / "results.jsonl").read_text().splitlines()]
        assert [(r["id"], r["status"]) for r in results] == [("one", "waiting"), ("two", "waiting")]
        assert all("waiting for a decision" in r["error"] for r in results)

        item = tmp_path / "b" / results[0]["run_dir"]
        decided = run_cli(["approve", str(item), "--allow", "--no-continue"], cwd=tmp_path, env=env)
        assert decided.returncode == 0, decided.stderr
        again = run_cli(args, cwd=tmp_path, env=env)
        assert again.returncode == WAITING, again.stdout + again.stderr
        assert "1 completed" in again.stdout and "1 waiting" in again.stdout
        asked = Counter((r.last_user_text, r.assistant_turns) for r in server.requests)
    assert (item / "f.txt").read_text() == "x"
    assert sorted(asked.values()) == [1, 1, 1]  # one, two and one's second step: nothing twice


# ---------------------------------------------------------------- one-line refusals


def test_mistakes_get_one_line(tmp_path: Path) -> None:
    wf = project(tmp_path, "openai", {"boss": ["read_file"]})
    plain = tmp_path / "plain"
    plain.mkdir()
    cases = [
        (["approve", str(plain), "--allow"], "is not a run folder"),
        (["answer", str(plain), "x"], "is not a run folder"),
        ([str(wf), "--decide-within", "soon", "--dry-run"], "decide_within 'soon' is not a duration"),
    ]
    for args, said in cases:
        proc = run_cli(args, cwd=tmp_path)
        assert proc.returncode in (1, 2), proc.stderr
        assert said in proc.stderr and "Traceback" not in proc.stderr
    no_choice = run_cli(["approve", str(plain)], cwd=tmp_path)
    assert no_choice.returncode == 2 and "--allow or --deny" in no_choice.stderr
