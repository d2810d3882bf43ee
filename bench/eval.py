"""`flowrun eval` wall time: an eval of N cases (default 200) at concurrency 20 and 200 ms model
latency, against the scripted wire server (tests/support/wire_server.py) in a process of its own, through
the real `openai` SDK, with one LLM judge per case.

Each case's run is one agent making two model calls (a write_file call, then its answer) and its
grading one judge call. Runs are graded as they end, so judge calls (at most `concurrency` at
once, beside the runs) overlap the runs still going: the ideal wall time is the runs' 2 x N calls
at `concurrency` at once, plus the last run's judge call: 2 x N x latency / concurrency + latency
(4.2 s for the defaults; 6 s if the judges waited for slots of the runs). The eval runs as the
command line does (`flowrun eval ... --concurrency 20`, a fresh process: start-up, loading the
manifests, the batch, its worker processes if any (`--processes`; the command's default, 1, has
none), the grading and the reports included), and its wall time is printed against that ideal
(target: within 1.5x), with its CPU time and the load average (other processes wanting the cores).

Run: python bench/eval.py [--cases 200] [--concurrency 20] [--latency 0.2] [--processes N/auto]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from answerer import start_server, write_project
from bytecode import compile_flowrun

TARGET = 1.5  # wall time within this factor of the ideal

EVALSET = """\
version: 1
kind: evalset
name: bench
workflow: bench.yaml
dataset: cases.jsonl
graders:
  - output: {contains: "42"}
  - status: completed
  - trajectory: {called: [write_file]}
  - judge: {model: m, rubric: "Is {{ output }} the answer to {{ inputs.question }}?"}
"""


def start_eval_server(folder: Path, latency: float) -> tuple[subprocess.Popen[str], str]:
    """The answerer's server, and the judge's answers."""
    judge = [{"text": json.dumps({"score": 1, "reason": "right"}), "delay_s": latency}]
    return start_server(folder, latency, {"judge": ("You are the judge", judge)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--processes", help="worker processes of the runs (default: the command's, 1)")
    args = parser.parse_args()
    compile_flowrun()  # as an installed flowrun has it (bench/bytecode.py)
    with tempfile.TemporaryDirectory(prefix="flowrun-bench-eval-") as tmp:
        folder = Path(tmp)
        server, url = start_eval_server(folder, args.latency)
        try:
            write_project(folder / "bench.yaml", url)
            (folder / "bench.eval.yaml").write_text(EVALSET)
            cases = "".join(
                json.dumps({"id": f"c{i}", "inputs": {"question": f"question {i}"}}) + "\n"
                for i in range(args.cases)
            )
            (folder / "cases.jsonl").write_text(cases)
            command = [str(Path(sys.executable).parent / "flowrun"), "eval", "bench.eval.yaml"]
            command += ["--concurrency", str(args.concurrency), "--json", "report.json", "--out", "out", "-q"]
            if args.processes is not None:
                command += ["--processes", args.processes]
            env = {**os.environ, "OPENAI_API_KEY": "bench"}
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, check=False)
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        finally:
            server.terminate()
            server.wait()
        if done.returncode != 0:
            raise SystemExit(
                f"the eval failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
            )
        report = json.loads((folder / "report.json").read_text())
    variant = report["variants"][0]
    ideal = 2 * args.cases * args.latency / args.concurrency + args.latency
    shared = 3 * args.cases * args.latency / args.concurrency
    latency_ms = args.latency * 1000
    processes = args.processes or "1 (the default)"
    print(
        f"flowrun eval: {args.cases} cases, concurrency {args.concurrency}, {latency_ms:.0f} ms latency, "
        f"--processes {processes}"
    )
    print(f"  score {variant['score']:.3f}, {len(variant['runs'])} runs graded, one judge call each")
    ratio = wall / ideal
    verdict = "OK" if ratio <= TARGET else "ABOVE TARGET"
    print(
        f"  wall time {wall:.2f} s; ideal {ideal:.2f} s (2 calls a run, judges overlapping; "
        f"{shared:.2f} s if the judges took the runs' slots)"
    )
    print(f"  CPU {cpu:.2f} s (the eval's process and its workers; the server's not included)")
    print(f"  {ratio:.2f}x the ideal ({verdict}: <= {TARGET}x); load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
