"""Deferred MCP tools: a server with 200 tools is offered through `tool_search`, and only the
tools a search found reach the model afterwards; counted in the requests the scripted server
receives, through both wire formats, and again after a kill and `flowrun resume`."""

from __future__ import annotations

import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from support.cli import flowrun_cmd, run_cli
from support.env import FAST_RETRIES, WIRES, clean_env, model_env
from support.procs import wait_for
from support.runs import events as events_of
from support.wire_server import Reply, Script, WireRequest, WireServer, call
from test_mcp_client import WORKER, mcp_project, stdio_server, validate

from flowrun.foreign_text import inner

MANY = 200


def servers(**many_keys: Any) -> dict[str, Any]:
    return {
        "many": stdio_server("many-tools", "--many", str(MANY), **many_keys),
        "calc": stdio_server("calc-tools"),
    }


def script() -> Script:
    return Script(
        {
            WORKER: [
                Reply(tool_calls=[call("tool_search", query="weather get", limit=3)]),
                Reply(
                    tool_calls=[
                        call("many__weather_get_0", city="Oslo"),
                        call("many__invoice_get_1", city="Bergen"),  # not loaded yet
                    ]
                ),
                Reply(tool_calls=[call("many__invoice_get_1", city="Bergen")]),
                Reply(text="All done."),
            ]
        }
    )


def run(
    tmp_path: Path, workflow: Path, server: WireServer, provider: str, run_id: str = "r1"
) -> tuple[int, str, Path]:
    env = {"FLOWRUN_RETRY_BASE_S": "0.01"}
    args = [str(workflow), "--question", "q", "--runs-dir", str(tmp_path / "runs"), "--run-id", run_id]
    env |= model_env(server, provider)
    if provider == "openai":
        args += ["--model", "openai:gpt-test"]
    proc = run_cli(args, cwd=tmp_path, env=env, timeout=180)
    return proc.returncode, proc.stdout + proc.stderr, tmp_path / "runs" / run_id


def results(request: WireRequest, last: int) -> list[tuple[str, bool]]:
    """The results of the model's latest step (a request carries the whole history)."""
    return [(text, error) for _, text, error in request.tool_results][-last:]


@pytest.mark.parametrize("provider", WIRES)
def test_two_hundred_tools_are_offered_through_tool_search(tmp_path: Path, provider: str) -> None:
    workflow = mcp_project(tmp_path, servers(), ["many", "calc.add"])
    with WireServer(script()) as server:
        code, out, run_dir = run(tmp_path, workflow, server, provider)
        requests = server.requests
    assert code == 0, out
    assert len(requests) == 4
    first, second, third, last = requests
    # the first request: tool_search and the agent's other tool, not 200 schemas
    assert sorted(first.tool_names) == ["calc__add", "tool_search"]
    assert len(first.tools) == 2
    search = next(t for t in first.tools if "tool_search" in str(t))
    assert f"Search {MANY} more tools (from many)" in str(search)
    # after the search: the three tools it found, and nothing else
    found = ["many__weather_get_0", "many__weather_get_120", "many__weather_get_160"]
    assert sorted(second.tool_names) == sorted(["calc__add", "tool_search", *found])
    assert len(second.tools) == 5
    ((answer, error),) = results(second, 1)
    assert not error and answer.startswith("Loaded 3 tools") and "Get weather records" in answer
    # a tool called before it was loaded does not run, and is offered from the next request
    texts = results(third, 2)
    assert (inner(texts[0][0]), texts[0][1]) == ("weather_get_0 for Oslo", False)
    assert "[error NOT_LOADED]" in texts[1][0] and "call it again" in texts[1][0]
    assert sorted(third.tool_names) == sorted([*second.tool_names, "many__invoice_get_1"])
    assert [(inner(text), error) for text, error in results(last, 1)] == [("invoice_get_1 for Bergen", False)]
    assert len(last.tools) == 6
    events = events_of(run_dir)
    prompts = [e for e in events if e["type"] == "agent_prompt"]
    assert [len(p["tools"]) for p in prompts] == [2, 2, 5, 6]  # recorded each time the tools changed
    searched = [e["result"]["data"] for e in events if e.get("tool") == "tool_search" and "result" in e]
    assert [s["tools_loaded"] for s in searched] == [found]
    # a replay offers the same tools at each step: no divergence, the same answer
    replayed = run_cli(
        ["replay", str(run_dir), "--into", str(tmp_path / "replayed")], cwd=tmp_path, timeout=180
    )
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    again = events_of(tmp_path / "replayed")
    assert [len(p["tools"]) for p in again if p["type"] == "agent_prompt"] == [2, 2, 5, 6]
    assert again[-1]["status"] == "completed"


def test_a_server_under_the_threshold_is_offered_whole_unless_deferred(tmp_path: Path) -> None:
    many = stdio_server("few-tools", "--many", "12")
    workflow = mcp_project(tmp_path, {"few": many}, ["few"])
    done = Script({WORKER: [Reply(text="done")]})
    with WireServer(done) as server:
        code, out, _ = run(tmp_path, workflow, server, "anthropic")
        assert code == 0, out
        assert len(server.requests[0].tools) == 12  # 12 <= defer_above (40)
    workflow = mcp_project(tmp_path, {"few": {**many, "defer": True}}, ["few"])
    with WireServer(done) as server:
        code, out, _ = run(tmp_path, workflow, server, "anthropic", run_id="r2")
        assert code == 0, out
        assert server.requests[0].tool_names == ["tool_search"]
    workflow = mcp_project(tmp_path, {"few": {**many, "defer_above": 5}}, ["few"])
    with WireServer(done) as server:
        code, out, _ = run(tmp_path, workflow, server, "anthropic", run_id="r3")
        assert code == 0, out
        assert server.requests[0].tool_names == ["tool_search"]


class Gate:
    """Holds the first request after the search until released: the run is killed meanwhile."""

    def __init__(self, responder: Script) -> None:
        self.responder = responder
        self.released = threading.Event()

    def __call__(self, request: WireRequest) -> Reply:
        if request.assistant_turns == 1:
            self.released.wait(120)
        return self.responder(request)


def test_resume_after_a_kill_offers_the_tools_the_search_loaded(tmp_path: Path) -> None:
    workflow = mcp_project(tmp_path, servers(), ["many", "calc.add"])
    gate = Gate(script())
    run_dir = tmp_path / "runs" / "r1"
    with WireServer(gate) as server:
        env = model_env(server, "anthropic")
        args = [*flowrun_cmd(), str(workflow), "--question", "q", "--runs-dir", str(tmp_path / "runs")]
        child = subprocess.Popen(
            [*args, "--run-id", "r1", "-q"],
            cwd=tmp_path,
            env={**clean_env(FAST_RETRIES), **env},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert wait_for(lambda: len(server.requests) == 2, 120)  # the request after the search
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=60)
        gate.released.set()
        before = len(server.requests)
        proc = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path, env=env, timeout=180)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        after = server.requests[before:]
    killed = server.requests[1]
    # the resumed run asks again what the killed one was asking, with the same tools
    assert after[0].assistant_turns == 1
    assert after[0].tool_names == killed.tool_names and len(after[0].tools) == 5
    assert len(after[-1].tools) == 6
    assert events_of(run_dir)[-1]["status"] == "completed"


def test_validate_reports_bad_defer_keys_at_their_line(tmp_path: Path) -> None:
    bad = stdio_server("v", defer="sometimes", defer_above=-1)
    mcp_project(tmp_path, {"many": bad}, ["many"])
    code, out = validate(tmp_path)
    assert code != 0
    assert "mcp_demo.yaml:" in out and "defer" in out and "defer_above" in out
    assert "Traceback" not in out
