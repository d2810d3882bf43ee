"""The flowrun command line against a plain `openai` SDK script doing the same 20-call fan-out
(bench/fanout_setup.py), whole processes (start-up, the run, exit), on one scripted wire server.

Runs are timed in alternating pairs (flowrun first, then the script; then the other way round),
after one warm-up of each (the manifest check cache is warm, as on a user's second run). Printed:
the median of each, the median of the per-pair ratios and their spread.

Target: flowrun / SDK script <= 1.2.

Run: python bench/cli_fanout.py [--pairs 10] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fanout_setup import CHAIN, LATENCY_S, MODEL_CALLS, make_project, script
from wire_server import WireServer

TARGET = 1.2


def flowrun_command() -> list[str]:
    console = Path(sys.executable).parent / "flowrun"
    return [str(console)] if console.exists() else [sys.executable, "-m", "flowrun"]


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--latency", type=float, default=LATENCY_S, help="seconds per model call")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, WireServer(script(args.latency)) as server:
        folder = Path(tmp)
        workflow = make_project(folder / "project")
        sdk = Path(__file__).resolve().parent / "sdk_fanout.py"
        env = {**os.environ, "BENCH_KEY": "bench-key", "OPENAI_BASE_URL": server.openai_base_url}
        commands = {
            "flowrun": [*flowrun_command(), str(workflow), "-q", "--runs-dir", str(folder / "runs")],
            "sdk": [sys.executable, str(sdk)],
        }
        for argv in commands.values():  # warm-up: caches, page cache, the server's threads
            timed(argv, env, folder)
        calls_before = len(server.requests)
        times: dict[str, list[float]] = {"flowrun": [], "sdk": []}
        for i in range(args.pairs):
            order = ["flowrun", "sdk"] if i % 2 == 0 else ["sdk", "flowrun"]
            for name in order:
                times[name].append(timed(commands[name], env, folder))
        calls = (len(server.requests) - calls_before) / (2 * args.pairs)
    if calls != MODEL_CALLS:
        raise SystemExit(f"expected {MODEL_CALLS} model calls per run, got {calls}")
    ratios = [f / s for f, s in zip(times["flowrun"], times["sdk"], strict=True)]
    ratio = statistics.median(ratios)
    print(
        f"CLI fan-out: {MODEL_CALLS} model calls at {args.latency * 1000:.0f} ms each, "
        f"ideal run {CHAIN * args.latency:.2f} s; whole processes, {args.pairs} alternating pairs"
    )
    print(f"flowrun CLI   median {statistics.median(times['flowrun']):.3f} s")
    print(f"openai script median {statistics.median(times['sdk']):.3f} s")
    print(
        f"flowrun / SDK script = {ratio:.2f} (pairs {min(ratios):.2f}-{max(ratios):.2f}; "
        f"target <= {TARGET}) {'OK' if ratio <= TARGET else 'ABOVE TARGET'}"
    )


if __name__ == "__main__":
    main()
