"""Oracle Agent Spec files run as they are, through the CLI and `flowrun.load`, against the
scripted model server: an Agent whose system prompt reads an input (both wire formats), a Flow
whose BranchingNode sends it back to an earlier node (a loop) with data edges between its
nodes, a ClientTool as a decision the run waits for, problems at the Agent Spec file's
line and column (the spec's JSON Schema and flowrun's own checks), `flowrun import`, and the
vendor's examples: each runs or fails with its reasons."""

from __future__ import annotations

import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from mcp_test_server import HttpServer
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


class Api(BaseHTTPRequestHandler):
    """A REST service: GET /city?country=X -> {"city": ...}; a form POST /weather -> its weather."""

    def _answer(self, data: dict[str, object]) -> None:
        body = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        query = parse_qs(urlsplit(self.path).query)
        self._answer({"city": {"Morocco": "Rabat"}.get(query["country"][0], "?"), "extra": 1})

    def do_POST(self) -> None:
        form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
        assert self.headers["Content-Type"] == "application/x-www-form-urlencoded"
        self._answer({"weather": f"sunny in {form['city'][0]}", "temperature": 22})

    def log_message(self, format: str, *args: object) -> None:
        pass


Chained = list[tuple[str, str, list[str], list[str], str]]


def chain(name: str, nodes: Chained, data: list[tuple[str, str]], numbers: bool = True) -> str:
    """A Flow of `nodes` (key, kind, inputs, outputs, more) run one after the other, its data
    edges `data` ("node.output", "node.input"); every property a number (else a string)."""
    keys = [n[0] for n in nodes]
    text = (
        f"component_type: Flow\nid: {name}\nname: {name}\nstart_node: {{$component_ref: {keys[0]}}}\nnodes:\n"
        + "".join(f"- {{$component_ref: {k}}}\n" for k in keys)
        + "control_flow_connections:\n"
        + "".join(edge("control", i, a, b) for i, (a, b) in enumerate(itertools.pairwise(keys)))
        + "data_flow_connections:\n"
        + "".join(edge("data", i, *d) for i, d in enumerate(data))
        + "$referenced_components:\n"
        + "".join(node(*n) for n in nodes)
    )
    return text.replace("type: string\n      default: ''", "type: number") if numbers else text


def api_flow(api: str, url: str) -> str:
    get = f"    url: {api}/city\n    http_method: GET\n    query_params: {{country: '{{{{ country }}}}'}}\n"
    post = f"    url: {api}/weather\n    http_method: POST\n    data: {{city: '{{{{ city }}}}'}}\n"
    post += "    headers: {Content-Type: application/x-www-form-urlencoded}\n"
    tell = "    llm_config: {$component_ref: llm}\n    prompt_template: 'Say: {{weather}}'\n"
    nodes: Chained = [
        ("start", "StartNode", ["country"], ["country"], ""),
        ("city", "ApiNode", ["country"], ["city"], get),
        ("weather", "ApiNode", ["city"], ["weather", "temperature"], post),
        ("tell", "LlmNode", ["weather"], ["said"], tell),
        ("end", "EndNode", ["temperature"], ["temperature"], ""),
    ]
    data = [("start.country", "city.country"), ("city.city", "weather.city")]
    data += [("weather.weather", "tell.weather"), ("weather.temperature", "end.temperature")]
    return (
        chain("api", nodes, data, numbers=False)
        + "  llm:\n    component_type: OpenAiCompatibleConfig\n    id: llm\n    name: scripted\n"
        + f"    model_id: m\n    url: {url}\n"
        + "agentspec_version: 25.4.1\n"
    )


def test_api_nodes_send_their_requests_without_a_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api = ThreadingHTTPServer(("127.0.0.1", 0), Api)
    threading.Thread(target=api.serve_forever, daemon=True).start()
    try:
        with WireServer(lambda request: Reply(f"said: {request.last_user_text}")) as server:
            flow = api_flow(f"http://127.0.0.1:{api.server_port}", server.base_url("openai"))
            path = write_files(tmp_path, {"flow.yaml": flow}) / "flow.yaml"
            point_sdks(monkeypatch, server, "openai")
            result = flowrun.load(path).run_sync(
                {"country": "Morocco"}, run_id="r", runs_dir=tmp_path / "runs"
            )
            texts = [r.last_user_text for r in server.requests]
    finally:
        api.shutdown()
        api.server_close()
    assert result.status == "completed", result
    assert texts == ["Say: sunny in Rabat"]  # only the LlmNode asks the model
    folder = tmp_path / "runs" / "r" / "agentspec"
    assert (folder / "city.txt").read_text() == "Rabat"
    assert json.loads((folder / "weather.json").read_text()) == {
        "weather": "sunny in Rabat",
        "temperature": 22,
    }


SQUARE_TOOL = """version: 1
kind: tool
name: square
description: The square of a number.
parameters: {type: object, properties: {x: {type: number}}, required: [x]}
implementation: {python: "square_mod:square"}
"""
SQUARE_MOD = """from flowrun.types import ToolResult


async def square(ctx, x):
    return ToolResult.ok(str(x * x))
"""


def square_flow(name: str, with_model: bool) -> str:
    """A Flow of one ToolNode (x -> y, the tool `square`), or of a FlowNode of that flow then an
    LlmNode that reads its output."""
    tool = "    tool:\n      component_type: ServerTool\n      name: square\n      inputs:\n"
    tool += "      - title: x\n        type: number\n"
    inner = ("in", "sq", "out")
    nodes = ["StartNode", "ToolNode", "EndNode"]
    more = ["", tool, ""]
    data = [("in.x", "sq.x"), ("sq.y", "out.y")]
    if with_model:
        inner = ("start", "sub", "say", "end")
        nodes = ["StartNode", "FlowNode", "LlmNode", "EndNode"]
        sub = "    subflow:\n" + "".join(
            f"      {line}\n" for line in square_flow("inner", False).splitlines()
        )
        say = "    llm_config: {$component_ref: llm}\n    prompt_template: 'Say {{y}}'\n"
        more = ["", sub, say, ""]
        data = [("start.x", "sub.x"), ("sub.y", "say.y"), ("sub.y", "end.y")]
    ios = {"start": (["x"], ["x"]), "sq": (["x"], ["y"]), "sub": (["x"], ["y"]), "say": (["y"], ["said"])}
    ios |= {"in": (["x"], ["x"]), "end": (["y"], ["y"]), "out": (["y"], ["y"])}
    chained = [(n, kind, *ios[n], extra) for n, kind, extra in zip(inner, nodes, more, strict=True)]
    return chain(name, chained, data).replace(
        "    - title: said\n      type: number", "    - title: said\n      type: string"
    )


def test_a_flow_node_runs_its_subflow_and_a_tool_node_needs_no_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with WireServer(lambda request: Reply(f"said: {request.last_user_text}")) as server:
        flow = square_flow("outer", True).replace(
            "$referenced_components:\n",
            "$referenced_components:\n"
            + (
                "  llm:\n    component_type: OpenAiCompatibleConfig\n    id: llm\n    name: scripted\n"
                f"    model_id: m\n    url: {server.base_url('openai')}\n"
            ),
            1,
        )
        files = {"flow.yaml": flow + "agentspec_version: 25.4.1\n", "tools.d/square.yaml": SQUARE_TOOL}
        path = write_files(tmp_path, {**files, "square_mod.py": SQUARE_MOD}) / "flow.yaml"
        point_sdks(monkeypatch, server, "openai")
        result = flowrun.load(path).run_sync({"x": 7}, run_id="r", runs_dir=tmp_path / "runs")
        texts = [r.last_user_text for r in server.requests]
    assert result.status == "completed", result
    assert texts == ["Say 49.0"]  # a number input; the ToolNode called the tool without the model
    folder = tmp_path / "runs" / "r" / "agentspec"
    assert json.loads((folder / "sq.json").read_text()) == {"y": 49}
    assert json.loads((folder / "sub.json").read_text()) == {"y": 49}


def with_k(flow: str, key: str, where: str) -> str:
    """`flow` with a number property `k` after the first property of node `key`'s `where`."""
    head = f"    name: {key}\n"
    at = flow.index(head) + len(head)
    at = flow.index(f"    {where}:\n", at) + len(f"    {where}:\n")
    at = flow.index("      type: number\n", at) + len("      type: number\n")
    return flow[:at] + "    - title: k\n      type: number\n" + flow[at:]


def test_a_map_node_zips_its_lists_and_collects_its_subflow_outputs(tmp_path: Path) -> None:
    inner = square_flow("inner", False)
    for key, where in (("in", "inputs"), ("in", "outputs"), ("out", "inputs"), ("out", "outputs")):
        inner = with_k(inner, key, where)
    inner = inner.replace(
        "destination_input: y\n", "destination_input: y\n" + edge("data", 9, "in.k", "out.k"), 1
    )
    sub = "    subflow:\n" + "".join(f"      {line}\n" for line in inner.splitlines())
    mapped = (
        "  map:\n    component_type: MapNode\n    id: map\n    name: map\n    inputs:\n"
        "    - {title: iterated_x, type: array, items: {type: number}}\n"
        "    - {title: iterated_k, type: number}\n"
        "    outputs:\n    - {title: collected_y, type: array, items: {type: number}}\n"
        "    - {title: collected_k, type: array, items: {type: number}}\n" + sub
    )
    order = ("start", "map", "end")
    flow = (
        "component_type: Flow\nid: f\nname: f\nstart_node: {$component_ref: start}\nnodes:\n"
        + "".join(f"- {{$component_ref: {n}}}\n" for n in order)
        + "control_flow_connections:\n"
        + "".join(edge("control", i, a, b) for i, (a, b) in enumerate(itertools.pairwise(order)))
        + "data_flow_connections:\n"
        + edge("data", 0, "start.xs", "map.iterated_x")
        + edge("data", 1, "start.k", "map.iterated_k")
        + edge("data", 2, "map.collected_y", "end.ys")
        + "$referenced_components:\n"
        + "  start:\n    component_type: StartNode\n    id: start\n    name: start\n"
        + "    outputs:\n    - {title: xs, type: array, items: {type: number}}\n"
        + "    - {title: k, type: integer}\n"
        + mapped
        + "  end:\n    component_type: EndNode\n    id: end\n    name: end\n    inputs:\n"
        + "    - {title: ys, type: array}\n"
        + "agentspec_version: 25.4.1\n"
    )
    files = {"flow.yaml": flow, "tools.d/square.yaml": SQUARE_TOOL, "square_mod.py": SQUARE_MOD}
    path = write_files(tmp_path, files) / "flow.yaml"
    result = flowrun.load(path).run_sync({"xs": [1, 2, 3], "k": 5}, run_id="r", runs_dir=tmp_path / "runs")
    assert result.status == "completed", result
    folder = tmp_path / "runs" / "r" / "agentspec"
    assert json.loads((folder / "map.items.json").read_text()) == [
        {"x": 1, "k": 5},
        {"x": 2, "k": 5},
        {"x": 3, "k": 5},
    ]
    assert json.loads((folder / "map.json").read_text()) == {
        "collected_y": [1, 4, 9],
        "collected_k": [5, 5, 5],
    }


def parallel_flow(second_output: str) -> str:
    """A ParallelFlowNode of two subflows: one squares x (a ToolNode), one passes x through as
    `second_output`; the node's outputs are theirs."""
    tool = "    tool:\n      component_type: ServerTool\n      name: square\n      inputs:\n"
    tool += "      - title: x\n        type: number\n"
    square = chain(
        "a",
        [
            ("a_in", "StartNode", ["x"], ["x"], ""),
            ("a_sq", "ToolNode", ["x"], ["y"], tool),
            ("a_out", "EndNode", ["y"], ["y"], ""),
        ],
        [("a_in.x", "a_sq.x"), ("a_sq.y", "a_out.y")],
    )
    through = chain(
        "b",
        [("b_in", "StartNode", ["x"], ["x"], ""), ("b_out", "EndNode", [second_output], [second_output], "")],
        [("b_in.x", f"b_out.{second_output}")],
    )
    subflows = "    subflows:\n" + "".join(
        "    - " + "\n      ".join(sub.rstrip("\n").splitlines()) + "\n" for sub in (square, through)
    )
    outputs = sorted({"y", second_output})
    main = chain(
        "main",
        [
            ("start", "StartNode", ["x"], ["x"], ""),
            ("par", "ParallelFlowNode", ["x"], outputs, subflows),
            ("end", "EndNode", outputs, outputs, ""),
        ],
        [("start.x", "par.x"), *((f"par.{o}", f"end.{o}") for o in outputs)],
    )
    return main + "agentspec_version: 25.4.2\n"


def test_a_parallel_flow_node_runs_its_subflows_and_has_their_outputs(tmp_path: Path) -> None:
    files = {"flow.yaml": parallel_flow("x2"), "tools.d/square.yaml": SQUARE_TOOL}
    files["square_mod.py"] = SQUARE_MOD
    path = write_files(tmp_path, files) / "flow.yaml"
    result = flowrun.load(path).run_sync({"x": 7}, run_id="r", runs_dir=tmp_path / "runs")
    assert result.status == "completed", result
    folder = tmp_path / "runs" / "r" / "agentspec"
    assert json.loads((folder / "par.json").read_text()) == {"y": 49, "x2": 7}
    fanouts = [e for e in events(tmp_path / "runs" / "r") if e["type"] == "fanout_start"]
    assert [e["kind"] for e in fanouts] == ["parallel"]


def test_two_subflows_of_a_parallel_flow_node_may_not_share_an_output(tmp_path: Path) -> None:
    files = {"flow.yaml": parallel_flow("y"), "tools.d/square.yaml": SQUARE_TOOL, "square_mod.py": SQUARE_MOD}
    write_files(tmp_path, files)
    checked = run_cli(["validate", "flow.yaml"], cwd=tmp_path)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "flow.yaml:" in checked.stdout + checked.stderr
    assert "subflows 'a' and 'b' of ParallelFlowNode 'par' both have the output 'y'" in checked.stdout


def tool_node_flow(key: str, tool: str, given: str, answer: str) -> str:
    """A Flow of one ToolNode `key` (its `tool:` lines), from the flow's input `given` to its
    output `answer`, every property a string."""
    nodes: Chained = [
        ("start", "StartNode", [given], [given], ""),
        (key, "ToolNode", [given], [answer], tool),
        ("end", "EndNode", [answer], [answer], ""),
    ]
    edges = [(f"start.{given}", f"{key}.{given}"), (f"{key}.{answer}", f"end.{answer}")]
    return chain("f", nodes, edges).replace("type: number", "type: string") + "agentspec_version: 25.4.2\n"


def test_a_tool_node_of_an_mcp_tool_answers_with_the_servers_result(tmp_path: Path) -> None:
    server = HttpServer()
    try:
        tool = (
            "    tool:\n      component_type: MCPTool\n      name: report\n"
            "      inputs:\n      - {title: city, type: string}\n"
            "      client_transport:\n        component_type: StreamableHTTPTransport\n"
            f"        name: tools\n        url: {server.url}\n"
        )
        flow = tool_node_flow("rep", tool, "city", "weather")
        path = write_files(tmp_path, {"flow.yaml": flow}) / "flow.yaml"
        result = flowrun.load(path).run_sync({"city": "Oslo"}, run_id="r", runs_dir=tmp_path / "runs")
    finally:
        server.stop()
    assert result.status == "completed", result
    answer = (tmp_path / "runs" / "r" / "agentspec" / "rep.txt").read_text()
    assert json.loads(answer) == {"city": "Oslo", "temperature_c": 21, "sky": "clear"}  # not framed


def gate_flow() -> str:
    """A BranchingNode on a code that ends at one of two EndNodes, each receiving only its
    input's default (no data edge into them)."""
    ends = ("granted", "denied")
    branch = "    branches: [ok, default]\n    mapping: {'123456': ok}\n"
    controls = [("start", "gate", ""), ("gate", "granted", "  from_branch: ok\n")]
    controls.append(("gate", "denied", "  from_branch: default\n"))
    ended = "".join(
        f"  {e}:\n    component_type: EndNode\n    id: {e}\n    name: {e}\n    branch_name: {e}\n"
        f"    inputs:\n    - {{title: message, type: string, default: ACCESS_{e.upper()}}}\n"
        for e in ends
    )
    return (
        "component_type: Flow\nid: f\nname: gate\nstart_node: {$component_ref: start}\nnodes:\n"
        + "".join(f"- {{$component_ref: {n}}}\n" for n in ("start", "gate", *ends))
        + "outputs:\n- {title: message, type: string, default: ACCESS_DENIED}\n"
        + "control_flow_connections:\n"
        + "".join(edge("control", i, a, b, extra) for i, (a, b, extra) in enumerate(controls))
        + "data_flow_connections:\n"
        + edge("data", 0, "start.code", "gate.code")
        + "$referenced_components:\n"
        + "  start:\n    component_type: StartNode\n    id: start\n    name: start\n"
        + "    outputs:\n    - {title: code, type: string}\n"
        + "  gate:\n    component_type: BranchingNode\n    id: gate\n    name: gate\n"
        + "    inputs:\n    - {title: code, type: string}\n"
        + branch
        + ended
        + "agentspec_version: 25.4.1\n"
    )


@pytest.mark.parametrize("code, message", [("123456", "ACCESS_GRANTED"), ("0000", "ACCESS_DENIED")])
def test_the_flow_answers_what_the_end_node_it_reached_receives(
    tmp_path: Path, code: str, message: str
) -> None:
    write_files(tmp_path, {"gate.yaml": gate_flow()})
    ran = run_cli(["gate.yaml", "--code", code, "--run-id", "r", "--runs-dir", "runs"], cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    folder = tmp_path / "runs" / "r" / "agentspec"
    assert (folder / "outputs.txt").read_text() == message
    ran_agents = [e["agent"] for e in events(tmp_path / "runs" / "r") if e["type"] == "agent_start"]
    assert ran_agents == [message.removeprefix("ACCESS_").lower()]  # only the EndNode reached


def test_a_remote_tool_answers_its_declared_output(tmp_path: Path) -> None:
    """A RemoteTool's answer read as its outputs: its one output `city`, the JSON answer's key
    of that name, is what the next node receives."""
    api = ThreadingHTTPServer(("127.0.0.1", 0), Api)
    threading.Thread(target=api.serve_forever, daemon=True).start()
    try:
        tool = (
            "    tool:\n      component_type: RemoteTool\n      name: find_city\n"
            f"      url: http://127.0.0.1:{api.server_port}/city\n      http_method: GET\n"
            "      query_params: {country: '{{country}}'}\n"
            "      inputs:\n      - {title: country, type: string}\n"
            "      outputs:\n      - {title: city, type: string}\n"
        )
        flow = tool_node_flow("find", tool, "country", "city")
        path = write_files(tmp_path, {"flow.yaml": flow}) / "flow.yaml"
        result = flowrun.load(path).run_sync({"country": "Morocco"}, run_id="r", runs_dir=tmp_path / "runs")
    finally:
        api.shutdown()
        api.server_close()
    assert result.status == "completed", result
    assert (tmp_path / "runs" / "r" / "agentspec" / "outputs.txt").read_text() == "Rabat"
