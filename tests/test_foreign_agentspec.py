"""Oracle Agent Spec files run as they are, through the CLI and `flowrun.load`, against the
scripted model server: an Agent whose system prompt reads an input (both wire formats), a Flow
whose BranchingNode sends it back to an earlier node (a loop) with data edges between its
nodes, a ClientTool as a decision the run waits for, problems at the Agent Spec file's
line and column (the spec's JSON Schema and flowrun's own checks), `flowrun import`, and the
vendor's examples: each runs or fails with its reasons."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli
from support.env import WIRES, model_env, point_sdks
from support.project import write_files
from support.runs import events
from support.wire_server import Reply, Script, WireRequest, WireServer, call, calls

import flowrun

EXAMPLES = Path(__file__).resolve().parents[1].parent / "shared" / "foreign" / "oracle-agentspec"


def llm(url: str) -> str:
    return (
        "llm_config:\n  component_type: OpenAiCompatibleConfig\n  id: llm\n  name: scripted\n"
        f"  model_id: m\n  url: {url}\n"
    )


def agent_file(url: str, tools: str = "") -> str:
    return (
        "component_type: Agent\nid: a1\nname: Writer\ninputs:\n- title: user_name\n  type: string\n"
        + llm(url)
        + "system_prompt: 'You help {{user_name}} write. Keep {{ braces }} as they are: {x}'\n"
        + tools
        + "agentspec_version: 26.2.0\n"
    )


@pytest.mark.parametrize("wire", WIRES)
def test_an_agent_file_runs_with_its_input_in_the_system_prompt(tmp_path: Path, wire: str) -> None:
    script = Script({"w": [Reply("Hello Ana, here is a draft.")]}, {"w": "You help Ana write."})
    with WireServer(script) as server:
        write_files(tmp_path, {"writer.yaml": agent_file(server.base_url("openai"))})
        args = ["writer.yaml", "--user_name", "Ana", "--braces", "b", "--message", "Hi", "--run-id", "r"]
        if wire == "anthropic":  # Agent Spec names OpenAI-compatible servers; --model picks the wire
            args += ["--model", "anthropic:m"]
        proc = run_cli(args, cwd=tmp_path, env=model_env(server, wire))
        (request,) = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert request.api == wire
    assert request.system.startswith("You help Ana write. Keep b as they are: {x}")
    assert request.last_user_text == "Hi"
    run = tmp_path / "runs" / "r"
    assert (run / "agentspec" / "answer.txt").read_text() == "Hello Ana, here is a draft."
    assert events(run)[-1]["status"] == "completed"


def node(key: str, kind: str, inputs: list[str], outputs: list[str], more: str = "") -> str:
    def props(names: list[str]) -> str:
        lines = "".join(f"\n    - title: {n}\n      type: string\n      default: ''" for n in names)
        return (lines or " []") + "\n"

    head = f"  {key}:\n    component_type: {kind}\n    id: {key}\n    name: {key}\n"
    return head + "    inputs:" + props(inputs) + "    outputs:" + props(outputs) + more


def edge(kind: str, i: int, a: str, b: str, extra: str = "") -> str:
    if kind == "control":
        head = f"- component_type: ControlFlowEdge\n  name: c{i}\n  from_node: {{$component_ref: {a}}}\n"
        return head + f"{extra}  to_node: {{$component_ref: {b}}}\n"
    (src, out), (dst, inp) = a.split("."), b.split(".")
    return (
        f"- component_type: DataFlowEdge\n  name: d{i}\n  source_node: {{$component_ref: {src}}}\n"
        f"  source_output: {out}\n  destination_node: {{$component_ref: {dst}}}\n  destination_input: {inp}\n"
    )


def review_flow(url: str) -> str:
    llm_ref = "    llm_config: {$component_ref: llm}\n"
    write = "    prompt_template: 'Write code for {{request}}. Your last version: {{code}}'\n"
    check = "    prompt_template: 'Is this ready? {{code}} Answer yes or no.'\n"
    branch = "    branches: [default, 'yes', 'no']\n    mapping: {'yes': 'yes', 'no': 'no'}\n"
    controls = [("start", "write", ""), ("write", "check", ""), ("check", "branch", "")]
    controls += [("branch", "end", "  from_branch: 'yes'\n"), ("branch", "write", "  from_branch: 'no'\n")]
    data = [("start.request", "write.request"), ("write.code", "write.code"), ("write.code", "check.code")]
    data += [("check.ready", "branch.ready"), ("write.code", "end.code")]
    return (
        "component_type: Flow\nid: f\nname: review\nstart_node: {$component_ref: start}\n"
        "nodes:\n"
        + "".join(f"- {{$component_ref: {n}}}\n" for n in ("start", "write", "check", "branch", "end"))
        + "control_flow_connections:\n"
        + "".join(edge("control", i, *c) for i, c in enumerate(controls))
        + "data_flow_connections:\n"
        + "".join(edge("data", i, *d) for i, d in enumerate(data))
        + "$referenced_components:\n"
        + node("start", "StartNode", ["request"], ["request"])
        + node("write", "LlmNode", ["request", "code"], ["code"], llm_ref + write)
        + node("check", "LlmNode", ["code"], ["ready"], llm_ref + check)
        + node("branch", "BranchingNode", ["ready"], [], branch)
        + node("end", "EndNode", ["code"], ["code"])
        + "  llm:\n    component_type: OpenAiCompatibleConfig\n    id: llm\n    name: scripted\n"
        + f"    model_id: m\n    url: {url}\n"
        + "agentspec_version: 25.4.1\n"
    )


def reviewer(request: WireRequest) -> Reply:
    """Writes v1, then v2 once it sees v1; says v2 is ready and v1 is not."""
    text = request.last_user_text
    if text.startswith("Write code"):
        return Reply("v2" if "last version: v1" in text else "v1")
    return Reply("yes" if "v2" in text else "no")


def test_a_flow_loops_back_through_its_branching_node(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with WireServer(reviewer) as server:
        path = write_files(tmp_path, {"flow.yaml": review_flow(server.base_url("openai"))}) / "flow.yaml"
        point_sdks(monkeypatch, server, "openai")
        result = flowrun.load(path).run_sync({"request": "a sort"}, run_id="r", runs_dir=tmp_path / "runs")
        texts = [r.last_user_text for r in server.requests]
    assert result.status == "completed", result
    assert texts == [
        "Write code for a sort. Your last version: ",
        "Is this ready? v1 Answer yes or no.",
        "Write code for a sort. Your last version: v1",
        "Is this ready? v2 Answer yes or no.",
    ]
    assert (tmp_path / "runs" / "r" / "agentspec" / "write.txt").read_text() == "v2"


def test_a_client_tool_is_a_decision_the_run_waits_for(tmp_path: Path) -> None:
    tool = (
        "tools:\n- component_type: ClientTool\n  id: t\n  name: get_weather\n  description: The weather.\n"
        "  inputs:\n  - title: city\n    type: string\n"
    )
    script = Script({"w": [calls(call("get_weather", city="Zurich")), Reply("Sunny.")]}, {"w": "You help"})
    with WireServer(script) as server:
        write_files(tmp_path, {"a.yaml": agent_file(server.base_url("openai"), tool)})
        args = ["a.yaml", "--user_name", "Ana", "--braces", "b", "--message", "Weather?", "--run-id", "r"]
        first = run_cli(args, cwd=tmp_path, env=model_env(server, "openai"))
        run = tmp_path / "runs" / "r"
        answered = run_cli(["answer", str(run), "sunny, 21 C"], cwd=tmp_path, env=model_env(server, "openai"))
        last = server.requests[-1]
    assert first.returncode == 75, first.stdout + first.stderr
    assert "get_weather" in first.stdout + first.stderr
    assert answered.returncode == 0, answered.stdout + answered.stderr
    assert last.tool_results[0][1] == "sunny, 21 C"


def test_problems_point_at_the_agent_spec_file(tmp_path: Path) -> None:
    text = agent_file("http://127.0.0.1:9").replace("system_prompt:", "system_promt: x\nsystem_prompt:")
    text = text.replace(
        "agentspec_version",
        "tools:\n- component_type: ServerTool\n  id: s\n  name: lookup\n  inputs: []\nagentspec_version",
    )
    write_files(tmp_path, {"bad.yaml": text})
    proc = run_cli(["validate", "bad.yaml"], cwd=tmp_path)
    assert proc.returncode == 1
    assert "bad.yaml:13:1: error[unknown-key]: unknown key 'system_promt'" in proc.stdout
    assert "did you mean 'system_prompt'" in proc.stdout
    fixed = text.replace("system_promt: x\n", "")
    write_files(tmp_path, {"bad.yaml": fixed})
    proc = run_cli(["validate", "bad.yaml"], cwd=tmp_path)
    assert proc.returncode == 1
    assert "bad.yaml:17:9: error[missing-tool]: ServerTool 'lookup'" in proc.stdout
    assert "tools.d/lookup.yaml" in proc.stdout


def test_import_writes_a_project_that_runs(tmp_path: Path) -> None:
    write_files(tmp_path, {"src/flow.yaml": review_flow("http://127.0.0.1:9")})
    proc = run_cli(["import", "src/flow.yaml", "-o", "out"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "out" / "agents.d" / "write.yaml").is_file()
    assert "a loop of 10 iterations at most" in (tmp_path / "out" / "IMPORTED.md").read_text()
    dry = run_cli(["out/review.yaml", "--request", "x", "--dry-run"], cwd=tmp_path)
    assert dry.returncode == 0, dry.stdout + dry.stderr


@pytest.mark.skipif(
    not EXAMPLES.is_dir(), reason="the shared folder of foreign files is not beside the repository"
)
def test_the_vendor_examples_run_or_say_why_not(tmp_path: Path) -> None:
    """Each of Oracle's examples validates and dry-runs, or fails with its reasons (counted in
    docs/how-to/agent-spec.md)."""
    folder = next(EXAMPLES.rglob("agentspec_config_examples"))
    runnable, refused = [], []
    for path in sorted(p for p in folder.iterdir() if p.suffix != ".md"):
        checked = run_cli(["validate", str(path)], cwd=tmp_path)
        if checked.returncode != 0:
            reasons = [line for line in checked.stdout.splitlines() if ": error[" in line]
            assert reasons and all(path.name + ":" in line for line in reasons), checked.stdout
            refused.append(path.name)
            continue
        runnable.append(path.name)
        if "component_config" in path.name:  # the other half of a disaggregated pair
            continue
        workflow = flowrun.load(path)
        if workflow.spec.mcp_servers:  # a dry run lists the tools of the vendor's MCP servers
            continue
        values: list[str] = []
        for name, spec in workflow.inputs.items():
            values += [f"--{name}", '["a", "b"]' if spec.type == "list" else "x"]
        dry = run_cli([str(path), *values, "--dry-run", "--runs-dir", str(tmp_path / "runs")], cwd=tmp_path)
        assert dry.returncode == 0, (path.name, dry.stdout + dry.stderr)
    assert len(runnable) == 14, runnable
    assert len(refused) == 24, refused


SHIPPED = sorted(
    p
    for p in [
        *Path(__file__).resolve().parents[1].joinpath("examples").glob("*.yaml"),
        *Path(__file__).resolve().parents[1].joinpath("examples").glob("*/*.yaml"),
    ]
    if "kind: workflow" in p.read_text(encoding="utf-8")
)


def resolved(agent: dict[str, object], prompts: Path | None) -> dict[str, object]:
    """An agent's manifest with a prompt file read in, as export keeps it (`flowrun import` ends
    a prompt file with one newline)."""
    out = {k: v for k, v in agent.items() if k != "prompt_file"}
    if "prompt_file" in agent and prompts is not None:
        out["prompt"] = (prompts / str(agent["prompt_file"])).read_text(encoding="utf-8")
    if isinstance(out.get("prompt"), str):
        out["prompt"] = str(out["prompt"]).rstrip("\n")
    return out


@pytest.mark.parametrize("workflow", SHIPPED, ids=lambda p: p.stem)
def test_export_of_a_shipped_example_is_valid_agent_spec_and_imports_back(
    tmp_path: Path, workflow: Path
) -> None:
    import yaml
    from jsonschema import Draft202012Validator

    out = tmp_path / f"{workflow.stem}.json"
    proc = run_cli(["export", "agentspec", str(workflow), "-o", str(out)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    document = json.loads(out.read_text())
    schema = json.loads(
        (
            Path(flowrun.__file__).parent / "manifest/foreign/agentspec/agentspec_json_spec_26_2_0.json"
        ).read_text()
    )
    assert document.pop("agentspec_version") in schema["$defs"]["AgentSpecVersionEnum"]["enum"]
    errors = [e.message for e in Draft202012Validator(schema).iter_errors(document)]
    assert errors == []
    imported = run_cli(["import", str(out), "-o", "back"], cwd=tmp_path)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    original = flowrun.load(workflow, prefetch=False)
    back = tmp_path / "back"
    again = yaml.safe_load((back / f"{original.name}.yaml").read_text())
    assert again == original.loaded.spec.model_dump(mode="json", exclude_defaults=True, by_alias=True) | {
        "version": 1,
        "kind": "workflow",
    }
    for name in {p.stem for p in (back / "agents.d").glob("*.yaml")}:
        mine = yaml.safe_load((back / "agents.d" / f"{name}.yaml").read_text())
        theirs = original.project.agents[name].spec.model_dump(
            mode="json", exclude_defaults=True, by_alias=True
        )
        found = original.project.find_prompt(str(theirs["prompt_file"])) if "prompt_file" in theirs else None
        assert resolved(mine, back / "prompts") == resolved(theirs, found.parent if found else None)
