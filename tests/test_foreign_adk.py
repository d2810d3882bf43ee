"""ADK Agent Config folders run as they are, through the CLI and `flowrun.load`, against the
scripted model server over both wire formats: a SequentialAgent's agents in order with
`output_key` state read by later instructions, a LoopAgent ended by exit_loop, LLM transfer to
sub-agents and AgentTool as agents offered as tools, a ParallelAgent, generate_content_config,
an MCPToolset over streamable HTTP, the user's Python function as a tool (read with `ast`, run
as a function tool), and problems at the line of the ADK file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_test_server import HttpServer
from support.cli import run_cli
from support.env import WIRES, model_env, point_sdks
from support.project import write_files
from support.runs import events
from support.wire_server import Reply, Script, WireServer, call, calls

import flowrun
from flowrun.foreign_text import inner

SCHEMA = "# yaml-language-server: $schema=https://raw.githubusercontent.com/google/adk-python/refs/heads/main/src/google/adk/agents/config_schemas/AgentConfig.json\n"


def llm_agent(name: str, instruction: str, wire: str, **more: str) -> str:
    extra = "".join(f"{key}: {value}\n" for key, value in more.items())
    head = f"{SCHEMA}agent_class: LlmAgent\nname: {name}\nmodel: {wire}/m\n"
    return f"{head}instruction: |\n  {instruction}\n{extra}"


def who(name: str) -> str:
    return f'Your internal name is "{name}".'


@pytest.mark.parametrize("wire", WIRES)
def test_a_sequential_agent_passes_state_through_output_key(tmp_path: Path, wire: str) -> None:
    files = {
        "root_agent.yaml": SCHEMA + "agent_class: SequentialAgent\nname: Pipeline\nsub_agents:\n"
        "  - config_path: sub_agents/writer.yaml\n  - config_path: sub_agents/reviewer.yaml\n",
        "sub_agents/writer.yaml": llm_agent(
            "Writer", "Write code for the request.", wire, output_key="generated_code"
        ),
        "sub_agents/reviewer.yaml": llm_agent(
            "Reviewer", "Review this code:\n  {generated_code}\n  Tone: {tone}", wire, output_key="review"
        ),
    }
    agent = write_files(tmp_path / "agent", files)
    script = Script(
        {"writer": [Reply("def f(): pass")], "reviewer": [Reply("Looks fine.")]},
        {"writer": who("Writer"), "reviewer": who("Reviewer")},
    )
    with WireServer(script) as server:
        args = [str(agent), "--message", "a function", "--tone", "kind", "--run-id", "r"]
        proc = run_cli(args, cwd=tmp_path, env=model_env(server, wire))
        writer, reviewer = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert writer.system == 'Write code for the request.\n\nYou are an agent. Your internal name is "Writer".'
    assert writer.last_user_text == "a function"
    # the reviewer's instruction reads the writer's output_key; an unknown key became an input
    assert reviewer.system.startswith("Review this code:\ndef f(): pass\nTone: kind")
    assert "For context:\n[Writer] said: def f(): pass" in reviewer.last_user_text
    run = tmp_path / "runs" / "r"
    assert (run / "state" / "review.md").read_text() == "Looks fine."
    assert events(run)[-1]["status"] == "completed"


LOOP_FILES = {
    "root_agent.yaml": SCHEMA + "agent_class: SequentialAgent\nname: Writing\nsub_agents:\n"
    "  - config_path: initial.yaml\n  - config_path: loop.yaml\n",
    "loop.yaml": SCHEMA + "agent_class: LoopAgent\nname: Refinement\nmax_iterations: 5\nsub_agents:\n"
    "  - config_path: critic.yaml\n  - config_path: refiner.yaml\n",
}


@pytest.mark.parametrize("wire", WIRES)
def test_a_loop_agent_ends_when_an_agent_calls_exit_loop(tmp_path: Path, wire: str) -> None:
    files = dict(LOOP_FILES)
    files["initial.yaml"] = llm_agent("Initial", "Write a first draft.", wire, output_key="doc")
    files["critic.yaml"] = llm_agent(
        "Critic", "Critique:\n  {{doc}}", wire, output_key="criticism", include_contents="none"
    )
    files["refiner.yaml"] = (
        llm_agent("Refiner", "Apply {criticism} to {doc}, or call exit_loop.", wire, output_key="doc")
        + "tools:\n  - name: exit_loop\n"
    )
    agent = write_files(tmp_path / "agent", files)
    script = Script(
        {
            "initial": [Reply("draft 1")],
            "critic": [Reply("add a title")],  # each iteration is a fresh instance: its first turn
            "refiner": [Reply("# Title\ndraft 1")],
        },
        {"initial": who("Initial"), "critic": who("Critic"), "refiner": who("Refiner")},
    )
    exits = Script(dict(script.agents) | {"refiner": [calls(call("exit_loop"))]}, dict(script.match))
    replies = [script, script, exits]  # the refiner refines twice, then ends the loop

    def respond(request):  # type: ignore[no-untyped-def]
        refiner_calls = sum("Refiner" in r.system and r.assistant_turns == 0 for r in server.requests)
        return replies[min(refiner_calls, 3) - 1](request) if "Refiner" in request.system else script(request)

    with WireServer(respond) as server:
        args = [str(agent), "--message", "a story", "--run-id", "r"]
        proc = run_cli(args, cwd=tmp_path, env=model_env(server, wire))
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    critics = [r for r in requests if "Critic" in r.system]
    assert len(critics) == 3  # three iterations, the third ended by exit_loop
    assert critics[0].system.startswith("Critique:\ndraft 1")
    assert critics[1].system.startswith("Critique:\n# Title\ndraft 1")  # state from the last iteration
    assert critics[0].last_user_text == "Handle the requests as specified in the System Instruction."
    run = tmp_path / "runs" / "r"
    assert (run / "state" / "doc.md").read_text() == "# Title\ndraft 1"  # exit_loop left it as it was
    log = events(run)
    assert [e["agent"] for e in log if e["type"] == "agent_start"][-2:] == ["Critic", "Refiner"]
    assert log[-1]["status"] == "completed"


@pytest.mark.parametrize("wire", WIRES)
def test_sub_agents_and_agent_tools_are_agents_offered_as_tools(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire: str
) -> None:
    root = llm_agent("Router", "Route the question.", wire, description="Routes questions.") + (
        "sub_agents:\n  - config_path: math.yaml\ntools:\n  - name: AgentTool\n    args:\n"
        "      agent:\n        config_path: ./search.yaml\n      skip_summarization: false\n"
    )
    files = {
        "root_agent.yaml": root,
        "math.yaml": llm_agent("Math", "Answer math.", wire, description="Does math."),
        "search.yaml": llm_agent("Search", "Search.", wire, description="Searches."),
    }
    agent = write_files(tmp_path / "agent", files)
    script = Script(
        {
            "router": [
                calls(call("Math", task="2+2?"), call("Search", task="news")),
                Reply("4, and no news."),
            ],
            "math": [Reply("4")],
            "search": [Reply("nothing new")],
        },
        {"router": who("Router"), "math": who("Math"), "search": who("Search")},
    )
    with WireServer(script) as server:
        point_sdks(monkeypatch, server, wire)
        wf = flowrun.load(agent / "root_agent.yaml")
        result = wf.run_sync(
            {"message": "What is 2+2, and any news?"}, runs_dir=tmp_path / "runs", run_id="r"
        )
        requests = server.requests
    assert result.status == "completed", result
    router = [r for r in requests if "Router" in r.system]
    assert set(router[0].tool_names) == {"Search", "Math"}
    assert '"Router". The description about you is "Routes questions."' in router[0].system.replace(
        "\n\n ", " "
    )
    answers = sorted(inner(text.split("\n\n")[0]) for _, text, _ in router[1].tool_results)  # (framed)
    assert answers == ["4", "nothing new"]
    assert result.message == "4, and no news."


def test_a_parallel_agent_runs_its_agents_at_once(tmp_path: Path) -> None:
    files = {
        "root_agent.yaml": SCHEMA + "agent_class: ParallelAgent\nname: Both\nsub_agents:\n"
        "  - config_path: a.yaml\n  - config_path: b.yaml\n",
        "a.yaml": llm_agent("A", "Do A.", "openai", output_key="a"),
        "b.yaml": llm_agent("B", "Do B.", "openai", output_key="b"),
    }
    agent = write_files(tmp_path / "agent", files)
    script = Script(
        {"a": [Reply("from A", delay_s=0.3)], "b": [Reply("from B", delay_s=0.3)]},
        {"a": who("A"), "b": who("B")},
    )
    with WireServer(script) as server:
        proc = run_cli(
            [str(agent), "--message", "go", "--run-id", "r"], cwd=tmp_path, env=model_env(server, "openai")
        )
        in_flight = server.max_in_flight
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert in_flight == 2
    run = tmp_path / "runs" / "r"
    assert (run / "state" / "a.md").read_text() == "from A" and (
        run / "state" / "b.md"
    ).read_text() == "from B"


def test_generate_content_config_reaches_the_model(tmp_path: Path) -> None:
    config = "generate_content_config:\n  temperature: 0.1\n  max_output_tokens: 2000\n  top_p: 0.5\n"
    agent = write_files(
        tmp_path / "agent", {"root_agent.yaml": llm_agent("Solo", "Answer.", "openai") + config}
    )
    with WireServer(Script({"solo": [Reply("ok")]}, {"solo": who("Solo")})) as server:
        proc = run_cli([str(agent), "--message", "hi"], cwd=tmp_path, env=model_env(server, "openai"))
        body = server.requests[0].body
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert body["temperature"] == 0.1 and body["top_p"] == 0.5
    assert body.get("max_tokens", body.get("max_completion_tokens")) == 2000


@pytest.fixture(scope="module")
def http_server() -> Iterator[HttpServer]:
    server = HttpServer()
    yield server
    server.stop()


def test_an_mcp_toolset_over_streamable_http(tmp_path: Path, http_server: HttpServer) -> None:
    tools = (
        "tools:\n  - name: MCPToolset\n    args:\n      streamable_http_connection_params:\n"
        f"        url: {http_server.url}\n      tool_filter: [echo]\n"
    )
    agent = write_files(
        tmp_path / "agent", {"root_agent.yaml": llm_agent("Caller", "Use the tools.", "openai") + tools}
    )
    script = Script(
        {"caller": [calls(call("Caller-mcp1__echo", text="hello")), Reply("echoed")]},
        {"caller": who("Caller")},
    )
    with WireServer(script) as server:
        proc = run_cli([str(agent), "--message", "go"], cwd=tmp_path, env=model_env(server, "openai"))
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert requests[0].tool_names == ["Caller-mcp1__echo"]  # tool_filter: only echo
    assert "echo: hello" in requests[1].tool_results[0][1]


def test_a_python_function_is_a_tool_read_with_ast_and_run_when_called(tmp_path: Path) -> None:
    tools_py = '''\
        import pathlib
        pathlib.Path("imported.txt").write_text("the module was imported")


        def roll_die(sides: int, times: int = 1) -> list[int]:
            """Roll a die with `sides` sides.

            More text the model does not read."""
            return [sides] * times


        def ask(purpose: str, tool_context: "ToolContext") -> str:
            return purpose
        '''
    files = {
        "dice/__init__.py": "",
        "dice/tools.py": tools_py,
        "dice/root_agent.yaml": llm_agent("Roller", "Roll.", "openai")
        + "tools:\n  - name: dice.tools.roll_die\n",
    }
    write_files(tmp_path / "agents", files)
    agent = tmp_path / "agents" / "dice"
    proc = run_cli(["validate", str(agent)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert not (tmp_path / "imported.txt").exists()  # reading the config never imports the module
    wf = flowrun.load(agent)
    tool = wf.project.tools["roll_die"].spec
    assert tool.description == "Roll a die with `sides` sides."
    assert tool.parameters == {
        "type": "object",
        "properties": {"sides": {"type": "integer"}, "times": {"type": "integer", "default": 1}},
        "additionalProperties": False,
        "required": ["sides"],
    }
    script = Script(
        {"roller": [calls(call("roll_die", sides=6, times=2)), Reply("rolled")]}, {"roller": who("Roller")}
    )
    with WireServer(script) as server:
        proc = run_cli([str(agent), "--message", "roll"], cwd=tmp_path, env=model_env(server, "openai"))
        result = server.requests[1].tool_results[0][1]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert result == "[6, 6]"  # the function really ran
    # a function that takes ADK's context object is not plain: an error naming it
    write_files(
        agent,
        {"root_agent.yaml": llm_agent("Roller", "Roll.", "openai") + "tools:\n  - name: dice.tools.ask\n"},
    )
    proc = run_cli(["validate", str(agent)], cwd=tmp_path)
    assert proc.returncode == 1
    assert (
        "agents/dice/root_agent.yaml:8:11: error[python-tool]: tool 'dice.tools.ask': "
        "ask(purpose: str, tool_context: 'ToolContext')" in proc.stdout
    )
    assert "tools.d/ask.yaml" in proc.stdout


def test_problems_point_at_the_adk_files(tmp_path: Path) -> None:
    files = {
        "root_agent.yaml": SCHEMA + "agent_class: SequentialAgent\nname: P\nsub_agents:\n"
        "  - config_path: missing.yaml\n  - code: my_pkg.agents.helper\n",
    }
    agent = write_files(tmp_path / "agent", files)
    proc = run_cli(["validate", str(agent)], cwd=tmp_path)
    assert proc.returncode == 1
    assert (
        "agent/root_agent.yaml:5:18: error[missing-file]: config_path missing.yaml does not exist"
        in proc.stdout
    )
    assert (
        "agent/root_agent.yaml:6:11: error[python-agent]: "
        "sub-agent 'my_pkg.agents.helper' is an agent built in Python" in proc.stdout
    )
    typo = llm_agent("Solo", "Answer.", "openai") + "output_kye: answer\n"
    write_files(agent, {"root_agent.yaml": typo})
    proc = run_cli(["validate", str(agent)], cwd=tmp_path)
    assert (
        "agent/root_agent.yaml:7:1: error[unknown-key]: unknown key 'output_kye' in an ADK agent"
        in proc.stdout
    )
    assert "did you mean 'output_key'?" in proc.stdout


def test_import_of_an_adk_folder(tmp_path: Path) -> None:
    files = dict(LOOP_FILES)
    files["initial.yaml"] = llm_agent("Initial", "Write.", "openai", output_key="doc")
    files["critic.yaml"] = llm_agent("Critic", "Critique {doc}.", "openai", output_key="criticism")
    files["refiner.yaml"] = (
        llm_agent("Refiner", "Refine {doc}.", "openai", output_key="doc") + "tools:\n  - name: exit_loop\n"
    )
    agent = write_files(tmp_path / "agent", files)
    proc = run_cli(["import", str(agent), "-o", "out"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    workflow = (tmp_path / "out" / "Writing.yaml").read_text()
    assert "until: workspace.exists('state/.exit_loop_Refinement')" in workflow
    refiner = (tmp_path / "out" / "agents.d" / "Refiner.yaml").read_text()
    assert "marker: state/.exit_loop_Refinement" in refiner and "keep: state/doc.md" in refiner
    proc = run_cli([str(tmp_path / "out" / "Writing.yaml"), "--message", "m", "--dry-run"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
