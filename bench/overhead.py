"""flowrun's own overhead per model step, and the wall/ideal ratio of concurrent tool calls.

1. Engine overhead: one agent makes STEPS model calls, each answered at zero latency by the
   scripted wire server (tests/support/wire_server.py) through the real openai SDK. From the event log:
   (run time - time inside model calls) / model calls, i.e. what flowrun itself adds per step
   (prompt, history, tool validation and dispatch, events). Target: < 2 ms. For reference, the
   time per model call is compared with a bare-SDK loop making the same calls.
2. Concurrency: three tool calls in one step, each sleeping 0.5 s (a real subprocess); ratio of
   the step's tool wall time to 0.5 s. Target: <= 1.1.

Run: python bench/overhead.py [--steps 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from support.wire_server import Reply, Script, ToolCallSpec, WireServer  # noqa: E402

WORKFLOW = """\
version: 1
kind: workflow
name: bench
models:
  m: {provider: openai, model: bench, api_key_env: BENCH_KEY, stream: false}
  s: {provider: scripted, model: s, script: script.yaml}
default_model: m
entry: looper
"""
LOOPER = """\
version: 1
kind: agent
name: looper
prompt: You are the looper.
max_steps: 10000
tools: [noop, nap]
"""
NOOP = """\
version: 1
kind: tool
name: noop
description: Does nothing.
parameters: {type: object, properties: {n: {type: integer}}}
implementation: {command: ["true"]}  # never runs: every call is refused by its schema
"""
NAP = """\
version: 1
kind: tool
name: nap
description: Sleep.
parameters: {type: object, properties: {seconds: {type: number}}, required: [seconds]}
implementation: {command: ["sleep", "{{ seconds }}"]}
"""


def make_project(folder: Path, model: str) -> Path:
    (folder / "agents.d").mkdir(parents=True, exist_ok=True)
    (folder / "tools.d").mkdir(exist_ok=True)
    (folder / "wf.yaml").write_text(WORKFLOW.replace("default_model: m", f"default_model: {model}"))
    (folder / "agents.d" / "looper.yaml").write_text(LOOPER)
    (folder / "tools.d" / "noop.yaml").write_text(NOOP)
    (folder / "tools.d" / "nap.yaml").write_text(NAP)
    return folder / "wf.yaml"


def own_time_per_step(run_dir: Path) -> tuple[float, float, int]:
    """(engine seconds per step, model seconds per call, calls) from a run's event log."""
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    model = sum(e["latency_ms"] for e in events if e["type"] == "model_response") / 1000
    calls = sum(e["type"] == "model_response" for e in events)
    total = events[-1]["t"] - events[0]["t"]
    return (total - model) / calls, model / calls, calls


def run_flowrun(workflow: Path, runs: Path) -> Path:
    import flowrun

    result = flowrun.load(workflow).run_sync({}, run_dir=runs / f"r{time.time_ns()}")
    assert result.status == "completed", result
    return result.run_dir


def list_tool(steps: int) -> Script:
    # a tool call the engine rejects by schema: exercises validation without tool I/O
    # (each with its own arguments, or the loop guard would stop the agent)
    calls = [Reply(tool_calls=[ToolCallSpec("noop", {"n": f"not-a-number {i}"})]) for i in range(steps)]
    return Script({"looper": [*calls, Reply(text="done")]}, {"looper": "You are the looper"})


async def bare_sdk(base_url: str, steps: int) -> float:
    import openai

    client = openai.AsyncOpenAI(api_key="k", base_url=base_url, max_retries=0)
    tools = [
        {
            "type": "function",
            "function": {"name": "noop", "description": "x", "parameters": {"type": "object"}},
        }
    ]
    messages: list[dict] = [
        {"role": "system", "content": "You are the looper."},
        {"role": "user", "content": "Begin."},
    ]
    start = time.perf_counter()
    for _ in range(steps + 1):
        resp = await client.chat.completions.create(
            model="bench", messages=messages, tools=tools, max_tokens=4096
        )
        msg = resp.choices[0].message
        if not msg.tool_calls:
            break
        messages.append(msg.model_dump(exclude_none=True))
        for call in msg.tool_calls:
            json.loads(call.function.arguments)
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": "[error INVALID_PARAM] n: bad"}
            )
    elapsed = time.perf_counter() - start
    await client.close()
    return elapsed


def engine_overhead(steps: int, tmp: Path) -> None:
    workflow = make_project(tmp / "p", "m")
    os.environ["BENCH_KEY"] = "k"
    own, model, bare = [], [], []
    for _ in range(3):
        with WireServer(list_tool(steps)) as server:
            os.environ["OPENAI_BASE_URL"] = server.openai_base_url
            engine_s, model_s, calls = own_time_per_step(run_flowrun(workflow, tmp / "runs"))
            own.append(engine_s)
            model.append(model_s)
            bare.append(asyncio.run(bare_sdk(server.openai_base_url, steps)) / calls)
    print(f"model steps per run: {calls} (medians of 3 runs)")
    print(f"engine overhead per model step: {statistics.median(own) * 1e6:.0f} us (target < 2000 us)")
    print(
        f"time per model call: {statistics.median(model) * 1e3:.2f} ms through flowrun's provider, "
        f"{statistics.median(bare) * 1e3:.2f} ms in a bare SDK loop (SDK + loopback server)"
    )


def concurrency_ratio(tmp: Path) -> None:
    import yaml

    workflow = make_project(tmp / "c", "s")
    naps = [{"name": "nap", "arguments": {"seconds": 0.5}} for _ in range(3)]
    script = {"version": 1, "kind": "script", "agents": {"looper": [{"tool_calls": naps}, {"text": "done"}]}}
    (workflow.parent / "script.yaml").write_text(yaml.safe_dump(script))
    ratios = []
    for _ in range(3):
        run_dir = run_flowrun(workflow, tmp / "runs")
        events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
        starts = [e["t"] for e in events if e["type"] == "tool_call"]
        ends = [e["t"] for e in events if e["type"] == "tool_result"]
        ratios.append((max(ends) - min(starts)) / 0.5)
    print(f"3 concurrent tool calls of 0.5 s: wall/ideal = {statistics.median(ratios):.3f} (target <= 1.1)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        engine_overhead(args.steps, Path(tmp))
        concurrency_ratio(Path(tmp))


if __name__ == "__main__":
    main()
