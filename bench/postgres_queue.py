"""The Postgres queue, measured (figures printed, nothing asserted):

1. spread: 300 runs started through two `flowrun serve http --queue URL` instances and run by
   three `flowrun worker` processes, each run one agent making two model calls at 200 ms latency
   (bench/answerer.py): the wall time from the first POST to the last run's end over the ideal
   (2 x 200 ms: they could all run at once), and the CPU per run of the five processes;
2. take-over: 30 runs whose model calls take 2 s, one worker SIGKILLed once it holds runs: for
   each run it held, the time from its lease running out (its last heartbeat + the lease) to the
   first event another worker wrote in the run's log.

Postgres is a throw-away cluster (tests/support/postgres.py: Debian's postgresql); the model is
tests/support/wire_server.py in a process of its own, through the real `openai` SDK.

Run: python bench/postgres_queue.py [--runs 300] [--latency 0.2] [--lease 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(REPO / "tests"))
from answerer import start_server, write_project  # noqa: E402
from support.postgres import cluster, fresh_database  # noqa: E402

FLOWRUN = [sys.executable, "-m", "flowrun"]
ENV = {**os.environ, "OPENAI_API_KEY": "bench-key-0000000000"}


class Process:
    """A flowrun command in the background; its stderr lines kept."""

    def __init__(self, argv: list[str], cwd: Path, ready: str) -> None:
        self.proc = subprocess.Popen([*FLOWRUN, *argv], cwd=cwd, env=ENV, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        assert self.proc.stderr is not None
        while not any(ready in line for line in self.lines):
            line = self.proc.stderr.readline()
            if not line:
                raise SystemExit(f"{argv[0]} did not start: {''.join(self.lines)}")
            self.lines.append(line)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(timeout=120)


class Deployment:
    """Two API instances and three workers on one database and runs folder."""

    def __init__(self, folder: Path, workflow: Path, url: str, lease: float) -> None:
        self.folder, self.runs = folder, folder / "runs"
        common = ["--runs-dir", str(self.runs), "--queue", url]
        api = ["serve", "http", str(workflow), "--port", "0", *common]
        self.apis = [Process(api, folder, "serving the runs API") for _ in range(2)]
        self.bases = [line.split()[5].removesuffix("/v1") for p in self.apis for line in p.lines[:1]]
        worker = ["worker", str(workflow), *common, "--concurrency", "200", "--lease", str(lease)]
        self.workers = [Process(worker, folder, " takes runs of ") for _ in range(3)]

    def cpu_s(self) -> float:
        return sum(p.cpu_s() for p in [*self.apis, *self.workers] if p.proc.poll() is None)

    def stop(self) -> None:
        for process in [*self.workers, *self.apis]:
            process.stop()


async def start_runs(bases: list[str], n: int, tag: str) -> list[str]:
    limits = httpx.Limits(max_connections=500, max_keepalive_connections=500)
    clients = [httpx.AsyncClient(base_url=b, timeout=120, limits=limits) for b in bases]
    try:
        posts = [
            clients[i % len(clients)].post("/v1/runs", json={"inputs": {"question": f"{tag} {i}"}})
            for i in range(n)
        ]
        return [r.json()["id"] for r in await asyncio.gather(*posts)]
    finally:
        for c in clients:
            await c.aclose()


def wait_ended(runs: Path, ids: list[str]) -> None:
    """Until every run's log ends with its run_end (read from the folders: no API in the way)."""
    left = set(ids)
    while left:
        for run_id in list(left):
            with open(runs / run_id / "run.json") as f:
                if json.load(f).get("status") in ("completed", "failed"):
                    left.discard(run_id)
        time.sleep(0.02)


def part_spread(folder: Path, url: str, n: int, latency: float, lease: float) -> None:
    server, model_url = start_server(folder, latency)
    workflow = write_project(folder / "answer.yaml", model_url, name="answer", output=False)
    deployment = Deployment(folder, workflow, url, lease)
    try:
        asyncio.run(start_runs(deployment.bases, 3, "warm"))  # each worker's SDK imported
        time.sleep(2 * latency + 1.0)
        cpu = deployment.cpu_s()
        start = time.perf_counter()
        ids = asyncio.run(start_runs(deployment.bases, n, "question"))
        posted = time.perf_counter() - start
        wait_ended(deployment.runs, ids)
        wall = time.perf_counter() - start
        cpu = deployment.cpu_s() - cpu
        by_worker = {w.proc.pid: sum(" took " in line for line in w.lines) for w in deployment.workers}
    finally:
        deployment.stop()
        server.terminate()
    ideal = 2 * latency
    print(f"{n} runs through 2 API instances, 3 workers, Postgres, {latency * 1000:.0f} ms model latency:")
    print(f"  wall {wall:.2f} s (the POSTs {posted:.2f} s), ideal {ideal:.2f} s: {wall / ideal:.2f} x")
    print(f"  CPU of the five processes {cpu:.2f} s: {cpu / n * 1000:.1f} ms per run")
    print(f"  runs taken per worker (3 warm-up runs included): {sorted(by_worker.values())}")


def part_takeover(folder: Path, url: str, lease: float) -> None:
    server, model_url = start_server(folder, 2.0)
    workflow = write_project(folder / "answer.yaml", model_url, name="answer", output=False)
    deployment = Deployment(folder, workflow, url, lease)
    try:
        ids = asyncio.run(start_runs(deployment.bases, 30, "slow"))
        victim = deployment.workers[0]
        while sum(" took " in line for line in victim.lines) < 3:
            time.sleep(0.02)
        held = [line.split()[3] for line in victim.lines if " took " in line]
        time.sleep(0.5)  # its runs' first model calls in flight
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait()
        import psycopg

        with psycopg.connect(url) as conn:
            ((beat, lease_s),) = conn.execute(
                "SELECT heartbeat, lease_s FROM flowrun_workers WHERE pid = %s", (victim.proc.pid,)
            ).fetchall()
        wait_ended(deployment.runs, ids)
    finally:
        deployment.stop()
        server.terminate()
    expiry = beat + lease_s
    delays = []
    for run_id in held:
        lines = (deployment.runs / run_id / "events.jsonl").read_text().splitlines()
        resumed = [json.loads(line) for line in lines if '"type": "run_resumed"' in line]
        if resumed:
            delays.append(resumed[0]["t"] - expiry)
    delays.sort()
    print(f"take-over after a SIGKILL ({len(held)} runs held by the worker, lease {lease_s:g} s):")
    if delays:
        print(
            f"  lease expiry to the first new event: min {delays[0]:.3f} s, "
            f"median {delays[len(delays) // 2]:.3f} s, max {delays[-1]:.3f} s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--lease", type=float, default=3.0)
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    with cluster() as base_url, tempfile.TemporaryDirectory(prefix="flowrun-queue-bench-") as tmp:
        folder = Path(tmp)
        (folder / "spread").mkdir()
        part_spread(folder / "spread", fresh_database(base_url), args.runs, args.latency, args.lease)
        (folder / "takeover").mkdir()
        part_takeover(folder / "takeover", fresh_database(base_url), args.lease)


if __name__ == "__main__":
    main()
