"""The fan-out scenario the benches share (the issue's): an orchestrator ("boss") calls a helper
agent 3 times in one step; each helper makes 5 tool steps (a list_directory call each) and then
answers, 6 model calls; then the boss answers: 2 + 3 x 6 = 20 model calls. Every call is answered
by the scripted wire server (tests/support/wire_server.py) after `latency_s`, through the real `openai`
SDK. The longest chain is boss 1 + helper 6 + boss 1 = 8 calls: the ideal wall time of one run is
8 x latency.

bench/sdk_fanout.py is the same work as a plain script with the `openai` SDK and no flowrun."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from support.wire_server import Reply, Script, ToolCallSpec  # noqa: E402

LATENCY_S = 0.2
HELPERS = 3
HELPER_CALLS = 6
MODEL_CALLS = 2 + HELPERS * HELPER_CALLS
CHAIN = 1 + HELPER_CALLS + 1  # model calls on the longest path

WORKFLOW = """\
version: 1
kind: workflow
name: fanout
models:
  bench: {provider: openai, model: bench, api_key_env: BENCH_KEY, stream: false}
default_model: bench
entry: boss
"""
BOSS = """\
version: 1
kind: agent
name: boss
prompt: You are the boss of the fan-out bench.
tools: [helper]
"""
HELPER = """\
version: 1
kind: agent
name: helper
description: Lists the folder a few times.
prompt: You are a helper of the fan-out bench.
max_steps: 10
tools: [list_directory]
"""


def make_project(folder: Path) -> Path:
    """The workflow and its two agents in `folder`; returns the workflow file."""
    (folder / "agents.d").mkdir(parents=True, exist_ok=True)
    (folder / "fanout.yaml").write_text(WORKFLOW)
    (folder / "agents.d" / "boss.yaml").write_text(BOSS)
    (folder / "agents.d" / "helper.yaml").write_text(HELPER)
    return folder / "fanout.yaml"


def script(latency_s: float = LATENCY_S) -> Script:
    helpers = [ToolCallSpec("helper", {"task": f"part {i}"}) for i in range(HELPERS)]
    listing = Reply(tool_calls=[ToolCallSpec("list_directory", {"path": "."})], delay_s=latency_s)
    return Script(
        {
            "boss": [Reply(tool_calls=helpers, delay_s=latency_s), Reply(text="done", delay_s=latency_s)],
            "helper": [*[listing] * (HELPER_CALLS - 1), Reply(text="listed", delay_s=latency_s)],
        },
        {"boss": "You are the boss", "helper": "You are a helper"},
    )


SERVE = """\
import sys, threading
sys.path[:0] = [{bench!r}, {tests!r}]
from fanout_setup import script
from support.wire_server import WireServer
server = WireServer(script(float(sys.argv[1])))
print(server.openai_base_url, flush=True)
sys.stdin.read()  # until the bench closes our stdin
server.stop()
"""


def server_process(latency_s: float) -> tuple[subprocess.Popen[str], str]:
    """The scripted server in a process of its own (a model server is not in the client's
    process: it takes no time from the client's interpreter); returns it and its OpenAI URL.
    Close its stdin to stop it."""
    code = SERVE.format(bench=str(Path(__file__).resolve().parent), tests=str(REPO / "tests"))
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(latency_s)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()
