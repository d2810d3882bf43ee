"""Many runs in one process: N runs of a small workflow started at once through the Python API
(`asyncio.gather` of `Workflow.run`) on one event loop, against the scripted wire server
(tests/support/wire_server.py) in a process of its own, through the real `openai` SDK.

Each run is one agent making two model calls (a write_file call, then its answer) at LATENCY
seconds each, so all N at once ideally take 2 x LATENCY. Printed (figures, nothing asserted),
against issue 25's targets:
- wall time from the first run started to the last ended, over the ideal (target <= 1.1);
- peak RSS of the process (target <= 1 GiB), and memory per run: (peak - before) / N;
- CPU per run (every thread), and the CPU the N runs need against the ideal wall: one event
  loop cannot end sooner than the CPU its runs need, so this says how far the ratio can go;
- the most threads and open descriptors seen while the runs ran (none per run: the loop's
  bounded default executor, one descriptor per run for its log, its run log and its lock, and
  the HTTP connections), and the descriptors after the loop closed, against before;
- the load average (other processes' demand for the cores);
- for scale, the plain `openai` SDK script doing the same N conversations at once on one loop
  (bench/sdk_batch.py: the two calls and the file, nothing recorded): its wall over the same
  ideal, what the SDK alone allows one loop on this machine;
- what a new file costs in the folder the runs write in, before and after (bench/disk.py).

Run: python bench/many_runs.py [--runs 1000] [--latency 0.2] [--folder DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from answerer import start_server, write_project
from disk import describe, new_file_cost
from sdk_batch import in_fresh_process

TARGET_RATIO = 1.1
TARGET_RSS_MB = 1024
DRIVER = """\
import asyncio, json, os, resource, sys, threading, time
import flowrun
from flowrun.providers.clients import http_transport

workflow_path, runs_dir, count = sys.argv[1], sys.argv[2], int(sys.argv[3])

def rss_kb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0

most = {"threads": 0, "fds": 0, "rss_kb": 0}
seen = 0

def on_event(event):
    global seen
    seen += 1
    if seen % 200 == 0:  # a sample now and then (a sample per event would cost measurable CPU)
        most["threads"] = max(most["threads"], threading.active_count())
        most["fds"] = max(most["fds"], len(os.listdir("/proc/self/fd")))
        most["rss_kb"] = max(most["rss_kb"], rss_kb())

async def warm():  # the SDK imported and the process warm, as in a server that already ran
    await workflow.run({"question": "warm"}, runs_dir=runs_dir + "-warm", run_id="w")

async def many():
    return await asyncio.gather(*(
        workflow.run({"question": f"q{i}"}, runs_dir=runs_dir, run_id=f"r{i}", on_event=on_event)
        for i in range(count)
    ))

workflow = flowrun.load(workflow_path)
asyncio.run(warm())
fds_before, rss_before, threads_before = len(os.listdir("/proc/self/fd")), rss_kb(), threading.active_count()
start, cpu = time.perf_counter(), time.process_time()
results = asyncio.run(many())
wall, cpu = time.perf_counter() - start, time.process_time() - cpu
print(json.dumps({
    "completed": sum(r.status == "completed" for r in results), "wall": wall, "cpu": cpu,
    "rss_before_kb": rss_before, "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    "sampled_rss_kb": most["rss_kb"], "threads_before": threads_before, "threads": most["threads"],
    "fds_before": fds_before, "fds": most["fds"], "fds_after": len(os.listdir("/proc/self/fd")),
    "http": http_transport(),
}))
"""


def verdict(ok: bool, fail: str) -> str:
    return "OK" if ok else fail


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--folder", type=Path, help="where the run folders go (default: a temporary folder)")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    if args.folder is not None:
        args.folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.folder) as tmp:
        folder = Path(tmp)
        server, url = start_server(folder, args.latency)
        try:
            write_project(folder / "wf.yaml", url, name="many", output=False)
            env = {**os.environ, "OPENAI_API_KEY": "bench", "FLOWRUN_CACHE_DIR": str(folder / "cache")}
            files_before = new_file_cost(folder)
            argv = [
                sys.executable,
                "-c",
                DRIVER,
                str(folder / "wf.yaml"),
                str(folder / "runs"),
                str(args.runs),
            ]
            done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
            if done.returncode != 0:
                raise SystemExit(f"the runs failed:\n{done.stderr[-3000:]}")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            script = in_fresh_process(url, args.runs, args.runs, folder)
            files_after = new_file_cost(folder)
        finally:
            server.terminate()
            server.wait()
    if result["completed"] != args.runs:
        raise SystemExit(f"only {result['completed']} of {args.runs} runs completed")
    ideal = 2 * args.latency
    ratio = result["wall"] / ideal
    peak_mb = result["peak_rss_kb"] / 1024
    per_run_kb = (result["peak_rss_kb"] - result["rss_before_kb"]) / args.runs
    cpu_run = result["cpu"] / args.runs
    print(
        f"many runs: {args.runs} runs at once in one process on one event loop (Python API), one agent, "
        f"2 model calls of {args.latency * 1000:.0f} ms each, HTTP client {result['http']}, server in its "
        f"own process; load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    print(
        f"wall {result['wall']:.2f} s over ideal {ideal:.2f} s = {ratio:.2f} (target <= {TARGET_RATIO}) "
        f"{verdict(ratio <= TARGET_RATIO, 'ABOVE TARGET')}"
    )
    print(
        f"CPU {cpu_run * 1000:.2f} ms per run: the {args.runs} runs need {result['cpu']:.2f} s of one core "
        f"= {result['cpu'] / ideal:.1f}x the ideal wall (the ratio cannot go below it on one loop)"
    )
    print(
        f"peak RSS {peak_mb:.0f} MB (target <= {TARGET_RSS_MB} MB) "
        f"{verdict(peak_mb <= TARGET_RSS_MB, 'ABOVE TARGET')}; "
        f"{per_run_kb:.0f} KB per run over the {result['rss_before_kb'] / 1024:.0f} MB before"
    )
    print(
        f"threads at most {result['threads']} (before {result['threads_before']}: none per run); open "
        f"descriptors at most {result['fds']}, {result['fds_before']} before the runs, "
        f"{result['fds_after']} after {verdict(result['fds_after'] <= result['fds_before'], '(LEAK)')}"
    )
    sdk_wall = args.runs / script["items_per_s"]
    print(
        f"plain SDK script, the same {args.runs} conversations at once on one loop, nothing recorded: wall "
        f"{sdk_wall:.2f} s = {sdk_wall / ideal:.2f}x the ideal, {script['cpu_ms_per_item']:.2f} ms CPU per "
        f"conversation; flowrun / the plain loop: {result['wall'] / sdk_wall:.2f}"
    )
    print(describe(folder, files_before, files_after))


if __name__ == "__main__":
    main()
