"""Wall time of a fan-out against its ideal: does flowrun keep sub-agents really concurrent?

An orchestrator calls a helper agent 3 times in one step; each helper makes 5 model calls (4 with
a list_directory call, then its answer); then the orchestrator makes its final call. Every model
call takes 200 ms at the scripted wire server (tests/support/wire_server.py, Reply.delay_s), reached
through the real SDK. The longest chain of model calls is orchestrator 1 + helper 5 + orchestrator
1 = 7 calls, so the ideal wall time is 7 x 0.2 s = 1.4 s; everything above it is flowrun (and SDK)
overhead or lost concurrency. Target: wall / ideal <= 1.15.

Run: python bench/fanout.py [--api openai|anthropic] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

sys.path.insert(0, str(REPO / "bench"))

from fanout_setup import BOSS, HELPER  # noqa: E402
from support.wire_server import Reply, Script, ToolCallSpec, WireServer  # noqa: E402

LATENCY_S = 0.2
HELPERS = 3
HELPER_CALLS = 5
IDEAL_S = (1 + HELPER_CALLS + 1) * LATENCY_S
TARGET = 1.15

WORKFLOW = """\
version: 1
kind: workflow
name: fanout
models:
  openai: {provider: openai, model: bench, api_key_env: BENCH_KEY}
  anthropic: {provider: anthropic, model: bench, api_key_env: BENCH_KEY}
default_model: MODEL
entry: boss
"""


def make_project(folder: Path, api: str) -> Path:
    (folder / "agents.d").mkdir(parents=True, exist_ok=True)
    (folder / "fanout.yaml").write_text(WORKFLOW.replace("MODEL", api))
    (folder / "agents.d" / "boss.yaml").write_text(BOSS)
    (folder / "agents.d" / "helper.yaml").write_text(HELPER)
    return folder / "fanout.yaml"


def script() -> Script:
    helpers = [ToolCallSpec("helper", {"task": f"part {i}"}) for i in range(HELPERS)]
    listing = Reply(tool_calls=[ToolCallSpec("list_directory", {"path": "."})], delay_s=LATENCY_S)
    return Script(
        {
            "boss": [Reply(tool_calls=helpers, delay_s=LATENCY_S), Reply(text="done", delay_s=LATENCY_S)],
            "helper": [*[listing] * (HELPER_CALLS - 1), Reply(text="listed", delay_s=LATENCY_S)],
        },
        {"boss": "You are the boss", "helper": "You are a helper"},
    )


def run_once(workflow: Path, runs: Path) -> tuple[float, int]:
    """(wall seconds from run_start to run_end, model calls) of one in-process run."""
    import flowrun

    result = flowrun.load(workflow).run_sync({}, run_dir=runs / f"r{time.time_ns()}")
    if result.status != "completed":
        raise SystemExit(f"bench run failed: {result.status}: {result.message}")
    events = [json.loads(line) for line in (result.run_dir / "events.jsonl").read_text().splitlines()]
    calls = sum(e["type"] == "model_response" for e in events)
    return events[-1]["t"] - events[0]["t"], calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api", choices=["openai", "anthropic"], default="openai")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.environ["BENCH_KEY"] = "bench-key"
    walls = []
    with tempfile.TemporaryDirectory() as tmp, WireServer(script()) as server:
        os.environ["OPENAI_BASE_URL"] = server.openai_base_url
        os.environ["ANTHROPIC_BASE_URL"] = server.anthropic_base_url
        workflow = make_project(Path(tmp) / "p", args.api)
        for _ in range(args.runs):
            wall, calls = run_once(workflow, Path(tmp) / "runs")
            walls.append(wall)
    expected_calls = 2 + HELPERS * HELPER_CALLS
    if calls != expected_calls:
        raise SystemExit(f"expected {expected_calls} model calls, the run made {calls}")
    wall = statistics.median(walls)
    print(
        f"fan-out: {HELPERS} helpers x {HELPER_CALLS} model calls at {LATENCY_S * 1000:.0f} ms each "
        f"({calls} calls, {args.api} wire format, median of {args.runs} runs)"
    )
    print(f"wall time {wall:.3f} s, ideal {IDEAL_S:.1f} s (7 calls on the longest chain)")
    print(f"wall/ideal = {wall / IDEAL_S:.3f} (target <= {TARGET})")


if __name__ == "__main__":
    main()
