"""The answerer project that bench/batch.py, bench/eval.py and bench/many_runs.py share: one
agent that writes answer.md (a write_file call) and then answers, two model calls of `latency`
seconds each, against the scripted wire server (tests/support/wire_server.py) in a process of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WORKFLOW = """\
version: 1
kind: workflow
name: NAME
inputs:
  question: {description: the question}
models:
  m: {provider: openai-compatible, base_url: BASE_URL, model: m, stream: false}
default_model: m
entry: answerer
task: "Question: {{ question }}"
"""
AGENT = "version: 1\nkind: agent\nname: answerer\nprompt: You answer questions.\ntools: [write_file]\n"


def start_server(
    folder: Path, latency: float, more: Mapping[str, tuple[str, list[dict[str, object]]]] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """The wire server answering the answerer (and `more` agents: name -> (prompt start, replies));
    its base URL."""
    call = {"name": "write_file", "arguments": {"path": "answer.md", "content": "42\n"}}
    agents: dict[str, object] = {
        "answerer": [{"tool_calls": [call], "delay_s": latency}, {"text": "answered", "delay_s": latency}]
    }
    match = {"answerer": "You answer questions"}
    for name, (prompt, replies) in (more or {}).items():
        agents[name], match[name] = replies, prompt
    path = folder / "script.json"
    path.write_text(json.dumps({"agents": agents, "match": match}))
    server = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "support" / "wire_server.py"), "--script", str(path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def write_project(workflow: Path, url: str, name: str = "bench", output: bool = True) -> Path:
    """The workflow file (with `output: answer.md` when `output`) and its agent beside it."""
    (workflow.parent / "agents.d").mkdir(parents=True, exist_ok=True)
    (workflow.parent / "agents.d" / "answerer.yaml").write_text(AGENT)
    text = WORKFLOW.replace("NAME", name).replace("BASE_URL", url + "/v1")
    workflow.write_text(text + ("output: answer.md\n" if output else ""))
    return workflow
