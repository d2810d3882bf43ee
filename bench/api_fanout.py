"""The Python API against a plain `openai` SDK loop doing the same 20-call fan-out
(bench/fanout_setup.py, bench/sdk_fanout.py), in one process, warm: both have made a run before
(flowrun: the loaded workflow, its SDK client and connection, compiled prompts; the SDK loop: its
client and connection), then each run is timed, alternating.

1. At zero model latency: what each side costs per run, and flowrun / SDK loop (target <= 1.2).
2. At 200 ms model latency: wall time / ideal (8 calls on the longest chain x latency) for both
   (target for flowrun <= 1.05).

Run: python bench/api_fanout.py [--runs 10]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

import sdk_fanout
from fanout_setup import CHAIN, LATENCY_S, MODEL_CALLS, make_project, script
from wire_server import WireServer

import flowrun

TARGET_RATIO = 1.2
TARGET_IDEAL = 1.05


async def measure(workflow: Path, runs_dir: Path, runs: int) -> tuple[list[float], list[float]]:
    """(flowrun run times, SDK loop times), alternating, after one warm-up run of each."""
    wf = flowrun.load(workflow)
    client = sdk_fanout.client()
    flowrun_times: list[float] = []
    sdk_times: list[float] = []
    try:
        for i in range(runs + 1):
            start = time.perf_counter()
            result = await wf.run({}, runs_dir=runs_dir)
            elapsed = time.perf_counter() - start
            if not result.ok:
                raise SystemExit(f"the flowrun run ended {result.status}: {result.message}")
            start = time.perf_counter()
            await sdk_fanout.fanout(client)
            if i:  # the first pair warms up
                flowrun_times.append(elapsed)
                sdk_times.append(time.perf_counter() - start)
    finally:
        await client.close()
    return flowrun_times, sdk_times


def phase(latency: float, runs: int, folder: Path) -> tuple[list[float], list[float]]:
    with WireServer(script(latency)) as server:
        os.environ["OPENAI_BASE_URL"] = server.openai_base_url
        workflow = make_project(folder / f"project-{latency}")
        times = asyncio.run(measure(workflow, folder / f"runs-{latency}", runs))
        calls = len(server.requests) / (2 * (runs + 1))
    if calls != MODEL_CALLS:
        raise SystemExit(f"expected {MODEL_CALLS} model calls per run, got {calls}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    os.environ["BENCH_KEY"] = "bench-key"
    with tempfile.TemporaryDirectory() as tmp:
        fast_flowrun, fast_sdk = phase(0.0, args.runs, Path(tmp))
        slow_flowrun, slow_sdk = phase(LATENCY_S, args.runs, Path(tmp))
    ratio = statistics.median(f / s for f, s in zip(fast_flowrun, fast_sdk, strict=True))
    print(f"API fan-out, warm, in one process: {MODEL_CALLS} model calls per run, {args.runs} runs each")
    print(
        f"at 0 ms latency:   flowrun {statistics.median(fast_flowrun) * 1000:.1f} ms, "
        f"SDK loop {statistics.median(fast_sdk) * 1000:.1f} ms per run"
    )
    print(
        f"flowrun / SDK loop = {ratio:.2f} (target <= {TARGET_RATIO}) "
        f"{'OK' if ratio <= TARGET_RATIO else 'ABOVE TARGET'}"
    )
    ideal = CHAIN * LATENCY_S
    wall = statistics.median(slow_flowrun)
    print(
        f"at {LATENCY_S * 1000:.0f} ms latency: flowrun {wall:.3f} s, SDK loop "
        f"{statistics.median(slow_sdk):.3f} s, ideal {ideal:.2f} s ({CHAIN} calls on the longest chain)"
    )
    print(
        f"flowrun wall / ideal = {wall / ideal:.3f} (target <= {TARGET_IDEAL}) "
        f"{'OK' if wall / ideal <= TARGET_IDEAL else 'ABOVE TARGET'}; "
        f"SDK loop {statistics.median(slow_sdk) / ideal:.3f}"
    )


if __name__ == "__main__":
    main()
