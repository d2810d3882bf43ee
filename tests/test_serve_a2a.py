"""`flowrun serve a2a`, a real subprocess, driven by the official a2a-sdk client over 127.0.0.1
(JSON-RPC, protocol 1.0); its runs talk to the scripted wire server through the real openai and
anthropic SDKs. The cards; a blocking send that completes with the declared output as an
artifact (both wire formats); a stream working -> completed; get; cancel of a run held at the
wire server; input-required on an ask_user question and on an approval, answered by a
follow-up message; a bad input as an A2A error; a task read back after a restart; the token
rule."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from google.protobuf.json_format import MessageToDict
from support.cli import flowrun_cmd
from support.env import WIRES, clean_env, model_env
from support.procs import wait_for
from support.project import agent, model, workflow, write_files
from support.runs import events as events_of
from support.served import TOKEN, Held, Served, served_project
from support.served import replies as shared_replies
from support.wire_server import Reply, Script, ToolCallSpec, WireServer

pytest.importorskip("a2a.client")
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import A2AError

REPORT = "# Report\n\nOtters hold hands.\n"


def replies() -> Script:
    """serve http's script, and the agents of `write_more`."""
    return shared_replies(
        scribe=[
            Reply(tool_calls=[ToolCallSpec("write_file", {"path": "report.md", "content": REPORT})]),
            Reply("The report is written."),
        ],
        quizzer=[
            Reply(tool_calls=[ToolCallSpec("ask_user", {"question": "Which colour?"})]),
            Reply("Blue it is."),
        ],
    )


def write_more(root: Path, provider: str) -> list[Path]:
    """Beside serve http's project: `scribe` (a required text input and an optional number,
    a declared output) and `quiz` (asks the user)."""
    write_files(root, {"agents.d/scribe.yaml": agent("scribe", tools=["write_file"])})
    write_files(root, {"agents.d/quizzer.yaml": agent("quizzer", tools=["ask_user"])})
    inputs = {
        "topic": {"description": "What the report is about."},
        "pages": {"type": "integer", "default": 1},
    }
    scribe = workflow(
        model(provider),
        name="scribe",
        description="Writes a short report on a topic.",
        inputs=inputs,
        entry="scribe",
        task="Write {{ inputs.pages }} page(s) about {{ inputs.topic }} into report.md.",
        output="report.md",
    )
    quiz = workflow(model(provider), name="quiz", entry="quizzer", task="Ask the user.")
    write_files(root, {"scribe.yaml": scribe, "quiz.yaml": quiz})
    return [root / "scribe.yaml", root / "quiz.yaml"]


class Stack:
    """The wire server and a `flowrun serve a2a` serving the project for one provider."""

    def __init__(self, root: Path, provider: str, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.provider = provider
        self.script = replies()
        self.held = Held(self.script)
        self.wire = WireServer(self.held)
        self.files = served_project(root, provider) + write_more(root, provider)
        self.runs = root / "runs"
        self.env = model_env(self.wire, provider) | (env or {})
        self.served = self.start()

    def start(self) -> Served:
        args = [*map(str, self.files), "--port", "0", "--runs-dir", str(self.runs)]
        return Served(self.root, args, self.env, command="a2a")

    def close(self) -> None:
        self.held.release.set()
        self.served.stop()
        self.wire.stop()


@pytest.fixture(scope="module")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Stack]]:
    """One server per wire format, made when a test first needs it, shared by the module's
    tests (each waits for its own tasks to end)."""
    made: dict[str, Stack] = {}
    try:
        yield made
    finally:
        for stack in made.values():
            stack.close()


def stack_for(stacks: dict[str, Stack], provider: str, tmp_path_factory: pytest.TempPathFactory) -> Stack:
    if provider not in stacks:
        stacks[provider] = Stack(tmp_path_factory.mktemp(f"a2a-{provider}"), provider)
    return stacks[provider]


@pytest.fixture(params=WIRES)
def stack(
    request: pytest.FixtureRequest, stacks: dict[str, Stack], tmp_path_factory: pytest.TempPathFactory
) -> Stack:
    return stack_for(stacks, request.param, tmp_path_factory)


@pytest.fixture
def one(stacks: dict[str, Stack], tmp_path_factory: pytest.TempPathFactory) -> Stack:
    """The openai stack, for what does not depend on the wire format."""
    return stack_for(stacks, "openai", tmp_path_factory)


def user(text: str = "", data: dict[str, Any] | None = None, task: Task | None = None) -> Message:
    parts = [Part(text=text)] if text else []
    if data is not None:
        part = Part()
        part.data.struct_value.update(data)
        parts.append(part)
    message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER, parts=parts)
    if task is not None:
        message.task_id = task.id
        message.context_id = task.context_id
    return message


async def send(url: str, message: Message, streaming: bool = False, **config: Any) -> list[StreamResponse]:
    """What the a2a-sdk client yields for one message to the agent at `url`."""
    async with httpx.AsyncClient(timeout=60, headers=config.pop("headers", {})) as http:
        client = await create_client(url, ClientConfig(streaming=streaming, httpx_client=http, **config))
        return [event async for event in client.send_message(SendMessageRequest(message=message))]


async def one_task(url: str, message: Message, **config: Any) -> Task:
    (answer,) = await send(url, message, **config)
    assert answer.HasField("task"), answer
    return answer.task


def texts(message: Message) -> str:
    return "\n".join(part.text for part in message.parts if part.text)


# ---------------------------------------------------------------- cards


async def test_the_cards_say_what_each_workflow_is_and_where(one: Stack) -> None:
    async with httpx.AsyncClient(timeout=60) as http:
        root = (await http.get(f"{one.served.base}/.well-known/agent-card.json")).json()
        card = await A2ACardResolver(http, f"{one.served.base}/a2a/scribe").get_agent_card()
    assert {s["id"] for s in root["skills"]} == {"nested", "talk", "branches", "scribe", "quiz"}
    assert root["supportedInterfaces"][0]["url"] == one.served.base
    scribe_skill = next(s for s in root["skills"] if s["id"] == "scribe")
    assert f"{one.served.base}/a2a/scribe/.well-known/agent-card.json" in scribe_skill["description"]
    assert card.name == "scribe" and card.description == "Writes a short report on a topic."
    assert card.capabilities.streaming is True
    (interface,) = card.supported_interfaces
    assert interface.url == f"{one.served.base}/a2a/scribe"
    assert interface.protocol_binding == "JSONRPC" and interface.protocol_version == "1.0"
    (skill,) = card.skills
    assert "- topic (string, required): What the report is about." in skill.description
    assert "- pages (integer, default 1)" in skill.description and "report.md" in skill.description
    assert not card.security_schemes  # on loopback without a token


# ---------------------------------------------------------------- sending


async def test_a_blocking_send_completes_with_the_declared_output(stack: Stack) -> None:
    before = len(stack.wire.requests)
    task = await one_task(f"{stack.served.base}/a2a/scribe", user("Otters"))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED, task.status
    assert texts(task.status.message) == "The report is written."
    artifacts = {a.name: a for a in task.artifacts}
    assert artifacts["answer"].parts[0].text == "The report is written."
    (part,) = artifacts["report.md"].parts
    assert part.text == REPORT and part.filename == "report.md" and part.media_type == "text/markdown"
    run_dir = stack.runs / task.id  # the task is the run
    assert (run_dir / "report.md").read_text() == REPORT
    (first, *_) = [r for r in stack.wire.requests[before:] if stack.script.agent_for(r) == "scribe"]
    assert "1 page(s) about Otters" in first.last_user_text  # the text is the one text input
    assert json.loads((run_dir / "run.json").read_text())["inputs"] == {"topic": "Otters", "pages": 1}


async def test_a_data_part_gives_the_inputs_and_a_bad_one_is_an_a2a_error(one: Stack) -> None:
    url = f"{one.served.base}/a2a/scribe"
    task = await one_task(url, user(data={"topic": "Rivers", "pages": 2}))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    meta = json.loads((one.runs / task.id / "run.json").read_text())
    assert meta["inputs"] == {"topic": "Rivers", "pages": 2}
    with pytest.raises(A2AError) as missing:
        await one_task(url, user(data={"pages": 2}))
    assert "topic" in str(missing.value)
    with pytest.raises(A2AError) as unknown:
        await one_task(url, user("x", data={"colour": "red"}))
    assert "colour" in str(unknown.value)


def test_a_malformed_request_is_a_json_rpc_error_and_one_line_in_the_log(one: Stack) -> None:
    """A client's malformed JSON-RPC gets its error; the server's log says so in one line per
    request (the a2a-sdk logs each with a traceback: any client could fill the log with them)."""
    before = len(one.served.lines)
    with one.served.client() as http:
        bad_id = http.post(
            "/a2a/scribe", json={"jsonrpc": "2.0", "id": {}, "method": "GetTask", "params": {}}
        )
        bad_method = http.post("/a2a/scribe", json={"jsonrpc": "2.0", "id": 1, "method": 5})
    for answer in (bad_id, bad_method):
        assert answer.status_code == 200 and answer.json()["error"]["code"] == -32600, answer.text
    said = "a2a: Failed to validate base JSON-RPC request"
    assert wait_for(lambda: sum(said in line for line in one.served.lines[before:]) >= 2)
    assert "Traceback" not in "".join(one.served.lines[before:])


def test_a_request_nested_past_the_json_parser_is_a_parse_error(one: Stack) -> None:
    """JSON nested thousands deep had been the a2a-sdk's internal error (-32603) with a
    traceback in the log: it is JSON-RPC's parse error, and the server goes on."""
    before = len(one.served.lines)
    deep = "[" * 5000 + "]" * 5000
    with one.served.client() as http:
        for body in ('{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": ' + deep + "}", deep):
            answer = http.post("/a2a/scribe", content=body, headers={"Content-Type": "application/json"})
            assert answer.status_code == 200, answer.text
            assert answer.json()["error"] == {
                "code": -32700,
                "message": "Parse error: the JSON nests too deep to read",
            }, answer.text
        card = http.get("/a2a/scribe/.well-known/agent-card.json")
    assert card.status_code == 200, card.text
    assert "Traceback" not in "".join(one.served.lines[before:])


async def test_a_stream_goes_working_to_completed_with_the_artifacts(one: Stack) -> None:
    events = await send(f"{one.served.base}/a2a/scribe", user("Otters"), streaming=True)
    first, *updates = events
    assert first.HasField("task") and first.task.status.state == TaskState.TASK_STATE_WORKING
    states = [e.status_update.status.state for e in updates if e.HasField("status_update")]
    assert states[0] == TaskState.TASK_STATE_WORKING and states[-1] == TaskState.TASK_STATE_COMPLETED
    assert set(states[:-1]) == {TaskState.TASK_STATE_WORKING}
    progress = [texts(e.status_update.status.message) for e in updates if e.HasField("status_update")]
    assert any(line.endswith("calls write_file") for line in progress), progress
    artifacts = [e.artifact_update.artifact for e in updates if e.HasField("artifact_update")]
    assert [a.name for a in artifacts] == ["answer", "report.md"]
    assert artifacts[1].parts[0].text == REPORT
    assert updates[-1].HasField("status_update")  # the last word is the final status
    assert {e.status_update.task_id for e in updates if e.HasField("status_update")} == {first.task.id}


# ---------------------------------------------------------------- get and cancel


async def test_get_and_cancel_a_long_run(one: Stack) -> None:
    one.held.arm()
    try:
        url = f"{one.served.base}/a2a/talk"
        started = await one_task(url, user("Talk."), polling=True)  # return_immediately
        assert started.status.state == TaskState.TASK_STATE_WORKING
        assert one.held.holding.wait(60), "the run never reached its held model call"
        async with httpx.AsyncClient(timeout=60) as http:
            client = await create_client(url, ClientConfig(httpx_client=http))
            got = await client.get_task(GetTaskRequest(id=started.id))
            assert got.status.state == TaskState.TASK_STATE_WORKING and got.context_id == started.context_id
            stream = client.subscribe(SubscribeToTaskRequest(id=started.id))
            first = await anext(stream)  # the subscription is on before the cancel
            assert first.task.id == started.id and first.task.status.state == TaskState.TASK_STATE_WORKING
            cancelled = await client.cancel_task(CancelTaskRequest(id=started.id))
            assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
            rest = [event async for event in stream]
            assert rest[-1].status_update.status.state == TaskState.TASK_STATE_CANCELED
            again = await client.get_task(GetTaskRequest(id=started.id))
            assert again.status.state == TaskState.TASK_STATE_CANCELED
            with pytest.raises(A2AError):  # an ended task is not cancelable
                await client.cancel_task(CancelTaskRequest(id=started.id))
            with pytest.raises(A2AError):
                await client.get_task(GetTaskRequest(id="no-such-task"))
    finally:
        one.held.release.set()
    meta = json.loads((one.runs / started.id / "run.json").read_text())
    assert meta["status"] == "cancelled"  # stopped resumably, as POST /v1/runs/{id}/cancel does
    assert events_of(one.runs / started.id)[-1]["type"] == "run_end"


# ---------------------------------------------------------------- input required


async def test_an_ask_user_question_is_input_required_and_a_follow_up_answers_it(stack: Stack) -> None:
    before = len(stack.wire.requests)
    url = f"{stack.served.base}/a2a/quiz"
    asked = await one_task(url, user("Start."))
    assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, asked.status
    assert "Which colour?" in texts(asked.status.message)
    (data,) = [MessageToDict(p.data) for p in asked.status.message.parts if p.HasField("data")]
    assert data[0]["kind"] == "question" and data[0]["question"] == "Which colour?"
    done = await one_task(url, user("Blue, please.", task=asked))
    assert done.id == asked.id and done.status.state == TaskState.TASK_STATE_COMPLETED, done.status
    assert texts(done.status.message) == "Blue it is."
    assert [texts(m) for m in done.history] == ["Start.", "Blue, please."]
    (after,) = [r for r in stack.wire.requests[before:] if r.assistant_turns == 1]
    assert after.tool_results[0][1] == "Blue, please."
    (decision,) = [e for e in events_of(stack.runs / asked.id) if e["type"] == "decision"]
    assert decision["answer"] == "Blue, please." and decision["by"] == "a2a"


async def test_an_approval_is_input_required_and_yes_or_no_decides_it(one: Stack) -> None:
    url = f"{one.served.base}/a2a/nested"
    asked = await one_task(url, user("Go."))
    assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert "approve write_file(" in texts(asked.status.message)
    with pytest.raises(A2AError) as unclear:
        await one_task(url, user("perhaps", task=asked))
    assert "neither yes nor no" in str(unclear.value)
    done = await one_task(url, user("yes", task=asked))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert (one.runs / asked.id / "out.txt").read_text() == "approved\n"
    with pytest.raises(A2AError) as ended:
        await one_task(url, user("more", task=done))
    assert "has ended" in str(ended.value)

    denied = await one_task(url, user("Go."))
    streamed = await send(url, user("no: not today", task=denied), streaming=True)
    assert streamed[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    assert not (one.runs / denied.id / "out.txt").exists()
    (decision,) = [e for e in events_of(one.runs / denied.id) if e["type"] == "decision"]
    assert decision["allowed"] is False and decision["reason"] == "not today"


async def test_the_root_endpoint_runs_the_skill_a_message_names(one: Stack) -> None:
    """Several workflows: the root card has a skill each, its endpoint runs the one named in
    the message's metadata; get, list and cancel (of a task waiting for input) there too."""
    async with httpx.AsyncClient(timeout=60) as http:
        client = await create_client(one.served.base, ClientConfig(streaming=False, httpx_client=http))
        with pytest.raises(A2AError) as unnamed:
            [e async for e in client.send_message(SendMessageRequest(message=user("Start.")))]
        assert "serves several workflows" in str(unnamed.value) and "quiz" in str(unnamed.value)
        named = user("Start.")
        named.metadata.update({"skill": "quiz"})
        (answer,) = [e async for e in client.send_message(SendMessageRequest(message=named))]
        asked = answer.task
        assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert (await client.get_task(GetTaskRequest(id=asked.id))).id == asked.id
        quiz = await create_client(f"{one.served.base}/a2a/quiz", ClientConfig(httpx_client=http))
        listed = await quiz.list_tasks(ListTasksRequest(context_id=asked.context_id))
        assert [t.id for t in listed.tasks] == [asked.id]
        scribe = await create_client(f"{one.served.base}/a2a/scribe", ClientConfig(httpx_client=http))
        with pytest.raises(A2AError):  # a workflow's endpoint knows only its own tasks
            await scribe.get_task(GetTaskRequest(id=asked.id))
        cancelled = await quiz.cancel_task(CancelTaskRequest(id=asked.id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    meta = json.loads((one.runs / asked.id / "run.json").read_text())
    assert meta["status"] == "waiting"  # cancelled where it stood: `flowrun answer` still can


# ---------------------------------------------------------------- restart


async def test_tasks_survive_a_restart(tmp_path: Path) -> None:
    stack = Stack(tmp_path, "openai")
    try:
        url = f"{stack.served.base}/a2a/quiz"
        asked = await one_task(url, user("Start."))
        assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        stack.served.stop()
        stack.served = stack.start()
        url = f"{stack.served.base}/a2a/quiz"
        async with httpx.AsyncClient(timeout=60) as http:
            client = await create_client(url, ClientConfig(httpx_client=http))
            got = await client.get_task(GetTaskRequest(id=asked.id))
        assert got.status.state == TaskState.TASK_STATE_INPUT_REQUIRED and got.context_id == asked.context_id
        done = await one_task(url, user("Green.", task=asked))
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
    finally:
        stack.close()


# ---------------------------------------------------------------- the token


def test_off_loopback_without_a_token_it_refuses_to_start(tmp_path: Path) -> None:
    (path,) = write_more_only(tmp_path)
    env = {k: v for k, v in clean_env().items() if k != "FLOWRUN_A2A_TOKEN"}
    done = subprocess.run(
        [*flowrun_cmd(), "serve", "a2a", str(path), "--host", "0.0.0.0", "--port", "0"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "without a token" in done.stderr and "FLOWRUN_A2A_TOKEN" in done.stderr
    assert "Traceback" not in done.stderr


def write_more_only(root: Path) -> list[Path]:
    return write_more(root, "openai")[:1]


async def test_with_a_token_requests_without_it_are_401(tmp_path: Path) -> None:
    stack = Stack(tmp_path, "openai", env={"FLOWRUN_A2A_TOKEN": TOKEN})
    try:
        url = f"{stack.served.base}/a2a/scribe"
        async with httpx.AsyncClient(timeout=60) as http:
            card = (await http.get(f"{url}/.well-known/agent-card.json")).json()  # public
            refused = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "GetTask"})
        assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
        with pytest.raises(A2AError):
            await one_task(url, user("Otters"))
        task = await one_task(url, user("Otters"), headers={"Authorization": f"Bearer {TOKEN}"})
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
    finally:
        stack.close()


def test_without_the_extra_it_says_what_to_install(tmp_path: Path) -> None:
    (path,) = write_more_only(tmp_path)
    code = (
        "import runpy, sys; sys.modules['a2a'] = None; "
        f"sys.argv = ['flowrun', 'serve', 'a2a', {str(path)!r}]; "
        "runpy.run_module('flowrun', run_name='__main__')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == "error: `flowrun serve a2a` needs the a2a-sdk's server"
    assert "pip install 'flowrun[a2a]'" in done.stderr


async def test_with_one_workflow_the_root_is_its_agent(tmp_path: Path) -> None:
    (tmp_path / "agents.d").mkdir()
    (path,) = write_more(tmp_path, "openai")[:1]
    with WireServer(replies()) as wire:
        served = Served(tmp_path, [str(path), "--port", "0"], model_env(wire, "openai"), command="a2a")
        try:
            async with httpx.AsyncClient(timeout=60) as http:
                card = await A2ACardResolver(http, served.base).get_agent_card()
            assert card.name == "scribe" and card.supported_interfaces[0].url == f"{served.base}/a2a/scribe"
            task = await one_task(served.base, user("Otters"))  # found from the server's address
            assert task.status.state == TaskState.TASK_STATE_COMPLETED
            assert (tmp_path / "runs" / task.id / "report.md").read_text() == REPORT
        finally:
            served.stop()
