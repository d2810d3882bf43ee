"""A cold first run: a fresh Python process that imports flowrun and runs the 20-call fan-out
(bench/fanout_setup.py) once through the Python API, and the same through the command line,
each against the bare `openai` SDK script doing the same work (bench/sdk_fanout.py), whole
processes (start-up, imports, the run, exit) on one scripted server in a process of its own.

Measured at two model latencies, 0 ms and 200 ms by default: at 0 ms a run is nothing but
overhead, so a fixed cost of start-up shows whole; at 200 ms the run takes about 1.6 s of
waiting that hides it. At each latency, rounds are timed in alternation (API, script, CLI;
the order rotates every round) after one warm-up of each (the manifest check cache is warm, as
on a user's second process), and each flowrun process is compared with the script's process
of its round. Printed: the machine (CPU count, load average before and after, Python), then
per latency the median wall and CPU time (user + system, from the kernel's accounting of each
child) of each, the median of the per-round ratios and their spread. On a machine where other
processes want the cores, wall times stretch; the ratios of neighbouring processes stay
steadier, and the CPU ratio steadier still.

flowrun's bytecode is compiled first, as `pip install` does: without it (an editable install
with PYTHONDONTWRITEBYTECODE set) every process compiles flowrun from source, a quarter of a
second more on a small machine; `--no-compile` leaves that to the environment.

Targets (wall): at 0 ms, API and CLI / SDK script <= 1.05; at 200 ms, API <= 1.1, CLI <= 1.0.

Run: python bench/cold.py [--pairs 10] [--latency 0 --latency 0.2]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

from bytecode import compile_flowrun
from cli_fanout import flowrun_command, model_calls, timed
from fanout_setup import CHAIN, LATENCY_S, MODEL_CALLS, make_project, server_process

LATENCIES_S = (0.0, LATENCY_S)
# (API, CLI) over the SDK script, wall: at 0 ms start-up is all there is to compare
TARGETS = {0.0: {"api": 1.05, "cli": 1.05}, LATENCY_S: {"api": 1.1, "cli": 1.0}}
API_RUN = """\
import sys
import flowrun
result = flowrun.load(sys.argv[1]).run_sync({}, runs_dir=sys.argv[2])
if not result.ok:
    sys.exit(f"the run ended {result.status}: {result.message}")
"""
LABELS = {"api": "flowrun API    ", "cli": "flowrun CLI    ", "sdk": "openai script  "}
Times = dict[str, list[tuple[float, float]]]  # name -> (wall, CPU) seconds of each round


def machine(load_before: float) -> str:
    load = os.getloadavg()
    return (
        f"machine: {os.cpu_count()} CPUs, {platform.machine()}, Python {platform.python_version()}; "
        f"load average {load_before:.1f} before, {load[0]:.1f} after ({load[1]:.1f} over 5 min)"
    )


def rounds(latency_s: float, pairs: int) -> Times:
    """`pairs` rounds of the three processes against a server answering after `latency_s`."""
    server, url = server_process(latency_s)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            workflow = make_project(folder / "project")
            env = {**os.environ, "BENCH_KEY": "bench-key", "OPENAI_BASE_URL": url}
            commands = {
                "api": [sys.executable, "-c", API_RUN, str(workflow), str(folder / "api-runs")],
                "sdk": [sys.executable, str(Path(__file__).resolve().parent / "sdk_fanout.py")],
                "cli": [*flowrun_command(), str(workflow), "-q", "--runs-dir", str(folder / "cli-runs")],
            }
            for argv in commands.values():  # warm-up: the check cache, the page cache, the server
                timed(argv, env, folder)
            times: Times = {name: [] for name in commands}
            names = list(commands)
            for i in range(pairs):
                for name in names[i % 3 :] + names[: i % 3]:
                    times[name].append(timed(commands[name], env, folder))
            calls = {side: model_calls(folder / f"{side}-runs") for side in ("api", "cli")}
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait()
    for side, count in calls.items():
        if count != MODEL_CALLS:
            raise SystemExit(f"expected {MODEL_CALLS} model calls per {side} run, got {count}")
    return times


def report(latency_s: float, times: Times) -> None:
    print(f"at {latency_s * 1000:.0f} ms a call (ideal run {CHAIN * latency_s:.2f} s):")
    for name, label in LABELS.items():
        wall = statistics.median(t[0] for t in times[name])
        cpu = statistics.median(t[1] for t in times[name])
        print(f"  {label} median {wall:.3f} s wall, {cpu:.3f} s CPU")
    targets = TARGETS.get(latency_s, {})
    for side in ("api", "cli"):
        for which, label in ((0, "wall"), (1, "CPU")):
            ratios = [f[which] / s[which] for f, s in zip(times[side], times["sdk"], strict=True)]
            ratio = statistics.median(ratios)
            verdict = "for scale"
            if which == 0 and side in targets:
                verdict = f"target <= {targets[side]} {'OK' if ratio <= targets[side] else 'ABOVE TARGET'}"
            print(
                f"  flowrun {side.upper()} / SDK script ({label:<4}) = {ratio:.2f} "
                f"(rounds {min(ratios):.2f}-{max(ratios):.2f}; {verdict})"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10, help="timed rounds (each: API, script, CLI)")
    parser.add_argument(
        "--latency", type=float, action="append", help="seconds per call (repeatable; default 0 and 0.2)"
    )
    parser.add_argument("--no-compile", action="store_true", help="do not compile flowrun's bytecode first")
    args = parser.parse_args()
    if not args.no_compile:
        compile_flowrun()
    load_before = os.getloadavg()[0]
    measured = [(latency, rounds(latency, args.pairs)) for latency in args.latency or LATENCIES_S]
    print(
        f"cold fan-out: {MODEL_CALLS} model calls, whole fresh processes, {args.pairs} rounds in "
        f"alternation per latency; bytecode {'as the environment left it' if args.no_compile else 'compiled'}"
    )
    print(machine(load_before))
    for latency, times in measured:
        report(latency, times)


if __name__ == "__main__":
    main()
