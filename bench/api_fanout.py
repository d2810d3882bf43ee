"""The Python API against a plain `openai` SDK loop doing the same 20-call fan-out
(bench/fanout_setup.py, bench/sdk_fanout.py), in one process, warm: each side has made a run
before (flowrun: the loaded workflow, its SDK client and connections, compiled prompts; the SDK
loop: its client and connections), then the runs are timed in turn. The scripted server runs in
a process of its own, as a model server would.

The SDK loop is the SDK as a script uses it (`chat.completions.create`, the default httpx2
client). flowrun sends the same requests through the SDK's `client.post` and, when aiohttp is
installed, the SDK's aiohttp transport (providers/openai_provider.py, providers/clients.py), so
the same loop on that transport is timed too: the gap between flowrun and it is flowrun's own
work.

1. At zero model latency: wall and CPU time per run of each, and flowrun / SDK loop
   (target <= 1.2).
2. At 200 ms model latency: wall time / ideal (8 calls on the longest chain x latency) for each
   (target for flowrun <= 1.05).

Run: python bench/api_fanout.py [--runs 10]
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import sdk_fanout
from fanout_setup import CHAIN, LATENCY_S, MODEL_CALLS, make_project, server_process

import flowrun
from flowrun.providers.clients import http_transport

TARGET_RATIO = 1.2
TARGET_IDEAL = 1.05
Times = dict[str, list[tuple[float, float]]]  # side -> [(wall s, CPU s)] per run


async def measure(workflow: Path, runs_dir: Path, runs: int, aiohttp: bool) -> Times:
    """Each side's runs, in turn, after one warm-up run of each."""
    wf = flowrun.load(workflow)
    clients: dict[str, Any] = {"sdk": sdk_fanout.client()}
    if aiohttp:
        clients["sdk-aiohttp"] = sdk_fanout.client(aiohttp=True)

    async def flowrun_run() -> None:
        result = await wf.run({}, runs_dir=runs_dir)
        calls = sum(line["calls"] for line in result.usage["by_agent_model"])
        if not result.ok or calls != MODEL_CALLS:
            raise SystemExit(f"the flowrun run ended {result.status} after {calls} calls: {result.message}")

    sides: dict[str, Callable[[], Awaitable[Any]]] = {"flowrun": flowrun_run}
    for name, client in clients.items():
        sides[name] = lambda client=client: sdk_fanout.fanout(client)
    times: Times = {name: [] for name in sides}
    try:
        for i in range(runs + 1):
            for name, side in sides.items():
                wall, cpu = time.perf_counter(), time.process_time()
                await side()
                if i:  # the first round warms up
                    times[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    finally:
        for client in clients.values():
            await client.close()
    return times


def phase(latency: float, runs: int, folder: Path, aiohttp: bool) -> Times:
    server, url = server_process(latency)
    try:
        os.environ["OPENAI_BASE_URL"] = url
        workflow = make_project(folder / f"project-{latency}")
        return asyncio.run(measure(workflow, folder / f"runs-{latency}", runs, aiohttp))
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait()


def median(times: list[tuple[float, float]], which: int) -> float:
    return statistics.median(t[which] for t in times)


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    os.environ["BENCH_KEY"] = "bench-key"
    aiohttp = importlib.util.find_spec("aiohttp") is not None
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        fast = phase(0.0, args.runs, Path(tmp), aiohttp)
        slow = phase(LATENCY_S, args.runs, Path(tmp), aiohttp)
    after = os.getloadavg()[0]
    print(
        f"API fan-out, warm, in one process: {MODEL_CALLS} model calls per run, {args.runs} runs of each; "
        f"flowrun's HTTP client {http_transport()}; load average {load:.1f} before, {after:.1f} after"
    )
    print("at 0 ms latency, per run (median):")
    for name, runs in fast.items():
        print(f"  {name:<12} {median(runs, 0) * 1000:7.1f} ms wall {median(runs, 1) * 1000:7.1f} ms CPU")
    for name in [n for n in fast if n != "flowrun"]:
        wall = statistics.median(f[0] / s[0] for f, s in zip(fast["flowrun"], fast[name], strict=True))
        cpu = statistics.median(f[1] / s[1] for f, s in zip(fast["flowrun"], fast[name], strict=True))
        target = f" (target <= {TARGET_RATIO}) {'OK' if wall <= TARGET_RATIO else 'ABOVE TARGET'}"
        print(f"flowrun / {name} loop = {wall:.2f} wall, {cpu:.2f} CPU{target if name == 'sdk' else ''}")
    ideal = CHAIN * LATENCY_S
    print(f"at {LATENCY_S * 1000:.0f} ms latency: ideal {ideal:.2f} s ({CHAIN} calls on the longest chain)")
    for name, runs in slow.items():
        share = median(runs, 0) / ideal
        target = f" (target <= {TARGET_IDEAL}) {'OK' if share <= TARGET_IDEAL else 'ABOVE TARGET'}"
        print(
            f"  {name:<12} {median(runs, 0):.3f} s: wall / ideal = {share:.3f}"
            f"{target if name == 'flowrun' else ''}"
        )


if __name__ == "__main__":
    main()
