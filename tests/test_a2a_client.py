"""Remote A2A agents as tools: sample agents written with the `a2a-sdk` server classes
(tests/a2a_sample_server.py) on 127.0.0.1, a workflow whose agent calls them through both wire
formats of the scripted model server, and what goes wrong: a failing task, an agent that is
gone, an unset variable, declaration mistakes, `validate --connect`; a replay sends nothing."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from a2a_sample_server import SampleServer
from support.cli import run_cli
from support.env import WIRES, model_env
from support.runs import events as events_of
from support.wire_server import Reply, Script, WireRequest, WireServer, call
from test_mcp_client import mcp_project

from flowrun.foreign_text import frame, inner

WAITING = 75  # the exit status of a run that waits for a decision
WORKER = "You are the A2A test worker"
TOKEN = "a2a-test-token-5f1c9e"


@pytest.fixture(scope="module")
def sample() -> Iterator[SampleServer]:
    server = SampleServer()
    yield server
    server.stop()


def closed_port_url() -> str:
    import socket

    with socket.socket() as s:  # a port nobody listens on once this closes
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/gone"


def a2a_project(tmp_path: Path, agents: dict[str, Any], tools: list[Any]) -> Path:
    return mcp_project(tmp_path, agents, tools, declared="a2a_agents", name="a2a_demo", worker=WORKER)


def run(
    tmp_path: Path, workflow: Path, server: WireServer, provider: str, extra: dict[str, str] | None = None
) -> tuple[int, str, Path]:
    env = {"FLOWRUN_RETRY_BASE_S": "0.01", **(extra or {})}
    args = [str(workflow), "--question", "q", "--runs-dir", str(tmp_path / "runs"), "--run-id", "r1"]
    env |= model_env(server, provider)
    if provider == "openai":
        args += ["--model", "openai:gpt-test"]
    proc = run_cli(args, cwd=tmp_path, env=env, timeout=180)
    return proc.returncode, proc.stdout + proc.stderr, tmp_path / "runs" / "r1"


def validate(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    proc = run_cli(["validate", *args, str(tmp_path)], cwd=tmp_path, env=env)
    return proc.returncode, proc.stdout + proc.stderr


def declared(sample: SampleServer) -> dict[str, Any]:
    return {
        "helper": {"url": sample.url("answer")},
        "translator": {
            "url": sample.url("stream"),
            "headers": {"Authorization": "Bearer ${A2A_TEST_TOKEN}"},
            "timeout_s": 30,
        },
        "indexer": {"url": sample.url("fail"), "description": "Searches the company index."},
        "weather": {"url": sample.url("ask")},
        "gone": {"url": closed_port_url(), "timeout_s": 5},
    }


@pytest.mark.parametrize("provider", WIRES)
def test_agent_calls_remote_agents_and_a_replay_sends_nothing(
    tmp_path: Path, provider: str, sample: SampleServer
) -> None:
    workflow = a2a_project(tmp_path, declared(sample), ["helper", "translator", "indexer", "weather", "gone"])
    replies = [
        Reply(
            tool_calls=[call("helper", message="what is 6 x 7?"), call("translator", message="hallo welt")]
        ),
        Reply(tool_calls=[call("indexer", message="find the memo"), call("gone", message="anyone?")]),
        Reply(tool_calls=[call("weather", message="what is the weather?")]),
    ]

    def worker(request: WireRequest) -> Reply:
        """The script, then the answer to the weather agent's question in the task its result
        named (a pure function of the request), then the end."""
        turn = request.assistant_turns
        if turn < len(replies):
            return replies[turn]
        if turn == len(replies):
            asked = " ".join(text for _, text, _ in request.tool_results)
            found = re.search(r"task_id: (\S+)", asked)
            assert found is not None, asked
            return Reply(tool_calls=[call("weather", message="Oslo", task_id=found.group(1))])
        return Reply(text="All done.")

    before = len(sample.seen.requests)
    with WireServer(worker) as server:
        code, out, run_dir = run(tmp_path, workflow, server, provider, {"A2A_TEST_TOKEN": TOKEN})
        requests = server.requests
    assert code == 0, out
    assert "Traceback" not in out
    events = events_of(run_dir)
    results = {e["tool"]: e["result"] for e in events if e["type"] == "tool_result"}
    # the answers reached the model
    texts = [text for _, text, _ in requests[1].tool_results] + [t for _, t, _ in requests[2].tool_results]
    assert any("answer: what is 6 x 7?" in t for t in texts), texts
    assert any("translated: HALLO WELT" in t for t in texts), texts
    assert results["helper"]["status"] == "success"
    assert results["translator"]["data"]["state"] == "completed"
    assert results["translator"]["data"]["artifacts"] == [
        {"name": "translation", "text": "translated: HALLO WELT"}
    ]
    # a failed remote task and an agent that is gone are tool errors naming the URL and a hint
    failed = results["indexer"]
    assert failed["error"]["code"] == "TOOL_ERROR"
    assert sample.url("fail") in failed["text"] and "the task ended failed (" in failed["text"]
    assert failed["text"].endswith(
        frame("the index is offline", f"A2A agent 'indexer' at {sample.url('fail')}")
    )
    gone = results["gone"]
    assert gone["error"]["code"] == "UNAVAILABLE" and "/gone" in gone["text"]
    assert "validate --connect" in gone["text"]
    # input-required: a partial result with the question and the task to answer in
    asked, answered = [e["result"] for e in events if e["type"] == "tool_result" and e["tool"] == "weather"]
    assert asked["status"] == "partial" and asked["data"]["question"] == "Which city?"
    assert asked["data"]["task_id"] in asked["text"]
    # described from the cards: description and skills; the declared description wins
    prompt = [e for e in events if e["type"] == "agent_prompt"][-1]  # recorded again once described
    described = {t["name"]: t["description"] for t in prompt["tools"]}
    assert "Translates a text, reporting its progress." in described["translator"]
    assert "stream skill: The stream skill." in described["translator"]
    assert described["indexer"].startswith("Searches the company index.")
    assert described["gone"].startswith("The remote A2A agent 'gone'")  # no card: the declaration
    assert {t["name"] for t in prompt["tools"]} == {"helper", "translator", "indexer", "weather", "gone"}
    cards = {e["name"]: e for e in events if e["type"] == "a2a_card"}
    assert set(cards) == {"helper", "translator", "indexer", "weather"}
    assert cards["translator"]["card"]["streaming"] is True
    # the streamed status updates are progress events of the call
    progress = [(e["tool"], e["state"], e["message"]) for e in events if e["type"] == "tool_progress"]
    assert ("translator", "working", "reading the text") in progress
    assert ("translator", "working", "translating") in progress
    assert ("translator", "completed", "") in progress
    # the header's variable reached the server, and never the log
    seen = sample.seen.requests[before:]
    stream_posts = [h for method, path, h in seen if method == "POST" and path == "/stream"]
    assert stream_posts and all(h.get("authorization") == f"Bearer {TOKEN}" for h in stream_posts)
    assert TOKEN not in (run_dir / "events.jsonl").read_text()
    # each card was read once: the description and every call after it (weather's two) use it
    card_reads = Counter(path for method, path, _ in seen if method == "GET")
    assert card_reads and set(card_reads.values()) == {1}, card_reads
    # the answer went back into the same task, which then completed
    assert answered["status"] == "success" and inner(answered["text"]) == "weather in Oslo: sunny"
    assert answered["data"]["task_id"] == asked["data"]["task_id"]
    assert any("weather in Oslo: sunny" in t for _, t, _ in requests[-1].tool_results)

    # a replay uses the recorded results and cards: nothing reaches the sample agents
    count = len(sample.seen.requests)
    proc = run_cli(["replay", str(run_dir), "--into", str(tmp_path / "again"), "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "status: completed" in proc.stdout
    assert len(sample.seen.requests) == count, sample.seen.requests[count:]


def test_a_resumed_run_never_sends_a_recorded_message_again(tmp_path: Path, sample: SampleServer) -> None:
    """A call answered before the run stopped to wait is answered from the log when it goes on;
    the cards are not read again either."""
    agents = {"helper": {"url": sample.url("answer")}, "translator": {"url": sample.url("stream")}}
    workflow = a2a_project(tmp_path, agents, ["helper", {"translator": {"approve": "ask"}}])
    replies = [
        Reply(tool_calls=[call("helper", message="first")]),
        Reply(tool_calls=[call("translator", message="zweitens")]),
        Reply(text="All done."),
    ]
    answered, streamed = sample.seen.posts("/answer"), sample.seen.posts("/stream")
    with WireServer(Script({WORKER: replies})) as server:
        code, out, run_dir = run(tmp_path, workflow, server, "anthropic")
        assert code == WAITING, out
        assert sample.seen.posts("/answer") == answered + 1 and sample.seen.posts("/stream") == streamed
        before = len(sample.seen.requests)
        env = model_env(server, "anthropic")
        done = run_cli(["approve", str(run_dir), "--allow", "-q"], cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "status: completed" in done.stdout
        requests = server.requests
    assert sample.seen.posts("/answer") == answered + 1  # not sent again by the resumed run
    assert sample.seen.posts("/stream") == streamed + 1
    # the resumed run described the tools from the log: only the call it made read a card
    cards = [p for m, p, _ in sample.seen.requests[before:] if m == "GET"]
    assert cards == ["/stream/.well-known/agent-card.json"], cards
    texts = [t for _, t, _ in requests[-1].tool_results]
    assert any("translated: ZWEITENS" in t for t in texts), texts
    events = events_of(run_dir)
    assert [e["name"] for e in events if e["type"] == "a2a_card"] == ["helper", "translator"]


def test_unset_variable_is_a_tool_error(tmp_path: Path, sample: SampleServer) -> None:
    # declared in the agent's own tool entry, next to one the workflow declares
    inline = {"url": sample.url("stream"), "headers": {"Authorization": "Bearer ${A2A_UNSET_TOKEN}"}}
    workflow = a2a_project(
        tmp_path, {"helper": {"url": sample.url("answer")}}, ["helper", {"translator": {"a2a": inline}}]
    )
    code, out = validate(tmp_path)
    assert code == 0, out
    replies = [
        Reply(tool_calls=[call("translator", message="x"), call("helper", message="y")]),
        Reply(text="All done."),
    ]
    before = sample.seen.posts("/stream")
    with WireServer(Script({WORKER: replies})) as server:
        code, out, run_dir = run(tmp_path, workflow, server, "openai")
    assert code == 0, out
    results = {e["tool"]: e["result"] for e in events_of(run_dir) if e["type"] == "tool_result"}
    assert results["helper"]["text"] == frame("answer: y", f"A2A agent 'helper' at {sample.url('answer')}")
    result = results["translator"]
    assert result["error"]["code"] == "UNAVAILABLE"
    assert (
        "${A2A_UNSET_TOKEN}, which is not set" in result["text"]
        and "${A2A_UNSET_TOKEN:-VALUE}" in result["text"]
    )
    assert sample.seen.posts("/stream") == before


def test_validate_reports_declaration_mistakes_at_their_line(tmp_path: Path) -> None:
    a2a_project(tmp_path, {"typo": {"url": "http://127.0.0.1:1/x", "timout_s": 3}}, ["typo"])
    code, out = validate(tmp_path)
    assert code == 1, out
    assert "a2a_demo.yaml:16:5: error[unknown-key]: unknown key 'timout_s'" in out
    assert "did you mean 'timeout_s'?" in out

    agents = {
        "helper": {"url": "ftp://agents.example.com/helper"},
        "keyed": {"url": "https://agents.example.com/k", "headers": {"X-Key": "$KEY"}},
    }
    a2a_project(tmp_path, agents, ["read_file"])
    code, out = validate(tmp_path)
    assert code == 1, out
    assert "a2a_demo.yaml:15:10: error[invalid]: an A2A agent's url must start with http://" in out
    assert "a2a_demo.yaml:19:14: error[invalid]: header 'X-Key' has a '$' that names no variable" in out
    assert "hint: write a variable as ${NAME}" in out

    agents = {
        "helper": {"url": "https://agents.example.com/helper"},
        "read_file": {"url": "https://agents.example.com/r"},
    }
    a2a_project(tmp_path, agents, ["helper", {"helper": {"timeout": 3}}, "helpr"])
    code, out = validate(tmp_path)
    assert code == 1, out
    assert "Traceback" not in out
    assert "warning[ambiguous-name]: A2A agent 'read_file' has the name of the tool 'read_file'" in out
    assert "agents.d/worker.yaml:9:5: error[bad-config]: 'helper' has no config key 'timeout'" in out
    assert "its url, headers and timeout_s go under `a2a:`" in out
    assert "error[unknown-tool]: unknown tool or agent 'helpr'" in out and "did you mean 'helper'?" in out

    # declared in tool entries: checked at the entry; one name declared twice, or two ways
    tools = [
        {"ftp": {"a2a": {"url": "ftp://x"}}},
        {"slow": {"a2a": {"url": "https://a.example.com", "timeout": 3}}},
        {"helper": {"a2a": {"url": "https://b.example.com"}}},
    ]
    a2a_project(tmp_path, {"helper": {"url": "https://agents.example.com/helper"}}, tools)
    code, out = validate(tmp_path)
    assert code == 1, out
    assert "agents.d/worker.yaml:" in out
    assert "error[invalid]: an A2A agent's url must start with http://" in out
    assert "(at tools[0].ftp.a2a.url)" in out
    assert "error[unknown-key]: unknown key 'timeout'" in out and "did you mean 'timeout_s'?" in out
    assert "A2A agent 'helper' is declared both here and in the workflow's `a2a_agents:`" in out


def test_validate_connect_reads_the_cards(tmp_path: Path, sample: SampleServer) -> None:
    agents = {
        "helper": {"url": sample.url("answer")},
        "translator": {"url": sample.url("stream"), "headers": {"Authorization": "Bearer ${A2A_TEST_TOKEN}"}},
    }
    a2a_project(tmp_path, agents, ["helper", "translator"])
    before = len(sample.seen.requests)
    code, out = validate(tmp_path, "--connect", env={"A2A_TEST_TOKEN": TOKEN})
    assert code == 0, out
    fetched = [(p, h.get("authorization")) for m, p, h in sample.seen.requests[before:] if m == "GET"]
    assert ("/stream/.well-known/agent-card.json", f"Bearer {TOKEN}") in fetched
    assert ("/answer/.well-known/agent-card.json", None) in fetched

    gone = closed_port_url()
    agents["gone"] = {"url": gone}
    agents["nocard"] = {"url": sample.url("answer"), "card_path": "/no/such/card.json"}
    a2a_project(tmp_path, agents, ["helper", "gone", "nocard"])
    code, out = validate(tmp_path, "--connect")
    assert code == 1, out
    assert "Traceback" not in out
    lines = [line for line in out.splitlines() if "error[a2a-connect]" in line]
    assert len(lines) == 3, out  # gone, nocard, and translator's unset variable
    assert any(
        f"A2A agent 'gone': its card ({gone}/.well-known/agent-card.json) could not be read" in x
        for x in lines
    )
    assert any("A2A agent 'nocard'" in x and "HTTP 404" in x for x in lines), lines
    assert any("A2A agent 'translator' names ${A2A_TEST_TOKEN}, which is not set" in x for x in lines)
    assert all(x.startswith("a2a_demo.yaml:") for x in lines), lines


def test_an_agent_that_does_not_finish_in_time_is_a_timeout(tmp_path: Path, sample: SampleServer) -> None:
    workflow = a2a_project(tmp_path, {"thinker": {"url": sample.url("silent"), "timeout_s": 1}}, ["thinker"])
    replies = [Reply(tool_calls=[call("thinker", message="think")]), Reply(text="All done.")]
    with WireServer(Script({WORKER: replies})) as server:
        code, out, run_dir = run(tmp_path, workflow, server, "anthropic")
        requests = server.requests
    assert code == 0, out
    (result,) = [e["result"] for e in events_of(run_dir) if e["type"] == "tool_result"]
    assert result["error"]["code"] == "TIMEOUT"
    assert sample.url("silent") in result["text"] and "did not answer in 1 s" in result["text"]
    assert any("[error TIMEOUT]" in t for _, t, _ in requests[-1].tool_results)


def test_flowrun_test_replays_the_recorded_answers_without_the_agents(
    tmp_path: Path, sample: SampleServer
) -> None:
    agents = {"helper": {"url": sample.url("answer")}, "translator": {"url": sample.url("stream")}}
    workflow = a2a_project(tmp_path, agents, ["helper", "translator"])
    replies = [
        Reply(tool_calls=[call("helper", message="one"), call("translator", message="two")]),
        Reply(text="All done."),
    ]
    with WireServer(Script({WORKER: replies})) as server:
        env = model_env(server, "anthropic")
        test_file = tmp_path / "tests" / "a2a.flowrun.yaml"
        recorded = run_cli(
            ["record", str(test_file), str(workflow), "--question", "q"], cwd=tmp_path, env=env, timeout=180
        )
        assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    count = len(sample.seen.requests)
    tested = run_cli(["test", str(tmp_path / "tests"), "-v"], cwd=tmp_path, timeout=180)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "1 test(s): 1 passed" in tested.stdout + tested.stderr
    assert len(sample.seen.requests) == count  # the recorded results and cards: no agent reached
