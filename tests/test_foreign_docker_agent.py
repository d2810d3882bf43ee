"""docker-agent team files run as they are, through the CLI and `flowrun.load`, against the
scripted model server over both wire formats: the root agent delegating to its sub_agents and
handing off (agents offered as tools, a handoff back up the chain left out), named and inline
models with fallbacks, structured output, commands whose `$VAR`s are inputs, script tools,
add_date; the file checked against docker-agent's JSON Schema, problems at its line; `flowrun
import` of a team file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli
from support.env import WIRES, model_env, point_sdks
from support.project import write_files
from support.runs import events
from support.wire_server import Reply, Script, WireServer, call, calls

import flowrun


def team(wire: str) -> str:
    return f"""\
#!/usr/bin/env docker agent run
agents:
  root:
    model: {wire}/m
    description: Coordinates the team
    instruction: You coordinate. Delegate research, then hand off to the writer.
    sub_agents: [researcher]
    handoffs: [writer]
  researcher:
    model: {wire}/m
    description: Finds facts
    instruction: You research topics.
    add_date: true
    toolsets:
      - type: filesystem
      - type: think
  writer:
    model: {wire}/m
    description: Writes the answer
    instruction: You write the final answer.
    max_iterations: 3
    handoffs: [root]
"""


@pytest.mark.parametrize("wire", WIRES)
def test_the_root_delegates_to_sub_agents_and_hands_off(tmp_path: Path, wire: str) -> None:
    write_files(tmp_path, {"team.yaml": team(wire)})
    script = Script(
        {
            "root": [
                calls(call("researcher", task="facts on owls")),
                calls(call("writer", task="write it")),
                Reply("Done: owls."),
            ],
            "researcher": [Reply("Owls hunt at night.")],
            "writer": [Reply("Owls are nocturnal.")],
        },
        {"root": "You coordinate.", "researcher": "You research", "writer": "You write"},
    )
    with WireServer(script) as server:
        args = ["team.yaml", "--message", "tell me about owls", "--run-id", "r"]
        proc = run_cli(args, cwd=tmp_path, env=model_env(server, wire))
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    root = [r for r in requests if r.system.startswith("You coordinate.")]
    assert root[0].last_user_text == "tell me about owls"
    assert {"researcher", "writer"} <= set(root[0].tool_names)
    researcher = next(r for r in requests if r.system.startswith("You research"))
    assert researcher.last_user_text == "facts on owls"
    assert researcher.system.startswith("You research topics.\n\nToday's date: 20")  # add_date
    assert "read_file" in researcher.tool_names and "think" not in researcher.tool_names
    writer = next(r for r in requests if r.system.startswith("You write"))
    assert "root" not in writer.tool_names  # the handoff back to root is the answer going back
    assert "Owls hunt at night." in str(root[1].tool_results) and "Owls are nocturnal." in str(
        root[2].tool_results
    )
    run = tmp_path / "runs" / "r"
    assert (run / "docker-agent" / "root.md").read_text() == "Done: owls."
    assert events(run)[-1]["status"] == "completed"


STRUCTURED = """\
models:
  main:
    provider: {wire}
    model: m
    temperature: 0.2
    max_tokens: 900
agents:
  root:
    model: main
    fallback:
      models: [{wire}/backup]
      retries: 1
      cooldown: 2m
    instruction: Extract the person.
    commands:
      demo: "My name is $NAME and I live in ${{CITY}}."
    structured_output:
      name: person
      strict: true
      schema:
        type: object
        properties:
          name: {{type: string}}
          city: {{type: string}}
        required: [name, city]
        additionalProperties: false
"""


@pytest.mark.parametrize("wire", WIRES)
def test_structured_output_models_and_commands_through_the_python_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire: str
) -> None:
    path = write_files(tmp_path, {"person.yaml": STRUCTURED.format(wire=wire)}) / "person.yaml"
    script = Script({"root": [Reply('{"name": "Ada", "city": "Paris"}')]}, {"root": "Extract the person."})
    with WireServer(script) as server:
        point_sdks(monkeypatch, server, wire)
        wf = flowrun.load(path)
        assert set(wf.inputs) == {"message", "command", "NAME", "CITY"}
        assert wf.inputs["command"].default == "" and not wf.inputs["NAME"].required
        result = wf.run_sync(
            {"command": "demo", "NAME": "Ada", "CITY": "Paris"}, runs_dir=tmp_path / "runs", run_id="r"
        )
        (request,) = server.requests
    assert result.status == "completed", result
    assert request.last_user_text == "My name is Ada and I live in Paris."
    run = tmp_path / "runs" / "r"
    assert json.loads((run / "docker-agent" / "root.json").read_text()) == {"name": "Ada", "city": "Paris"}
    assert request.body["max_tokens"] == 900  # the named model's settings
    if wire == "openai":  # Anthropic's API takes no temperature (anthropic_provider.py)
        assert request.body["temperature"] == 0.2


def test_the_schema_is_checked_first_at_the_line_of_the_file(tmp_path: Path) -> None:
    text = "agents:\n  root:\n    model: openai/m\n    instrucion: Hi.\n    max_iterations: many\n"
    write_files(tmp_path, {"bad.yaml": text})
    proc = run_cli(["validate", "bad.yaml"], cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout
    assert (
        "bad.yaml:4:5: error[unknown-key]: unknown key 'instrucion' "
        "(docker-agent's schema has no such key here)" in proc.stdout
    )
    assert "did you mean 'instruction'?" in proc.stdout
    assert (
        "bad.yaml:5:21: error[schema]: docker-agent's schema: 'many' is not of type 'integer'" in proc.stdout
    )
    unknown = "agents:\n  root:\n    model: openai/m\n    instruction: Hi.\n    sub_agents: [helper]\n"
    write_files(tmp_path, {"team.yaml": unknown})
    proc = run_cli(["validate", "team.yaml"], cwd=tmp_path)
    assert (
        "team.yaml:5:18: error[unknown-agent]: sub_agents names 'helper', which this file does not define"
        in proc.stdout
    )


SCRIPT_TOOL = """\
agents:
  root:
    model: {wire}/m
    instruction: Use your tools.
    toolsets:
      - type: script
        shell:
          greet:
            cmd: "echo hello $who"
            description: Greets someone
            args:
              who: {{type: string, description: Who to greet}}
            required: [who]
      - type: todo
"""


@pytest.mark.parametrize("wire", WIRES)
def test_a_script_toolset_runs_its_commands_with_the_arguments_as_variables(
    tmp_path: Path, wire: str
) -> None:
    write_files(tmp_path, {"tools.yaml": SCRIPT_TOOL.format(wire=wire)})
    script = Script(
        {"root": [calls(call("greet", who="Bob")), Reply("greeted")]}, {"root": "Use your tools."}
    )
    with WireServer(script) as server:
        proc = run_cli(
            ["tools.yaml", "--message", "greet Bob", "--run-id", "r"],
            cwd=tmp_path,
            env=model_env(server, wire),
        )
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "hello Bob" in requests[1].tool_results[0][1]
    proc = run_cli(["validate", "tools.yaml"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert "tools.yaml:14:15: warning[ignored-tool]: root: toolset 'todo' is left out" in proc.stdout


def test_import_writes_a_project_that_validates_and_dry_runs(tmp_path: Path) -> None:
    write_files(tmp_path, {"team.yaml": team("openai")})
    proc = run_cli(["import", "team.yaml", "-o", "out"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = tmp_path / "out"
    assert sorted(p.name for p in (out / "agents.d").iterdir()) == [
        "researcher.yaml",
        "root.yaml",
        "writer.yaml",
    ]
    imported = (out / "IMPORTED.md").read_text()
    assert (
        "| `team.yaml:22` | `agents.writer.handoffs[0]` |" in imported
        and "root is already on the way here" in imported
    )
    assert run_cli(["validate", "out"], cwd=tmp_path).returncode == 0
    proc = run_cli(["out/team.yaml", "--dry-run", "--message", "hi"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_an_a2a_toolset_is_a_remote_agent_and_mcp_headers_read_the_environment(tmp_path: Path) -> None:
    text = (
        "agents:\n  root:\n    model: openai/m\n    instruction: Play.\n    toolsets:\n"
        "      - type: a2a\n        name: opponent\n        url: http://127.0.0.1:9/\n"
        "      - type: mcp\n        remote:\n          url: http://127.0.0.1:9/mcp\n"
        "          headers: {Authorization: Bearer $TOKEN}\n"
    )
    path = write_files(tmp_path, {"game.yaml": text}) / "game.yaml"
    wf = flowrun.load(path)
    assert wf.project.agents["root"].spec.tool_list == ["opponent", "root-mcp1"]
    proc = run_cli(["import", "game.yaml", "-o", "out"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (
        "a2a_agents:\n  opponent:\n    url: http://127.0.0.1:9/"
        in (tmp_path / "out" / "game.yaml").read_text()
    )
