"""pydantic-ai AgentSpec files and Microsoft Agent Framework `kind: Prompt` agents run as they
are, one agent each, through the CLI and `flowrun.load` against the scripted model server over
both wire formats: the model and its settings, the instructions with their `{{var}}`s as inputs,
the output schema, the capabilities and tools flowrun has; what flowrun cannot run (a capability
or function tool in the user's code, a MAF workflow) is an error at its line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support.cli import run_cli
from support.env import WIRES, model_env, point_sdks
from support.project import write_files
from support.wire_server import Reply, Script, WireServer

import flowrun

SPEC = """\
model: {wire}:m
name: helper
instructions:
  - "You are helping {{{{user_name}}}}."
  - Always include a confidence score.
deps_schema:
  type: object
  properties:
    user_name: {{type: string}}
  required: [user_name]
model_settings:
  max_tokens: 700
output_schema:
  type: object
  properties:
    answer: {{type: string}}
    confidence: {{type: number}}
  required: [answer, confidence]
capabilities:
  - WebSearch
  - WebFetch
"""


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_pydantic_ai_spec_runs_with_its_deps_as_inputs(tmp_path: Path, wire: str, suffix: str) -> None:
    spec = SPEC.format(wire=wire)
    if suffix == ".json":  # as pydantic-ai's `to_file` writes JSON: with its `$schema`
        spec = json.dumps({"$schema": "./agent_schema.json", **yaml.safe_load(spec)}, indent=2)
    write_files(tmp_path, {f"agent{suffix}": spec})
    script = Script({"helper": [Reply('{"answer": "42", "confidence": 0.9}')]}, {"helper": "You are helping"})
    with WireServer(script) as server:
        args = [f"agent{suffix}", "--message", "the answer?", "--user_name", "Ada", "--run-id", "r"]
        proc = run_cli(args, cwd=tmp_path, env=model_env(server, wire))
        (request,) = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert request.system.startswith("You are helping Ada.\n\nAlways include a confidence score.")
    assert request.last_user_text == "the answer?" and request.body["max_tokens"] == 700
    assert {"web_search", "visit_url"} <= set(request.tool_names)
    answer = json.loads((tmp_path / "runs" / "r" / "pydantic-ai" / "helper.json").read_text())
    assert answer == {"answer": "42", "confidence": 0.9}


PROMPT = """\
kind: Prompt
name: Assistant
description: Helpful assistant
instructions: You answer in the language the user asks for.
model:
    id: m
    provider: OpenAI
    apiType: Chat
    options:
        maxOutputTokens: 600
    connection:
        kind: key
        apiKey: =Env.OPENAI_API_KEY
outputSchema:
    properties:
        language:
            kind: string
            required: true
        answer:
            kind: string
            required: true
"""


def test_a_maf_prompt_agent_runs_through_the_python_api(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_files(tmp_path, {"Assistant.yaml": PROMPT}) / "Assistant.yaml"
    script = Script(
        {"a": [Reply('{"language": "fr", "answer": "oui"}')]}, {"a": "You answer in the language"}
    )
    with WireServer(script) as server:
        point_sdks(monkeypatch, server, "openai")
        wf = flowrun.load(path)
        result = wf.run_sync({"message": "yes, in French"}, runs_dir=tmp_path / "runs", run_id="r")
        (request,) = server.requests
    assert result.status == "completed", result
    assert request.system == "You answer in the language the user asks for."
    assert request.body["max_tokens"] == 600
    schema = request.body["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["language", "answer"]
    answer = json.loads((tmp_path / "runs" / "r" / "maf" / "Assistant.json").read_text())
    assert answer == {"language": "fr", "answer": "oui"}


def test_what_flowrun_cannot_run_is_an_error_at_its_line(tmp_path: Path) -> None:
    files = {
        "custom.yaml": "model: openai:gpt-4o\ninstructions: Hi.\n"
        "capabilities:\n  - Pixeltable: ['hr.handbook']\n",
        "fragment.yaml": "instructions: You assist {{name}}.\n",
        "weather.yaml": PROMPT
        + "tools:\n  - kind: function\n    name: GetWeather\n    bindings:\n      get_weather: get_weather\n",
        "flow.yaml": "kind: Workflow\ntrigger:\n  kind: OnConversationStart\n  actions: []\n",
    }
    write_files(tmp_path, files)
    proc = run_cli(["validate", "."], cwd=tmp_path)
    assert proc.returncode == 1
    out = proc.stdout
    assert "custom.yaml:4:5: error[python-capability]: capability 'Pixeltable' is registered in Python" in out
    assert "fragment.yaml:1:1: error[missing-key]: fragment: the AgentSpec names no `model`" in out
    assert (
        "weather.yaml:23:5: error[python-tool]: tool 'GetWeather': "
        "a function tool is bound to the host's own code" in out
    )
    assert "flow.yaml:1:7: error[unsupported]: an Agent Framework workflow (`kind: Workflow`)" in out
