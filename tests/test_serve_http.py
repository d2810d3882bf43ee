"""`flowrun serve http`, a real subprocess, driven over HTTP on 127.0.0.1 with httpx; its runs
talk to the scripted wire server through the real openai and anthropic SDKs. An approval two
levels down makes a run started through the API wait; a decision through the API completes it
with no model request made twice (counted at the wire server); a denial reaches the agent; two
parallel branches wait at once and are decided one by one; the server is SIGKILLed while a run
waits and the run is answered after a restart; the token is required off loopback; the event
stream resumed with Last-Event-ID loses and repeats nothing; files are read-only and confined
to the run folder."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.cli import run_cli
from support.env import WIRES, model_env
from support.procs import wait_for
from support.runs import events as events_of
from support.served import TOKEN, Held, Served, asked_twice, replies, served_project, status_of, wait_status
from support.wire_server import WireServer


class Stack:
    """The wire server and a `flowrun serve http` serving the project for one provider."""

    def __init__(self, root: Path, provider: str) -> None:
        self.root = root
        self.provider = provider
        self.script = replies()
        self.held = Held(self.script)
        self.wire = WireServer(self.held)
        self.files = served_project(root, provider)
        self.runs = root / "runs"
        self.served = self.start()

    def start(self) -> Served:
        args = [*map(str, self.files), "--port", "0", "--runs-dir", str(self.runs)]
        return Served(self.root, args, model_env(self.wire, self.provider))

    def close(self) -> None:
        self.held.release.set()
        self.served.stop()
        self.wire.stop()


@pytest.fixture(scope="module", params=WIRES)
def stack(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """One server per wire format, shared by the tests of this module that leave it as they
    found it (each waits for its own runs to end)."""
    served = Stack(tmp_path_factory.mktemp(f"serve-{request.param}"), request.param)
    try:
        yield served
    finally:
        served.close()


def start(http: httpx.Client, workflow: str, **body: Any) -> str:
    answer = http.post("/v1/runs", json={"workflow": workflow, **body})
    assert answer.status_code == 201, answer.text
    assert answer.json()["run"] == f"/v1/runs/{answer.json()['id']}"
    return str(answer.json()["id"])


# ---------------------------------------------------------------- decisions


def test_an_approval_two_levels_down_waits_and_a_decision_over_http_completes_it(stack: Stack) -> None:
    before = len(stack.wire.requests)
    with stack.served.client() as http:
        run_id = start(http, "nested")
        waiting = wait_status(http, run_id, "waiting", "failed", "completed")
        assert waiting["status"] == "waiting", waiting
        (pending,) = waiting["pending"]
        assert pending["kind"] == "approval" and pending["tool"] == "write_file"
        assert pending["arguments"] == {"path": "out.txt", "content": "approved\n"}
        path = [part.split("@")[0] for part in pending["agent_id"].split("/")]
        assert path == ["orchestrator", "manager", "worker"]  # two levels down
        assert not (stack.runs / run_id / "out.txt").exists()

        listed = http.get("/v1/runs", params={"status": "waiting", "workflow": "nested"}).json()
        assert run_id in [r["id"] for r in listed["runs"]]
        assert next(r for r in listed["runs"] if r["id"] == run_id)["pending"] == 1

        decided = http.post(f"/v1/runs/{run_id}/decisions", json={"allow": True, "user": "ana"})
        assert decided.status_code == 200, decided.text
        body = decided.json()
        assert body["pending"] == [] and body["status"] == "running"
        assert body["decision"]["allowed"] is True and body["decision"]["by"] == "http"
        done = wait_status(http, run_id, "completed", "failed", "waiting")
    assert done["status"] == "completed", done
    assert done["message"] == "All done."
    # per agent, as the web UI's team graph and charts show it (summed by the server, once)
    agents = {row["agent"]: row for row in done["agents"]}
    assert list(agents) == ["orchestrator", "manager", "worker"]
    assert all(row["status"] == "completed" and row["runs"] == 1 for row in agents.values()), agents
    assert sum(row["total_tokens"] for row in agents.values()) == done["total_tokens"]
    by_agent = {row["agent"]: row["calls"] for row in done["usage"]["by_agent"]}
    assert by_agent == {name: row["steps"] for name, row in agents.items()}
    assert sum(row["calls"] for row in done["usage"]["by_model"]) == sum(by_agent.values())
    assert (stack.runs / run_id / "out.txt").read_text() == "approved\n"
    asked = stack.wire.requests[before:]
    assert len(asked) == 6 and not asked_twice(asked, stack.script)  # no model request repeated
    (decision,) = [e for e in events_of(stack.runs / run_id) if e["type"] == "decision"]
    assert decision["by"] == "http" and decision["user"] == "ana" and decision["allowed"] is True


def test_a_denial_over_http_reaches_the_agent(stack: Stack) -> None:
    before = len(stack.wire.requests)
    with stack.served.client() as http:
        run_id = start(http, "nested")
        wait_status(http, run_id, "waiting")
        wrong = http.post(f"/v1/runs/{run_id}/decisions", json={"answer": "yes"})
        assert wrong.status_code == 400 and "not an answer" in wrong.json()["error"]
        unknown = http.post(f"/v1/runs/{run_id}/decisions", json={"allow": False, "call": "nope"})
        assert unknown.status_code == 400 and "no pending decision nope" in unknown.json()["error"]
        denied = http.post(f"/v1/runs/{run_id}/decisions", json={"allow": False, "reason": "not today"})
        assert denied.status_code == 200, denied.text
        done = wait_status(http, run_id, "completed", "failed")
        again = http.post(f"/v1/runs/{run_id}/decisions", json={"allow": True})
    assert done["status"] == "completed"
    assert again.status_code == 400 and "waits for no decision" in again.json()["error"]
    assert not (stack.runs / run_id / "out.txt").exists()
    (result,) = [
        e["result"]
        for e in events_of(stack.runs / run_id)
        if e["type"] == "tool_result" and e["tool"] == "write_file"
    ]
    assert result["status"] == "error" and result["error"]["code"] == "NOT_APPROVED"
    asked = stack.wire.requests[before:]
    (after,) = [r for r in asked if stack.script.agent_for(r) == "worker" and r.assistant_turns == 1]
    assert "not today" in after.tool_results[0][1]  # what the worker's model read
    assert not asked_twice(asked, stack.script)


def test_two_parallel_branches_wait_at_once_and_are_decided_over_http(stack: Stack) -> None:
    before = len(stack.wire.requests)
    with stack.served.client() as http:
        run_id = start(http, "branches")
        waiting = wait_status(http, run_id, "waiting", "failed", "completed")
        # whichever branch asked first, the other finished its model call while the run drained
        pending = {p["agent"]: p for p in waiting["pending"]}
        assert sorted(pending) == ["alpha", "beta"], waiting
        first = http.post(
            f"/v1/runs/{run_id}/decisions", json={"call": pending["alpha"]["ref"], "allow": True}
        )
        assert first.status_code == 200, first.text
        assert first.json()["status"] == "waiting"  # beta still waits: the run does not go on yet
        assert [p["agent"] for p in first.json()["pending"]] == ["beta"]
        second = http.post(f"/v1/runs/{run_id}/decisions", json={"allow": False, "reason": "one is enough"})
        assert second.status_code == 200 and second.json()["status"] == "running", second.text
        done = wait_status(http, run_id, "completed", "failed", "waiting")
    assert done["status"] == "completed", done
    assert (stack.runs / run_id / "alpha.txt").read_text() == "alpha"
    assert not (stack.runs / run_id / "beta.txt").exists()
    asked = stack.wire.requests[before:]
    assert len(asked) == 4 and not asked_twice(asked, stack.script)
    decisions = [(e["allowed"], e["by"]) for e in events_of(stack.runs / run_id) if e["type"] == "decision"]
    assert decisions == [(True, "http"), (False, "http")]


def test_an_answer_for_a_decision_already_taken_is_refused_by_its_ref(stack: Stack) -> None:
    """The web UI sends the pending request's ref (AGENT_ID/CALL_ID#ATTEMPT); a second answer
    for it, from a page that still shows it, is refused with one line and recorded nowhere."""
    with stack.served.client() as http:
        run_id = start(http, "nested")
        waiting = wait_status(http, run_id, "waiting", "failed", "completed")
        (pending,) = waiting["pending"]
        assert pending["attempt"] == 0
        assert pending["ref"] == f"{pending['agent_id']}/{pending['call_id']}#0"
        body = {"call": pending["ref"], "via": "ui", "continue": False}
        first = http.post(f"/v1/runs/{run_id}/decisions", json={**body, "allow": True})
        assert first.status_code == 200, first.text
        assert first.json()["decision"]["ref"] == pending["ref"] and first.json()["status"] == "waiting"
        late = http.post(f"/v1/runs/{run_id}/decisions", json={**body, "allow": False})
        assert late.status_code == 400, late.text
        said = late.json()["error"]
        assert said.startswith(f"{pending['ref']} in ") and "was already decided" in said and "\n" not in said
        assert "allowed by ui" in said
        resumed = http.post(f"/v1/runs/{run_id}/resume")
        assert resumed.status_code == 202, resumed.text
        done = wait_status(http, run_id, "completed", "failed", "waiting")
    assert done["status"] == "completed", done
    decisions = [
        (e["allowed"], e["by"], e["attempt"])
        for e in events_of(stack.runs / run_id)
        if e["type"] == "decision"
    ]
    assert decisions == [(True, "ui", 0)]


def test_bad_requests_get_one_line_errors(stack: Stack) -> None:
    with stack.served.client() as http:
        unknown = http.post("/v1/runs", json={"workflow": "nope"})
        nameless = http.post("/v1/runs", json={"inputs": {}})
        option = http.post("/v1/runs", json={"workflow": "talk", "options": {"dry_runn": True}})
        workdir = http.post("/v1/runs", json={"workflow": "talk", "options": {"workdir": "/"}})
        not_json = http.post("/v1/runs", content=b"{", headers={"content-type": "application/json"})
        missing = http.get("/v1/runs/no-such-run")
        path = http.get("/v1/runs/..%2F..%2Fetc")
        workflows = http.get("/v1/workflows").json()["workflows"]
    assert unknown.status_code == 404 and "talk" in unknown.json()["hint"]
    assert nameless.status_code == 404 and nameless.json()["error"] == "the request names no workflow"
    assert nameless.json()["hint"] == 'give "workflow": one of branches, nested, talk'
    assert option.status_code == 400 and option.json()["hint"] == "did you mean 'dry_run'?"
    assert workdir.status_code == 400 and "server's" in workdir.json()["error"]
    assert not_json.status_code == 400 and "not JSON" in not_json.json()["error"]
    assert missing.status_code == 404 and path.status_code == 404
    assert sorted(w["name"] for w in workflows) == ["branches", "nested", "talk"]


# ---------------------------------------------------------------- the event stream


def read_stream(response: httpx.Response, stop_after: int | None = None) -> list[dict[str, Any]]:
    """The server-sent events of a response, as {id, event, data}; all of them until `end`,
    or the first `stop_after`."""
    found: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    for line in response.iter_lines():
        if line.startswith(":"):
            continue
        if not line:
            if current:
                found.append(current)
                current = {}
                if found[-1].get("event") == "end":
                    return found
                if stop_after is not None and len(found) >= stop_after:
                    return found
            continue
        name, _, value = line.partition(": ")
        current[name] = value
    return found


def test_the_event_stream_resumed_with_last_event_id_loses_and_repeats_nothing(stack: Stack) -> None:
    stack.held.arm()
    with stack.served.client() as http:
        run_id = start(http, "talk")
        with http.stream("GET", f"/v1/runs/{run_id}/events") as first:
            assert first.headers["content-type"].startswith("text/event-stream")
            part = read_stream(first, stop_after=3)
        assert stack.held.holding.wait(120)  # the run is going on: its next model call is held
        last = part[-1]["id"]
        with http.stream("GET", f"/v1/runs/{run_id}/events", headers={"Last-Event-ID": last}) as rest:
            stack.held.release.set()  # the run goes on while the stream follows it live
            tail = read_stream(rest)
        whole = http.get(f"/v1/runs/{run_id}/events", params={"format": "json"}).json()["events"]
        after = http.get(f"/v1/runs/{run_id}/events", params={"after": "5"})
        later = read_stream(after)
    assert tail[-1]["event"] == "end" and json.loads(tail[-1]["data"])["status"] == "completed"
    streamed = part + tail[:-1]
    log = (stack.runs / run_id / "events.jsonl").read_text().splitlines()
    assert [int(e["id"]) for e in streamed] == list(range(1, len(log) + 1))  # each once, in order
    assert [e["data"] for e in streamed] == log  # the log's lines, as written
    assert [e["event"] for e in streamed] == [json.loads(line)["type"] for line in log]
    assert [json.dumps(e, ensure_ascii=False) for e in whole] == [
        json.dumps(json.loads(line), ensure_ascii=False) for line in log
    ]
    assert [int(e["id"]) for e in later[:-1]] == list(range(6, len(log) + 1))


def test_cancel_stops_a_run_resumably_and_resume_completes_it(stack: Stack) -> None:
    stack.held.arm()
    with stack.served.client() as http:
        run_id = start(http, "talk")
        assert stack.held.holding.wait(120)
        cancelled = http.post(f"/v1/runs/{run_id}/cancel")
        assert cancelled.status_code == 200, cancelled.text
        partial = cancelled.json()  # answered once the stop is recorded: the partial result
        assert (partial["id"], partial["status"], partial["resumable"]) == (run_id, "cancelled", True)
        ((talker,),) = [partial["agents"]]
        assert (talker["agent"], talker["status"], talker["said"]) == (
            "talker",
            "cancelled",
            "Looking at the folder.",
        )
        assert talker["steps"] == 1 and talker["total_tokens"] == 15  # the held call, cut, answered nothing
        assert partial["total_tokens"] == 15 and partial["cost_usd"] == pytest.approx(
            (10 * 1.0 + 5 * 2.0) / 1e6
        )
        assert partial["usage"]["total_tokens"] == 15 and "continue with" in partial["message"]
        assert status_of(http, run_id) == "cancelled"  # no wait: it was recorded before the answer
        stopped = wait_status(http, run_id, "cancelled")
        stack.held.release.set()
        twice = http.post(f"/v1/runs/{run_id}/cancel")
        resumed = http.post(f"/v1/runs/{run_id}/resume")
        assert resumed.status_code == 202, resumed.text
        done = wait_status(http, run_id, "completed", "failed")
        again = http.post(f"/v1/runs/{run_id}/resume")
    assert stopped["message"] and "continue with" in stopped["message"]
    assert twice.status_code == 409 and "not running" in twice.json()["error"]
    assert done["status"] == "completed" and done["message"] == "Talked."
    assert again.status_code == 409 and "nothing to resume" in again.json()["error"]
    kinds = [e["type"] for e in events_of(stack.runs / run_id)]
    assert kinds.count("run_end") == 2 and "run_resumed" in kinds


# ---------------------------------------------------------------- files


def test_files_are_read_only_and_confined_to_the_run_folder(stack: Stack, tmp_path: Path) -> None:
    with stack.served.client() as http:
        run_id = start(http, "talk")
        wait_status(http, run_id, "completed")
        folder = stack.runs / run_id
        secret = tmp_path / "secret.txt"
        secret.write_text("outside")
        (folder / "workspace").mkdir(exist_ok=True)
        (folder / "workspace" / "note.md").write_text("# inside\n")
        (folder / "link.txt").symlink_to(secret)
        (folder / "linked").symlink_to(tmp_path, target_is_directory=True)
        (folder / "inner.txt").symlink_to(folder / "run.json")
        listed = http.get(f"/v1/runs/{run_id}/files").json()["files"]
        note = http.get(f"/v1/runs/{run_id}/files/workspace/note.md")
        statuses = {
            path: http.get(f"/v1/runs/{run_id}/files/{path}").status_code
            for path in (
                "../../secret.txt",
                "..%2F..%2Fsecret.txt",
                "workspace/../../" + run_id + "/run.json",
                "link.txt",
                "linked/secret.txt",
                "inner.txt",
                "%2Fetc%2Fpasswd",
                "run.lock",
                "workspace",
                "nothing.txt",
                "%00",  # (no file name holds it: had been a 500, "embedded null byte")
                "workspace/note.md%00.txt",
                "x" * 300,  # (longer than a file name can be: had been a 500, "File name too long")
                "workspace/" + "y" * 300 + "/z.md",
            )
        }
        heads = {http.head(f"/v1/runs/{run_id}/files/{p}").status_code for p in ("x" * 300, "nothing.txt")}
        assert heads == {404}, heads
        put = http.put(f"/v1/runs/{run_id}/files/workspace/note.md", content=b"x")
        delete = http.delete(f"/v1/runs/{run_id}/files/workspace/note.md")
        events = http.get(f"/v1/runs/{run_id}/files/events.jsonl")
    paths = {f["path"] for f in listed}
    assert {"events.jsonl", "run.json", "workspace/note.md"} <= paths
    assert not {"link.txt", "inner.txt", "run.lock"} & paths
    assert note.status_code == 200 and note.text == "# inside\n"
    assert statuses == dict.fromkeys(statuses, 404), statuses
    assert put.status_code == 405 and delete.status_code == 405
    assert events.content == (folder / "events.jsonl").read_bytes()
    assert (folder / "workspace" / "note.md").read_text() == "# inside\n"


def test_the_openapi_document_is_valid_and_lists_every_route(stack: Stack) -> None:
    from openapi_spec_validator import validate

    with stack.served.client() as http:
        document = http.get("/openapi.json").json()
    validate(document)
    assert document["openapi"].startswith("3.1")
    listed = {(path, method.upper()) for path, item in document["paths"].items() for method in item}
    from flowrun.serve import http_app

    source = Path(http_app.__file__).read_text()
    routes = {(path.replace("{path:path}", "{path}"), method) for path, method in _routes_in(source)}
    assert routes == listed


def _routes_in(source: str) -> set[tuple[str, str]]:
    import re

    found = re.findall(r'Route\("([^"]+)", \w+, methods=\["(\w+)"\]\)', source)
    return {(path, method) for path, method in found}


# ---------------------------------------------------------------- restarts and the token


@pytest.mark.parametrize("provider", WIRES)
def test_a_run_waiting_when_the_server_is_sigkilled_is_answered_after_a_restart(
    tmp_path: Path, provider: str
) -> None:
    stack = Stack(tmp_path, provider)
    try:
        with stack.served.client() as http:
            run_id = start(http, "nested")
            wait_status(http, run_id, "waiting")
        stack.served.kill()
        asked = len(stack.wire.requests)
        stack.served = stack.start()  # the same runs folder
        told = "1 run(s) wait for decisions: " + run_id
        assert wait_for(lambda: any(told in line for line in stack.served.lines)), stack.served.lines
        with stack.served.client() as http:
            listed = http.get("/v1/runs", params={"status": "waiting"}).json()
            assert [r["id"] for r in listed["runs"]] == [run_id]
            decided = http.post(f"/v1/runs/{run_id}/decisions", json={"allow": True})
            assert decided.status_code == 200, decided.text
            done = wait_status(http, run_id, "completed", "failed")
        assert done["status"] == "completed"
        assert (stack.runs / run_id / "out.txt").read_text() == "approved\n"
        assert len(stack.wire.requests) == asked + 3  # worker, manager, orchestrator: once each
        assert not asked_twice(stack.wire.requests, stack.script)
    finally:
        stack.close()


def test_a_run_going_when_the_server_is_sigkilled_is_interrupted_and_resumable(tmp_path: Path) -> None:
    stack = Stack(tmp_path, "openai")
    try:
        stack.held.arm()
        with stack.served.client() as http:
            run_id = start(http, "talk")
            assert stack.held.holding.wait(120)
            stack.served.kill()
        stack.held.release.set()
        meta = json.loads((stack.runs / run_id / "run.json").read_text())
        assert meta["status"] == "running"  # as the kill left it
        stack.served = stack.start()
        told = "1 run(s) were stopped (cancelled or interrupted): " + run_id
        assert wait_for(lambda: any(told in line for line in stack.served.lines)), stack.served.lines
        with stack.served.client() as http:
            assert http.get(f"/v1/runs/{run_id}").json()["status"] == "interrupted"
            assert http.post(f"/v1/runs/{run_id}/resume").status_code == 202
            done = wait_status(http, run_id, "completed", "failed")
        assert done["status"] == "completed"
    finally:
        stack.close()


def serve_http(cwd: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return run_cli(["serve", "http", *args], cwd, env)


def test_off_loopback_the_token_is_required(tmp_path: Path) -> None:
    files = [str(f) for f in served_project(tmp_path, "openai")]
    refused = serve_http(tmp_path, *files, "--host", "0.0.0.0", "--port", "0")
    assert refused.returncode == 2, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("error: --host 0.0.0.0 would serve these workflows")
    assert "FLOWRUN_HTTP_TOKEN" in refused.stderr and "Traceback" not in refused.stderr
    (tmp_path / "short").write_text("abc\n")
    short = serve_http(
        tmp_path, *files, "--host", "0.0.0.0", "--port", "0", "--token-file", str(tmp_path / "short")
    )
    assert short.returncode == 2 and "shorter than 16 characters" in short.stderr

    served = Served(
        tmp_path, [*files, "--host", "0.0.0.0", "--port", "0", "--token-env", "MY_TOKEN"], {"MY_TOKEN": TOKEN}
    )
    try:
        with httpx.Client(base_url=served.base, timeout=60) as http:
            none = http.get("/v1/runs")
            wrong = http.get("/v1/runs", headers={"Authorization": "Bearer not-the-token-0000000"})
            start_without = http.post("/v1/runs", json={"workflow": "talk", "options": {"dry_run": True}})
            right = http.get("/v1/runs", headers={"Authorization": f"Bearer {TOKEN}"})
            in_query = http.get("/v1/workflows", params={"token": TOKEN})
            post_query = http.post("/v1/runs", params={"token": TOKEN}, json={"workflow": "talk"})
            openapi = http.get("/openapi.json")
            evil = http.get("/v1/runs", headers={"Authorization": f"Bearer {TOKEN}", "Host": "evil.example"})
            origin = http.get(
                "/v1/runs", headers={"Authorization": f"Bearer {TOKEN}", "Origin": "http://evil.example"}
            )
    finally:
        served.stop()
    assert none.status_code == 401 and none.headers["www-authenticate"] == "Bearer"
    assert wrong.status_code == 401 and start_without.status_code == 401 and openapi.status_code == 401
    assert not (tmp_path / "runs").exists()  # the refused start reached nothing
    assert right.status_code == 200 and in_query.status_code == 200
    assert post_query.status_code == 401  # only a GET may carry it in the query (EventSource)
    assert evil.status_code == 421 and origin.status_code == 403


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_a_request_naming_no_workflow_starts_the_only_one_served(tmp_path: Path, loop: str) -> None:
    """As over A2A: with one workflow served, `POST /v1/runs` may leave out `workflow`; on
    either event loop (FLOWRUN_LOOP; uvloop's library is in the server's memory only on its)."""
    files = served_project(tmp_path, "openai")
    env = {"FLOWRUN_LOOP": loop}
    served = Served(tmp_path, [str(tmp_path / "talk.yaml"), "--port", "0", "--dry-run"], env)
    try:
        with httpx.Client(base_url=served.base, timeout=60) as http:
            started = http.post("/v1/runs", json={"inputs": {}})
            assert started.status_code == 201, started.text
            done = wait_status(http, started.json()["id"], "completed", "failed")
        mapped = Path(f"/proc/{served.proc.pid}/maps").read_text()
    finally:
        served.stop()
    assert done["status"] == "completed" and done["workflow"] == "talk" and len(files) == 3
    assert ("uvloop/loop." in mapped) == (loop == "uvloop")


@pytest.mark.parametrize("command", [["serve", "http"], ["worker"]])
def test_an_event_loop_flowrun_does_not_know_is_one_line(tmp_path: Path, command: list[str]) -> None:
    served_project(tmp_path, "openai")
    done = run_cli([*command, "talk.yaml", "--runs-dir", "runs"], tmp_path, {"FLOWRUN_LOOP": "trio"})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "FLOWRUN_LOOP='trio' is not an event loop flowrun knows" in done.stderr
    assert not (tmp_path / "runs").exists()  # nothing made


def test_a_loopback_server_refuses_other_hosts_and_sites(tmp_path: Path) -> None:
    files = [str(f) for f in served_project(tmp_path, "openai")]
    served = Served(tmp_path, [*files, "--port", "0", "--dry-run"])
    try:
        with served.client() as http:
            evil = http.get("/v1/runs", headers={"Host": "evil.example"})
            page = http.post("/v1/runs", json={"workflow": "talk"}, headers={"Origin": "http://evil.example"})
            own = http.get("/v1/workflows", headers={"Origin": served.base})
    finally:
        served.stop()
    assert evil.status_code == 421 and page.status_code == 403 and own.status_code == 200
    assert not (tmp_path / "runs").exists()


# ---------------------------------------------------------------- listing


def test_runs_are_listed_filtered_and_paged_from_the_index(tmp_path: Path) -> None:
    generate = _generator()
    runs = tmp_path / "runs"
    now = 1_800_000_000.0
    generate(runs, 70, now)  # run-000000 (oldest) ... run-000069 (newest), a day apart at most
    files = [str(f) for f in served_project(tmp_path, "openai")]
    served = Served(tmp_path, [*files, "--port", "0", "--dry-run", "--runs-dir", str(runs)])
    try:
        with served.client() as http:
            first = http.get("/v1/runs", params={"limit": 10}).json()
            second = http.get("/v1/runs", params={"limit": 10, "offset": 10}).json()
            triage = http.get("/v1/runs", params={"workflow": "triage", "status": "waiting,failed"}).json()
            repeated = http.get("/v1/runs", params=[("status", "waiting"), ("status", "failed")]).json()
            found = http.get("/v1/runs", params={"q": "QUESTION NUMBER 42"}).json()
            window = http.get("/v1/runs", params={"since": now - 10 * 86400, "until": now - 5 * 86400}).json()
            iso = http.get("/v1/runs", params={"since": "2020-01-01T00:00:00"}).json()
            bad = http.get("/v1/runs", params={"since": "yesterday-ish"})
            (runs / "run-000042" / "extra").mkdir()  # its folder changes: read again
            shutil.rmtree(runs / "run-000069")  # removed behind the index's back
            shutil.copytree(runs / "run-000001", runs / "copied")  # added behind its back
            after = http.get("/v1/runs", params={"limit": 100}).json()
    finally:
        served.stop()
    ids = [f"run-{i:06d}" for i in range(69, -1, -1)]
    assert first["total"] == 70 and [r["id"] for r in first["runs"]] == ids[:10]
    assert [r["id"] for r in second["runs"]] == ids[10:20]
    assert second["offset"] == 10 and second["limit"] == 10
    expected = {f"run-{i:06d}" for i in range(70) if i % 4 == 2 and i % 7 in (3, 4)}
    assert {r["id"] for r in triage["runs"]} == expected and triage["total"] == len(expected)
    assert {r["id"] for r in repeated["runs"]} == {f"run-{i:06d}" for i in range(70) if i % 7 in (3, 4)}
    assert [r["id"] for r in found["runs"]] == ["run-000042"]
    assert window["total"] > 0 and all(
        now - 10 * 86400 <= r["started"] < now - 5 * 86400 for r in window["runs"]
    )
    assert iso["total"] == 70
    assert bad.status_code == 400 and "not a time" in bad.json()["error"]
    listed = [r["id"] for r in after["runs"]]
    assert after["total"] == 70 and "run-000069" not in listed and "copied" in listed
    summary = next(r for r in after["runs"] if r["id"] == "run-000042")
    assert summary["total_tokens"] == 150 and summary["cost_usd"] == pytest.approx(0.0012)


def _generator() -> Any:
    import importlib.util

    from support.paths import REPO

    spec = importlib.util.spec_from_file_location("run_folders", REPO / "bench" / "run_folders.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate
