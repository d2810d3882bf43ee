"""The flowrun command line against a plain `openai` SDK script doing the same 20-call fan-out
(bench/fanout_setup.py, bench/sdk_fanout.py), whole processes (start-up, the run, exit), on one
scripted wire server in a process of its own.

Runs are timed in alternating pairs (flowrun first, then the script; then the other way round),
after one warm-up of each (the manifest check cache is warm, as on a user's second run). Printed:
the median wall and CPU time (user + system, from the kernel's accounting of each child) of
each, the median of the per-pair ratios and their spread, and the load average (on a machine
where other processes want the cores, wall times stretch and the CPU ratio is the steadier one).

Target: flowrun / SDK script <= 1.2.

Run: python bench/cli_fanout.py [--pairs 10] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fanout_setup import CHAIN, LATENCY_S, MODEL_CALLS, make_project, server_process

TARGET = 1.2


def flowrun_command() -> list[str]:
    console = Path(sys.executable).parent / "flowrun"
    return [str(console)] if console.exists() else [sys.executable, "-m", "flowrun"]


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one whole process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return elapsed, cpu


def model_calls(runs: Path) -> int:
    """Model calls of the newest run (from its event log)."""
    folders = [p for p in runs.iterdir() if p.is_dir()]  # (the runs index is a file beside them)
    newest = max(folders, key=lambda p: p.stat().st_mtime)
    return (newest / "events.jsonl").read_text().count('"type": "model_response"')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--latency", type=float, default=LATENCY_S, help="seconds per model call")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    server, url = server_process(args.latency)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            workflow = make_project(folder / "project")
            sdk = Path(__file__).resolve().parent / "sdk_fanout.py"
            env = {**os.environ, "BENCH_KEY": "bench-key", "OPENAI_BASE_URL": url}
            commands = {
                "flowrun": [*flowrun_command(), str(workflow), "-q", "--runs-dir", str(folder / "runs")],
                "sdk": [sys.executable, str(sdk)],
            }
            for argv in commands.values():  # warm-up: caches, page cache, the server's threads
                timed(argv, env, folder)
            times: dict[str, list[tuple[float, float]]] = {"flowrun": [], "sdk": []}
            for i in range(args.pairs):
                order = ["flowrun", "sdk"] if i % 2 == 0 else ["sdk", "flowrun"]
                for name in order:
                    times[name].append(timed(commands[name], env, folder))
            calls = model_calls(folder / "runs")
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait()
    if calls != MODEL_CALLS:
        raise SystemExit(f"expected {MODEL_CALLS} model calls per run, got {calls}")
    print(
        f"CLI fan-out: {MODEL_CALLS} model calls at {args.latency * 1000:.0f} ms each, "
        f"ideal run {CHAIN * args.latency:.2f} s; whole processes, {args.pairs} alternating pairs; "
        f"load average {load:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    for name, label in (("flowrun", "flowrun CLI  "), ("sdk", "openai script")):
        wall = statistics.median(t[0] for t in times[name])
        cpu = statistics.median(t[1] for t in times[name])
        print(f"{label} median {wall:.3f} s wall, {cpu:.3f} s CPU")
    for which, label in ((0, "wall"), (1, "CPU")):
        ratios = [f[which] / s[which] for f, s in zip(times["flowrun"], times["sdk"], strict=True)]
        ratio = statistics.median(ratios)
        print(
            f"flowrun / SDK script ({label}) = {ratio:.2f} (pairs {min(ratios):.2f}-{max(ratios):.2f}; "
            f"target <= {TARGET}) {'OK' if ratio <= TARGET else 'ABOVE TARGET'}"
        )


if __name__ == "__main__":
    main()
