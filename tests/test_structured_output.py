"""`output_schema`: native structured output on the wire (OpenAI `response_format` json_schema,
a forced `final_answer` tool for Anthropic) through the real SDKs against the scripted server;
answers valid the first time, repaired, and failing for good; the caller getting the parsed
object in `data`; a workflow output written as JSON; instructions for ReAct and
`structured_output: instructions`; validate's checks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli
from support.env import WIRES, model_env
from support.project import agent, model, script_manifest, who, workflow, write_files, write_project
from support.runs import events
from support.wire_server import Reply, ToolCallSpec, WireRequest, WireServer

from flowrun.foreign_text import inner

SCHEMA = {
    "type": "object",
    "properties": {
        "citations": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {"source": {"type": "string"}, "claim": {"type": "string"}},
                "required": ["source", "claim"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["citations"],
    "additionalProperties": False,
}
GOOD = {"citations": [{"source": "https://docs.python.org/3/howto/sorting.html", "claim": "sort is stable"}]}
FIXED = {"citations": [{"source": "notes.md", "claim": "key functions run once per item"}]}
BAD = {"citations": []}  # minItems 1
CLAUDE = model("anthropic", model="claude-test")


def project(tmp: Path) -> None:
    files = {
        "schemas/citations.schema.json": json.dumps(SCHEMA, indent=2),
        "agents.d/boss.yaml": agent("boss", tools=["good", "fixer", {"broken": {"max_calls": 1}}]),
        "agents.d/good.yaml": agent("good", output_schema="citations.schema.json"),
        # named from the project's root, as written next to the workflow: found all the same
        "agents.d/fixer.yaml": agent("fixer", output_schema="schemas/citations.schema.json"),
        "agents.d/broken.yaml": agent("broken", output_schema=SCHEMA, output_repairs=1),
        "calls.yaml": workflow(CLAUDE, name="calls", entry="boss"),
        "direct.yaml": workflow(
            CLAUDE, name="direct", steps=[{"agent": "good", "task": "Cite."}], output="out/citations.json"
        ),
        "fails.yaml": workflow(CLAUDE, name="fails", entry="broken"),
    }
    write_files(tmp, files)


def answer(request: WireRequest, value: Any) -> Reply:
    """The model's final answer as each wire format gives it: a call of the forced tool on
    Anthropic, JSON text on OpenAI."""
    if request.api == "anthropic":
        return Reply(tool_calls=[ToolCallSpec("final_answer", value)])
    return Reply(text=json.dumps(value))


def responder(request: WireRequest) -> Reply:
    name = who(request)
    turn = request.assistant_turns
    if name == "boss":
        if turn == 0:
            calls = [ToolCallSpec(n, {"task": f"Cite sources ({n})."}) for n in ("good", "fixer", "broken")]
            return Reply(tool_calls=calls)
        return Reply(text="All three answered.")
    if name == "good":
        return answer(request, GOOD)
    if name == "fixer":
        return Reply(text="Here you go: not json at all") if turn == 0 else answer(request, FIXED)
    return answer(request, BAD)


def run(tmp: Path, server: WireServer, provider: str, wf: str, *extra: str) -> tuple[int, str, Path]:
    args = [wf, "--run-id", wf.removesuffix(".yaml"), *extra]
    env = {"FLOWRUN_RETRY_BASE_S": "0.01"}
    env |= model_env(server, provider)
    if provider == "openai":
        args += ["--model", "openai:gpt-test"]
    proc = run_cli(args, cwd=tmp, env=env)
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out
    return proc.returncode, out, tmp / "runs" / wf.removesuffix(".yaml")


def results(evs: list[dict[str, Any]], tool: str) -> list[dict[str, Any]]:
    return [e["result"] for e in evs if e["type"] == "tool_result" and e["tool"] == tool]


def assert_native(request: WireRequest) -> None:
    """The schema went out as the API's own structured output."""
    if request.api == "openai":
        fmt = request.body["response_format"]
        assert fmt["type"] == "json_schema"
        assert fmt["json_schema"]["schema"] == SCHEMA and fmt["json_schema"]["strict"] is True
    else:
        final = next(t for t in request.tools if t["name"] == "final_answer")
        assert final["input_schema"] == SCHEMA
        assert request.body["tool_choice"] == {"type": "any"}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
@pytest.mark.parametrize("provider", WIRES)
def test_valid_repaired_and_failing_answers_reach_the_caller(
    tmp_path: Path, provider: str, stream: bool
) -> None:
    project(tmp_path)
    with WireServer(responder) as server:
        code, out, run_dir = run(
            tmp_path, server, provider, "calls.yaml", "--stream" if stream else "--no-stream"
        )
        requests = server.requests
    assert code == 0, out
    evs = events(run_dir)

    # valid the first time: the caller gets the object in data, and its JSON as text
    (good,) = results(evs, "good")
    assert good["status"] == "success" and good["data"]["output"] == GOOD
    assert json.loads(inner(good["text"].split("\n\nOutput files:")[0])) == GOOD

    # repaired: one invalid answer, a repair turn that says what is wrong, then the object
    (fixed,) = results(evs, "fixer")
    assert fixed["data"]["output"] == FIXED and fixed["data"]["steps_used"] == 2
    invalid = [e for e in evs if e["type"] == "output_invalid"]
    fixer_invalid = [e for e in invalid if e["agent"] == "fixer"]
    assert len(fixer_invalid) == 1 and fixer_invalid[0]["repairs_left"] == 2
    assert "not valid JSON" in fixer_invalid[0]["problem"] or "no JSON value" in fixer_invalid[0]["problem"]
    fixer_requests = [r for r in requests if who(r) == "fixer"]
    assert len(fixer_requests) == 2
    assert "does not match the required JSON Schema" in fixer_requests[1].last_user_text

    # failing: after its one repair turn the sub-agent fails; the caller gets OUTPUT_INVALID and goes on
    (broken,) = results(evs, "broken")
    assert broken["status"] == "error" and broken["error"]["code"] == "OUTPUT_INVALID"
    assert "citations: [] should be non-empty" in broken["text"]
    assert [e["repairs_left"] for e in invalid if e["agent"] == "broken"] == [1, 0]
    assert len([r for r in requests if who(r) == "broken"]) == 2

    # the schema went out natively for the structured agents, never for the boss
    for request in requests:
        if who(request) == "boss":
            assert "response_format" not in request.body and "tool_choice" not in request.body
        else:
            assert_native(request)
    assert evs[-1]["type"] == "run_end" and evs[-1]["status"] == "completed"
    shown = run_cli(["show", str(run_dir)]).stdout
    assert "answer does not match output_schema (2 repair(s) left)" in shown


@pytest.mark.parametrize("provider", WIRES)
def test_workflow_json_output_and_a_failing_top_agent(tmp_path: Path, provider: str) -> None:
    project(tmp_path)
    with WireServer(responder) as server:
        code, out, run_dir = run(tmp_path, server, provider, "direct.yaml")
        assert code == 0, out
        assert json.loads((run_dir / "out" / "citations.json").read_text()) == GOOD
        assert "output: runs/direct/out/citations.json" in out

        code, out, run_dir = run(tmp_path, server, provider, "fails.yaml")
    assert code == 1, out
    assert (
        "error: agent 'broken': its final answer does not match its output_schema after 1 repair turn" in out
    )
    assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"


@pytest.mark.parametrize("provider", WIRES)
def test_an_answer_nested_thousands_deep_gets_a_repair_turn(tmp_path: Path, provider: str) -> None:
    """JSON arrays 5,000 levels deep (the answer's text on OpenAI, the final_answer call's input on
    Anthropic) had broken the stack: an internal error. It is an answer that is not valid JSON,
    and the repair turn gets the agent's good answer."""
    project(tmp_path)
    deep = "[" * 5000 + "]" * 5000

    def nested_first(request: WireRequest) -> Reply:
        if request.assistant_turns > 0:
            return answer(request, GOOD)
        if request.api == "anthropic":
            return Reply(tool_calls=[ToolCallSpec("final_answer", '{"citations": ' + deep + "}")])
        return Reply(text=deep)

    with WireServer(nested_first) as server:
        code, out, run_dir = run(tmp_path, server, provider, "direct.yaml", "--stream")
    assert code == 0, out
    (invalid,) = [e for e in events(run_dir) if e["type"] == "output_invalid"]
    assert "nested more than 64 levels deep" in invalid["problem"]
    assert json.loads((run_dir / "out" / "citations.json").read_text()) == GOOD


def test_instructions_instead_of_native_output(tmp_path: Path) -> None:
    """`tool_calling: react` and `structured_output: instructions` put the schema in the system
    prompt (no response_format), and the answer is still validated."""
    project(tmp_path)
    models = {
        "react": {"provider": "openai", "model": "m", "tool_calling": "react"},
        "plain": {"provider": "openai", "model": "m", "structured_output": "instructions"},
    }
    for name in models:
        wf = workflow(name=f"wf_{name}", models=models, default_model=name)
        wf["steps"] = [{"agent": "good", "task": "Cite."}]
        write_files(tmp_path, {f"wf_{name}.yaml": wf})

    def text_model(request: WireRequest) -> Reply:
        if request.assistant_turns == 0:
            return Reply(text='Thought: I know.\nFinal Answer: ```json\n{"citations": "one"}\n```')
        return Reply(text="Thought: fixed.\nFinal Answer: " + json.dumps(GOOD))

    env = {"OPENAI_API_KEY": "test-key-struct", "FLOWRUN_RETRY_BASE_S": "0.01"}
    with WireServer(text_model) as server:
        for name in models:
            proc = run_cli(
                [f"wf_{name}.yaml", "--run-id", name],
                cwd=tmp_path,
                env={**env, "OPENAI_BASE_URL": server.openai_base_url},
            )
            assert proc.returncode == 0, proc.stdout + proc.stderr
        requests = server.requests
    assert len(requests) == 4
    for request in requests:
        assert "response_format" not in request.body
        assert "## Final answer format" in request.system and '"minItems":1' in request.system
    for name in models:
        evs = events(tmp_path / "runs" / name)
        (problem,) = [e["problem"] for e in evs if e["type"] == "output_invalid"]
        assert "citations: 'one' is not of type 'array'" in problem
        end = next(e for e in evs if e["type"] == "run_end")
        assert end["status"] == "completed" and json.loads(end["message"]) == GOOD


def test_dry_run_answers_match_the_schema(tmp_path: Path) -> None:
    project(tmp_path)
    proc = run_cli(["direct.yaml", "--dry-run", "--run-id", "d"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    written = json.loads((tmp_path / "runs" / "d" / "out" / "citations.json").read_text())
    assert len(written["citations"]) == 1 and set(written["citations"][0]) == {"source", "claim"}


def test_validate_checks_output_schemas(tmp_path: Path) -> None:
    project(tmp_path)
    (tmp_path / "schemas" / "broken.yaml").write_text("type: object\nproperties: [\n")
    (tmp_path / "schemas" / "list.json").write_text('{"type": "array"}')
    bad = {
        "bad_type.yaml": agent("bad_type", output_schema={"type": "objekt"}),
        "missing.yaml": agent("missing", output_schema="nope.json"),
        "syntax.yaml": agent("syntax", output_schema="broken.yaml"),
        "root.yaml": agent("root", output_schema="list.json"),
        "escape.yaml": agent("escape", output_schema="../x.json"),
        "repairs.yaml": agent("repairs", output_schema=SCHEMA, output_repairs=11),
    }
    write_files(tmp_path / "agents.d", bad)
    tools = ["good", *(n.removesuffix(".yaml") for n in bad)]
    write_files(tmp_path, {"agents.d/boss.yaml": agent("boss", tools=tools)})
    proc = run_cli(["validate", ".", "--format", "json"], cwd=tmp_path)
    assert proc.returncode == 1
    found = {(Path(d["file"]).name, d["code"]) for d in json.loads(proc.stdout)["diagnostics"]}
    assert ("bad_type.yaml", "bad-schema") in found
    assert ("missing.yaml", "missing-schema") in found
    assert ("broken.yaml", "yaml-syntax") in found
    assert ("list.json", "bad-schema") in found
    assert ("escape.yaml", "bad-path") in found
    assert ("repairs.yaml", "schema") in found
    text = run_cli(["validate", "agents.d/bad_type.yaml"], cwd=tmp_path).stdout
    assert "agents.d/bad_type.yaml:" in text and "invalid JSON Schema" in text


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('Here it is: {"a": 1} hope that helps', {"a": 1}),
        ("  [1, 2]  ", [1, 2]),
    ],
)
def test_answers_are_found_around_fences_and_prose(text: str, value: Any) -> None:
    from flowrun.runtime.loop.structured import parse_answer

    assert parse_answer(text) == (value, None)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("[" * 5000 + "]" * 5000, "nested more than 64 levels deep"),
        ("Here: " + "[" * 5000 + "]" * 5000, "nested more than 64 levels deep"),
        ("[" * 65 + "]" * 65, "nested more than 64 levels deep"),
        ("[" + "9" * 5000 + "]", "a number has more than 4300 digits"),
        ("Here: [" + "9" * 5000 + "]", "a number has more than 4300 digits"),
    ],
    ids=["deep", "deep-in-prose", "65-levels", "long-number", "long-number-in-prose"],
)
def test_answers_no_code_can_walk_are_not_valid_json(text: str, why: str) -> None:
    from flowrun.runtime.loop.structured import parse_answer

    value, problem = parse_answer(text)
    assert value is None and problem is not None and "is not valid JSON" in problem and why in problem


def test_strict_mode_only_for_closed_schemas() -> None:
    from flowrun.providers.structured import openai_response_format

    assert openai_response_format("a", SCHEMA)["json_schema"]["strict"] is True
    open_schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    assert openai_response_format("a b", open_schema)["json_schema"] == {
        "name": "a_b",
        "schema": open_schema,
        "strict": False,
    }

    def closed(**properties: Any) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": properties,
            "required": list(properties),
            "additionalProperties": False,
        }

    # keywords strict mode refuses (a 400) turn strict off; a property named like one does not
    one_of = closed(x={"oneOf": [{"type": "string"}, {"type": "integer"}]})
    unique = closed(tags={"type": "array", "items": {"type": "string"}, "uniqueItems": True})
    named = closed(contains={"type": "string"}, **{"not": closed(y={"type": "integer"})})
    nested_defs = {**closed(a={"$ref": "#/$defs/a"}), "$defs": {"a": closed(b={"type": "string"})}}
    assert [
        openai_response_format("a", s)["json_schema"]["strict"] for s in (one_of, unique, named, nested_defs)
    ] == [False, False, True, True]
    assert (
        openai_response_format("a", {"anyOf": [closed(a={"type": "string"})]})["json_schema"]["strict"]
        is False
    )


def test_an_edited_schema_file_is_checked_again(tmp_path: Path) -> None:
    """validate's cache of checked projects covers schemas/: an edit is never answered from it."""
    project(tmp_path)
    env = {"FLOWRUN_CACHE_DIR": str(tmp_path / "cache")}
    for _ in range(2):  # the second run is answered from the cache
        proc = run_cli(["validate", "calls.yaml"], cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stdout
    (tmp_path / "schemas" / "citations.schema.json").write_text('{"type": "objekt"}')
    proc = run_cli(["validate", "calls.yaml"], cwd=tmp_path, env=env)
    assert proc.returncode == 1 and "invalid JSON Schema" in proc.stdout


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
def test_an_openai_refusal_is_the_answer_not_an_empty_one(tmp_path: Path, stream: bool) -> None:
    """A structured-output refusal (`refusal`, no content) is not retried as an empty answer: it
    is the agent's answer, which its schema check turns into a repair turn, then a failure that
    quotes it."""
    project(tmp_path)

    def refuse(request: WireRequest) -> Reply:
        return Reply(refusal="I can't help with that request.")

    with WireServer(refuse) as server:
        code, out, run_dir = run(
            tmp_path, server, "openai", "fails.yaml", "--stream" if stream else "--no-stream"
        )
        requests = server.requests
    assert code == 1, out
    assert len(requests) == 2  # the answer and one repair turn: no retries
    evs = events(run_dir)
    problems = [e["problem"] for e in evs if e["type"] == "output_invalid"]
    refused = "(the model refused) I can't help with that request."
    assert problems == [f"the answer holds no JSON value (it reads: {refused!r})"] * 2
    assert not any(e["type"] == "model_retry" for e in evs)
    assert "after 1 repair turn: the answer holds no JSON value" in out


def test_validate_reports_every_schema_error_and_dangling_refs(tmp_path: Path) -> None:
    """Every way a schema is not a usable JSON Schema, each at its own line: errors of the
    schema's own draft (`$schema`), `$ref`s that do not resolve inside it; a run refuses such a
    schema before it starts (never a crash while checking an answer)."""
    project(tmp_path)
    files = {
        "agents.d/many.yaml": agent(
            "many",
            output_schema={
                "type": "object",
                "properties": {"a": {"type": "strin"}, "b": {"type": "array", "minItems": -1}},
            },
        ),
        "agents.d/dangling.yaml": agent(
            "dangling",
            output_schema={
                "type": "object",
                "$defs": {"source": {"type": "string"}},
                "properties": {"a": {"$ref": "#/$defs/source"}, "b": {"$ref": "#/$defs/sorce"}},
            },
        ),
        "schemas/remote.json": json.dumps(
            {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}}, indent=2
        ),
        "agents.d/remote.yaml": agent("remote", output_schema="remote.json"),
        # draft-07 (its `definitions`) is checked as draft-07, and is fine
        "agents.d/draft7.yaml": agent(
            "draft7",
            output_schema={
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object",
                "definitions": {"s": {"type": "string"}},
                "properties": {"a": {"$ref": "#/definitions/s"}},
            },
        ),
        "dangling.yaml": workflow(CLAUDE, name="dangling", entry="dangling"),
    }
    write_files(tmp_path, files)
    tools = ["good", "many", "dangling", "remote", "draft7"]
    write_files(tmp_path, {"agents.d/boss.yaml": agent("boss", tools=tools)})
    proc = run_cli(["validate", ".", "--format", "json"], cwd=tmp_path)
    assert proc.returncode == 1
    found = [
        (Path(d["file"]).name, d["line"], d["path"], d["message"])
        for d in json.loads(proc.stdout)["diagnostics"]
        if d["code"] == "bad-schema"
    ]
    lines = (tmp_path / "agents.d" / "many.yaml").read_text().splitlines()
    by_file: dict[str, list[tuple[int, str, str]]] = {}
    for name, line, path, message in found:
        by_file.setdefault(name, []).append((line, path, message))
    assert [p for _, p, _ in by_file["many.yaml"]] == [
        "output_schema.properties.a.type",
        "output_schema.properties.b.minItems",
    ]
    assert [lines[line - 1].strip() for line, _, _ in by_file["many.yaml"]] == ["type: strin", "minItems: -1"]
    ((_, path, message),) = by_file["dangling.yaml"]
    assert path == "output_schema.properties.b.$ref"
    assert "$ref '#/$defs/sorce' does not resolve inside the schema" in message
    ((line, path, message),) = by_file["remote.json"]
    assert (line, path) == (5, "properties.a.$ref") and "https://example.com/a.json" in message
    assert "draft7.yaml" not in by_file

    proc = run_cli(["dangling.yaml", "--dry-run"], cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "nothing was run" in proc.stderr
    assert "agents.d/dangling.yaml:" in proc.stderr and "does not resolve" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_structured_answer_ends_the_agent_even_without_stop_on_text(tmp_path: Path) -> None:
    """`stop.on_text: false` makes a plain answer a 'continue'; with an output_schema, an answer
    without tool calls is the final answer, checked (and repaired) like any other."""
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    worker = {"prompt": "Work.", "tools": ["write_file"], "stop": {"on_text": False}, "output_schema": schema}
    replies = [
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "n.md", "content": "x"}}]},
        {"text": '{"b": 1}'},
        {"text": '{"a": "done"}'},
    ]
    wf = workflow(name="w", entry="worker", output="out.json")
    write_project(
        tmp_path, wf, {"worker": worker}, {"script.yaml": script_manifest({"worker": replies})}, name="w.yaml"
    )
    proc = run_cli(["w.yaml", "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads((tmp_path / "runs" / "r" / "out.json").read_text()) == {"a": "done"}
    evs = events(tmp_path / "runs" / "r")
    problems = [e["problem"] for e in evs if e["type"] == "output_invalid"]
    assert problems == ["(root): 'a' is a required property"]
