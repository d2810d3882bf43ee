"""`flowrun batch` throughput and footprint with the local backend: N items at 200 ms model
latency, concurrency 50, against the scripted wire server (tests/support/wire_server.py) running in a
process of its own, through the real `openai` SDK.

Each item is one agent making two model calls (a write_file call, then its answer), so the
critical path of one item is 2 x latency and the ideal throughput is concurrency / (2 x latency)
items a second. Each batch runs in a fresh process (python -c ... flowrun.run_batch) that reports
its wall time, its CPU time (every thread), when each item ended, its peak RSS and the most file
descriptors it had open (sampled as items end).

Printed, against the issues' targets:
- throughput: items/s over the whole batch (start-up included: loading the workflow, importing
  the SDK, the first connections) and sustained (between the 10th and the 90th percentile of
  item ends), each against the ideal (target >= 90 %);
- CPU per item, and the most items/s the batch's CPU time allows on one core (one event loop):
  on a machine where other work takes cores, this is the figure that does not depend on them;
- peak RSS for 100 and for N items (target: N=1,000 within 2x the RSS of 100), open descriptors;
- the load average while it ran (other processes' demand for the cores);
- flowrun's items/s over the whole batch divided by the plain SDK loop's, both in this run
  (target >= 1.0), and their CPU per item (target: flowrun <= 1.5x the plain loop).

With more than one process (`--processes`, default auto as `flowrun batch`: one per 16 of the
concurrency, at most one per CPU), CPU time and peak RSS include the worker processes: CPU is
this process's plus its reaped children's; RSS is the most the parent and its workers held
together, sampled as items end (and the largest single process, from getrusage).

For scale, the same N items are then run by a plain `openai` SDK script in one process at the
same concurrency (bench/sdk_batch.py: the two calls and the file, no run folder): what the
machine allows a script that records nothing.

The batch folder goes in a temporary folder, or under --folder, and the plain loop's files go
there too. The filesystem and what a new file costs there, before and after, are printed: a run
folder makes about a dozen, the plain loop one per item, and on some disks a new file costs 50
times what it costs on others, or on the same disk a few minutes earlier (bench/disk.py).

Run: python bench/batch.py [--items 1000] [--concurrency 50] [--latency 0.2] [--processes N|auto]
                           [--folder DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from answerer import start_server, write_project
from bytecode import compile_flowrun
from disk import describe, filesystem, new_file_cost
from sdk_batch import in_fresh_process

REPO = Path(__file__).resolve().parent.parent
TARGET_SHARE = 0.9
TARGET_RSS = 2.0
TARGET_SPEED = 1.0  # flowrun's items/s over the whole batch / the plain SDK loop's (issue 25)
TARGET_CPU = 1.5  # flowrun's CPU per item / the plain SDK loop's (issue 25)

DRIVER = """\
import asyncio, json, os, resource, sys, time
from pathlib import Path
import flowrun
from flowrun.providers.clients import http_transport

most_fds = 0
most_rss_kb = 0
names = set()  # the workers' names: flowrun-worker when forked (batch/forked.py)
last_sample = 0.0
ended = []

def rss_kb(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0

def children():
    found = []
    for task in Path("/proc/self/task").iterdir():
        try:
            found += (task / "children").read_text().split()
        except OSError:
            pass
    return found

def sample(progress):
    global most_fds, most_rss_kb, last_sample
    now = time.perf_counter()
    if progress.last is not None:
        ended.append(now)
    if now - last_sample >= 0.2:  # (a sample per change would cost the batch measurable CPU)
        last_sample = now
        most_fds = max(most_fds, len(os.listdir("/proc/self/fd")))
        # the parent and its workers together
        pids = children()
        most_rss_kb = max(most_rss_kb, rss_kb("self") + sum(rss_kb(pid) for pid in pids))
        for pid in pids:
            try:
                names.add(Path(f"/proc/{pid}/comm").read_text().strip())
            except OSError:
                pass

workflow, items, out, concurrency = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
processes = sys.argv[5] if sys.argv[5] == "auto" else int(sys.argv[5])
children_cpu = lambda: (lambda r: r.ru_utime + r.ru_stime)(resource.getrusage(resource.RUSAGE_CHILDREN))
start, cpu, child_cpu = time.perf_counter(), time.process_time(), children_cpu()
batch = flowrun.run_batch(
    workflow, items, out=out, concurrency=concurrency, processes=processes, on_progress=sample
)
summary = asyncio.run(batch)
wall = time.perf_counter() - start
own_cpu = time.process_time() - cpu
cpu = own_cpu + children_cpu() - child_cpu
n = len(ended)
lo, hi = ended[n // 10], ended[(9 * n) // 10]
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
largest_child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"status": summary.status, "completed": summary.completed, "wall": wall, "cpu": cpu,
                  "own_cpu": own_cpu,
                  "sustained": ((9 * n) // 10 - n // 10) / (hi - lo) if hi > lo else 0.0,
                  "rss_kb": max(most_rss_kb, own), "own_rss_kb": own, "child_rss_kb": largest_child,
                  "fds": most_fds, "processes": summary.processes, "http": http_transport(),
                  "forked": "flowrun-worker" in names}))
"""


def run_batch(folder: Path, workflow: Path, items: int, concurrency: int, processes: str) -> dict[str, float]:
    items_file = folder / f"items-{items}.jsonl"
    items_file.write_text("".join(json.dumps({"question": f"question {i}"}) + "\n" for i in range(items)))
    out = folder / f"out-{items}"
    argv = ["-c", DRIVER, str(workflow), str(items_file), str(out), str(concurrency), processes]
    result = last_json_line(argv, "the batch")
    if result["completed"] != items:
        raise SystemExit(f"only {result['completed']} of {items} items completed")
    result["entries"] = sum(len(dirs) + len(files) for _, dirs, files in os.walk(out / "runs"))
    return result


def last_json_line(argv: list[str], what: str) -> dict[str, float]:
    """Run `python ARGV...` in a fresh process; the JSON object its last line prints."""
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{what} failed:\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def verdict(ok: bool, fail: str = "BELOW TARGET") -> str:
    return "OK" if ok else fail


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--processes", default="auto", help="N or auto (as flowrun batch --processes)")
    parser.add_argument("--folder", type=Path, help="where batch folders go (default: a temporary folder)")
    args = parser.parse_args()
    compile_flowrun()  # as an installed flowrun has it (bench/bytecode.py)
    load_before = os.getloadavg()[0]
    if args.folder is not None:
        args.folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.folder) as tmp:
        folder = Path(tmp)
        server, url = start_server(folder, args.latency)
        try:
            workflow = write_project(folder / "p" / "bench.yaml", url)
            os.environ.setdefault("FLOWRUN_CACHE_DIR", str(folder / "cache"))
            files_before = new_file_cost(folder)
            small = run_batch(folder, workflow, 100, args.concurrency, args.processes)
            time.sleep(0.5)
            large = run_batch(folder, workflow, args.items, args.concurrency, args.processes)
            time.sleep(0.5)
            script = in_fresh_process(url, args.items, args.concurrency, folder)
            files_after = new_file_cost(folder)
            kind = filesystem(folder)
        finally:
            server.terminate()
            server.wait()
    ideal = args.concurrency / (2 * args.latency)
    whole = args.items / large["wall"]
    cpu_item = large["cpu"] / args.items
    growth = large["rss_kb"] / small["rss_kb"]
    processes = int(large["processes"])
    started = "forked from the batch's" if large["forked"] else "fresh interpreters"
    where = "in one process" if processes == 1 else f"over {processes} processes, {started}"
    print(
        f"batch: {args.items} items, concurrency {args.concurrency}, {args.latency * 1000:.0f} ms per model "
        f"call, 2 calls per item (local backend {where} (--processes {args.processes}), HTTP client "
        f"{large['http']}, server in its own process, batch folder on {kind}); "
        f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    )
    print(f"ideal {ideal:.1f} items/s ({args.concurrency} / {2 * args.latency:.1f} s)")
    for label, rate in (("whole batch", whole), ("sustained", large["sustained"])):
        share = rate / ideal
        print(
            f"{label:<12} {rate:6.1f} items/s = {share:4.0%} of ideal (target >= {TARGET_SHARE:.0%}) "
            f"{verdict(share >= TARGET_SHARE)}"
        )
    print(
        f"CPU {cpu_item * 1000:.2f} ms per item (every thread of every process): one core drives at most "
        f"{1 / cpu_item:.0f} items/s = {1 / cpu_item / ideal:.0%} of ideal"
        + (
            f"; {processes} cores at most {processes / cpu_item:.0f} items/s (the batch process itself: "
            f"{large['own_cpu'] / args.items * 1000:.2f} ms per item)"
            if processes > 1
            else ""
        )
    )
    flat = verdict(growth <= TARGET_RSS, "ABOVE TARGET")
    print(
        f"peak RSS {small['rss_kb'] / 1024:.0f} MB for 100 items, {large['rss_kb'] / 1024:.0f} MB for "
        f"{args.items}: x{growth:.2f} (target <= {TARGET_RSS}) {flat}"
        + (
            f" (all {processes} workers and the parent together; the parent alone "
            f"{large['own_rss_kb'] / 1024:.0f} MB, the largest worker {large['child_rss_kb'] / 1024:.0f} MB)"
            if processes > 1
            else ""
        )
    )
    print(
        f"plain SDK script, one process, same items and concurrency: {script['items_per_s']:.1f} items/s = "
        f"{script['items_per_s'] / ideal:.0%} of ideal, {script['cpu_ms_per_item']:.2f} ms CPU per item"
    )
    speed = whole / script["whole_items_per_s"]
    print(
        f"items/s over the whole batch, flowrun / plain SDK loop: {whole:.1f} / "
        f"{script['whole_items_per_s']:.1f} = {speed:.2f} (both from before their SDK import; "
        f"target >= {TARGET_SPEED}) {verdict(speed >= TARGET_SPEED)}; sustained / the loop alone: "
        f"{large['sustained'] / script['items_per_s']:.2f}"
    )
    cpu_ratio = cpu_item * 1000 / script["whole_cpu_ms_per_item"]
    print(
        f"CPU per item, flowrun / plain SDK loop, both with their start-up: {cpu_item * 1000:.2f} / "
        f"{script['whole_cpu_ms_per_item']:.2f} ms = {cpu_ratio:.2f} (target <= {TARGET_CPU}) "
        f"{verdict(cpu_ratio <= TARGET_CPU, 'ABOVE TARGET')}; the SDK loop alone "
        f"{script['cpu_ms_per_item']:.2f} ms"
    )
    print(
        f"open file descriptors at most {small['fds']:.0f} (100 items), "
        f"{large['fds']:.0f} ({args.items} items)" + (" in the parent" if processes > 1 else "")
    )
    print(
        describe(folder, files_before, files_after)
        + f"; each item's run folder keeps {large['entries'] / args.items:.0f} files and folders (and made "
        "3 more it replaced or removed: the first run.json and usage.json, the lock), the plain loop 1"
    )


if __name__ == "__main__":
    main()
