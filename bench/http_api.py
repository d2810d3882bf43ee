"""The runs index and `flowrun serve http`, measured (figures printed, nothing asserted):

1. listing: 10,000 generated run folders (bench/run_folders.py); `flowrun runs` (a fresh
   process: start-up included) and `GET /v1/runs` (a page of 50, and a filtered page), each with
   the index made (the first listing builds it: printed apart), against the target of 0.3 s;
2. sse: 100 clients follow one run's events (`GET /v1/runs/ID/events`) while it runs (15 model
   calls at 20 ms latency): each must receive every event of its log exactly once; the server's
   CPU time while they follow;
3. runs: 50 runs started at once through `POST /v1/runs`, each one agent making two model calls
   at 200 ms latency: the wall time from the first POST to the last run's end, over the ideal
   (2 x 200 ms: they all run at once); then the same conversations by a plain `openai` script
   (bench/sdk_batch.py): what the machine allows the SDK alone, with nothing recorded and no
   HTTP in front, and flowrun's wall over the script's (target <= 1.15). With `--workers N` the
   server queues its runs (the embedded queue) and N `flowrun worker` processes run them; the
   CPU printed is the server's and its workers'. `--rounds` rounds (a fresh server each, the
   script right after it: both see the same load), the median ratio against the target. The
   clients are aiohttp in this process (their CPU shares the machine's two cores).

The model is tests/support/wire_server.py in a process of its own, through the real `openai` SDK.

Run: python bench/http_api.py [--part list|sse|runs|all] [--runs 10000] [--clients 100]
                              [--concurrent 50] [--latency 0.2] [--workers N] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from answerer import start_server  # noqa: E402
from run_folders import generate  # noqa: E402

FLOWRUN = [sys.executable, "-m", "flowrun"]
TARGET_LIST_S = 0.3
TARGET_RATIO = 1.15  # flowrun's wall over the plain SDK script's
WORKFLOW = """\
version: 1
kind: workflow
name: {name}
inputs:
  question: {{description: the question}}
models:
  m: {{provider: openai-compatible, base_url: BASE_URL, model: m, stream: false}}
default_model: m
entry: {agent}
task: "Question: {{{{ question }}}}"
"""
AGENTS = {
    "answerer": "tools: [write_file]\nprompt: You answer questions.\n",
    "chatter": "tools: [list_directory]\nprompt: You chat a lot.\n",
}


def wire_server(
    folder: Path, latency: float, chatty_latency: float, chatty_calls: int
) -> tuple[subprocess.Popen[str], str]:
    """The answerer (bench/answerer.py) and a chatter that lists the folder `chatty_calls - 1`
    times, then answers (naming it "." and "./" in turn: the same call over and over would be
    stopped by the loop guard, `max_repeated_calls`)."""
    chat: list[dict[str, object]] = [
        {
            "tool_calls": [{"name": "list_directory", "arguments": {"path": "./"[: 1 + i % 2]}}],
            "delay_s": chatty_latency,
        }
        for i in range(chatty_calls - 1)
    ] + [{"text": "chatted", "delay_s": chatty_latency}]
    return start_server(folder, latency, {"chatter": ("You chat a lot", chat)})


def project(folder: Path, url: str) -> list[Path]:
    (folder / "agents.d").mkdir(parents=True, exist_ok=True)
    files = []
    for name, agent in (("answer", "answerer"), ("chat", "chatter")):
        (folder / "agents.d" / f"{agent}.yaml").write_text(
            f"version: 1\nkind: agent\nname: {agent}\n{AGENTS[agent]}"
        )
        path = folder / f"{name}.yaml"
        path.write_text(WORKFLOW.format(name=name, agent=agent).replace("BASE_URL", url + "/v1"))
        files.append(path)
    return files


class Server:
    """`flowrun serve http` in a process of its own (with `workers`: that many worker processes
    beside it, running its runs from the embedded queue)."""

    def __init__(self, folder: Path, files: list[Path], runs: Path, workers: int = 0) -> None:
        env = {**os.environ, "OPENAI_API_KEY": "bench-key-0000000000"}
        argv = [*FLOWRUN, "serve", "http", *map(str, files), "--port", "0", "--runs-dir", str(runs)]
        if workers:
            argv += ["--workers", str(workers), "--concurrency", "200"]
        self.proc = subprocess.Popen(argv, cwd=folder, env=env, stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        if not line.startswith("serving the runs API"):
            raise SystemExit(f"the server did not start: {line}{self.proc.stderr.read()}")
        self.base = "http://127.0.0.1:" + line.split()[5].rsplit(":", 1)[1].split("/")[0]
        self.pids = [self.proc.pid]
        ready = 0
        while ready < workers:  # each worker says it takes runs once it can
            line = self.proc.stderr.readline()
            if line.startswith("started "):
                self.pids += [int(pid) for pid in line.split("pids ")[1].split()]
            ready += " takes runs of " in line
        threading.Thread(target=self.proc.stderr.read, daemon=True).start()  # the rest drained

    def cpu_s(self) -> float:
        """CPU seconds of the server and its workers."""
        return sum(self.cpu_each())

    def cpu_each(self) -> list[float]:
        """CPU seconds of the server, then of each worker."""
        each = []
        for pid in self.pids:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            each.append((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"))
        return each

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)


def timed(action: object, times: int = 5) -> tuple[float, float]:
    """(first, median of the rest) wall seconds of calling `action`."""
    walls = []
    for _ in range(times):
        start = time.perf_counter()
        action()  # type: ignore[operator]
        walls.append(time.perf_counter() - start)
    return walls[0], statistics.median(walls[1:])


def part_list(folder: Path, n: int, files: list[Path]) -> None:
    runs = folder / "many" / "runs"
    start = time.perf_counter()
    generate(runs, n)
    print(f"generated {n:,} run folders in {time.perf_counter() - start:.1f} s")

    def cli(*extra: str) -> None:
        subprocess.run([*FLOWRUN, "runs", "--runs-dir", str(runs), *extra], capture_output=True, check=True)

    first, warm = timed(cli)
    print(f"flowrun runs: the first builds the index in {first:.3f} s")
    show("flowrun runs (the newest 200)", warm, TARGET_LIST_S)
    show("flowrun runs --status waiting", timed(lambda: cli("--status", "waiting"))[1])
    show(f"flowrun runs --limit 0 ({n:,} lines)", timed(lambda: cli("--limit", "0"), 3)[1])
    server = Server(folder, files, runs)
    try:
        with httpx.Client(base_url=server.base, timeout=60) as http:
            for query, target in (
                ({"limit": 50}, TARGET_LIST_S),
                ({"status": "waiting", "q": "number 99"}, None),
                ({"limit": 50, "offset": 9000}, None),
            ):
                wall = timed(lambda q=query: http.get("/v1/runs", params=q).raise_for_status(), 11)[1]
                show("GET /v1/runs?" + "&".join(f"{k}={v}" for k, v in query.items()), wall, target)
    finally:
        server.stop()


def show(what: str, wall: float, target: float | None = None) -> None:
    print(f"  {what:<50} {wall:.3f} s" + (f"   target <= {target}" if target is not None else ""))


class Client:
    """The API's clients in this process, on aiohttp (a connection each, one session for all):
    httpx's async client spent about 0.4 s of CPU on the 50 runs' POSTs and event streams, on
    the two cores the server and its workers run on, and a real deployment's clients are on
    other machines."""

    def __init__(self, base: str) -> None:
        self.base = base

    async def __aenter__(self) -> Client:
        import aiohttp

        connector = aiohttp.TCPConnector(limit=500)
        self.session = aiohttp.ClientSession(
            self.base, connector=connector, timeout=aiohttp.ClientTimeout(120)
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.session.close()

    async def get(self, path: str, params: dict[str, object] | None = None) -> dict[str, object]:
        query = {k: str(v) for k, v in (params or {}).items()}
        async with self.session.get(path, params=query) as response:
            response.raise_for_status()
            got: dict[str, object] = await response.json()
            return got

    async def post(self, path: str, body: dict[str, object]) -> dict[str, object]:
        async with self.session.post(path, json=body) as response:
            response.raise_for_status()
            got: dict[str, object] = await response.json()
            return got

    async def start(self, workflow: str, question: str) -> str:
        """A run started; its id."""
        return str(
            (await self.post("/v1/runs", {"workflow": workflow, "inputs": {"question": question}}))["id"]
        )


async def follow(http: Client, run_id: str) -> list[int]:
    """The seqs of a run's events, as its event stream delivers them until its end."""
    seqs: list[int] = []
    async with http.session.get(f"/v1/runs/{run_id}/events") as response:
        async for raw in response.content:
            line = raw.decode().rstrip("\n")
            if line.startswith("id: "):
                seqs.append(int(line[4:]))
            elif line == "event: end":
                break
    return seqs


async def part_sse(folder: Path, files: list[Path], clients: int) -> None:
    runs = folder / "sse" / "runs"
    server = Server(folder, files, runs)
    try:
        async with Client(server.base) as http:
            cpu = server.cpu_s()
            start = time.perf_counter()
            run_id = await http.start("chat", "q")
            got = await asyncio.gather(*(follow(http, run_id) for _ in range(clients)))
            wall = time.perf_counter() - start
            cpu = server.cpu_s() - cpu
            status = (await http.get(f"/v1/runs/{run_id}"))["status"]
    finally:
        server.stop()
    log = (runs / run_id / "events.jsonl").read_text().splitlines()
    every = list(range(1, len(log) + 1))
    complete = sum(seqs == every for seqs in got)
    print(f"{clients} SSE clients following one run ({status}, {len(log)} events, {wall:.2f} s):")
    print(f"  clients that got every event once, in order: {complete}/{clients}")
    print(
        f"  server CPU while they followed: {cpu:.2f} s "
        f"({cpu / max(1, clients * len(log)) * 1e6:.0f} us per event delivered)"
    )


@dataclass
class Round:
    """One round of part 3: flowrun's 50 runs, then the plain script's 50 conversations."""

    wall: float
    cpu: list[float]  # the server's, then each worker's
    posted: float  # the POSTs' time
    spread: float  # the first run's start to the last's
    each: float  # a run's median duration
    done: int
    plain_wall: float
    plain_cpu_ms: float

    @property
    def ratio(self) -> float:
        return self.wall / self.plain_wall


async def runs_round(
    folder: Path, files: list[Path], url: str, concurrent: int, workers: int, number: int
) -> Round:
    """A fresh server (and workers), warmed by a run per worker, then `concurrent` runs at once;
    stopped before the plain script runs, so neither pays for the other's idle loops."""
    server = Server(folder, files, folder / "concurrent" / f"runs-{number}", workers)
    try:
        async with Client(server.base) as http:
            await http.get("/v1/workflows")  # the connection pool warm
            # a first run on each worker: the SDK imported, its client made
            warm = await asyncio.gather(*(http.start("answer", f"warm {i}") for i in range(2 * workers or 1)))
            await asyncio.gather(*(follow(http, run_id) for run_id in warm))
            before = server.cpu_each()
            start = time.perf_counter()
            ids = await asyncio.gather(*(http.start("answer", f"q{i}") for i in range(concurrent)))
            posted = time.perf_counter() - start
            await asyncio.gather(*(follow(http, run_id) for run_id in ids))
            wall = time.perf_counter() - start
            cpu = [after - was for after, was in zip(server.cpu_each(), before, strict=True)]
            listed = await http.get("/v1/runs", params={"status": "completed", "limit": 1000})
    finally:
        server.stop()
    mine = [r for r in listed["runs"] if r["id"] in set(ids)]  # type: ignore[union-attr]
    starts = [r["started"] for r in mine] or [0.0]
    durations = sorted(r["duration_s"] for r in mine) or [0.0]
    plain = sdk_conversations(url, concurrent)
    return Round(
        wall,
        cpu,
        posted,
        max(starts) - min(starts),
        durations[len(durations) // 2],
        len(mine),
        concurrent / plain["items_per_s"],
        plain["cpu_ms_per_item"],
    )


async def part_runs(
    folder: Path, files: list[Path], url: str, concurrent: int, latency: float, workers: int, rounds: int
) -> None:
    ideal = 2 * latency
    how = f"{workers} workers from the embedded queue" if workers else "the server's own loop"
    print(
        f"{concurrent} concurrent runs through the HTTP API at {latency * 1000:.0f} ms model latency "
        f"({how}), "
        f"{rounds} rounds, each followed by the same {concurrent} conversations by a plain SDK script "
        "(bench/sdk_batch.py: one loop, nothing recorded, no HTTP in front):"
    )
    done = []
    for number in range(rounds):
        r = await runs_round(folder, files, url, concurrent, workers, number)
        done.append(r)
        workers_cpu = ", workers " + ", ".join(f"{c:.2f}" for c in r.cpu[1:]) if workers else ""
        print(
            f"  round {number + 1}: completed {r.done}/{concurrent}; wall {r.wall:.3f} s = "
            f"{r.wall / ideal:.2f} x the ideal; CPU {sum(r.cpu) / concurrent * 1000:.0f} ms per run "
            f"(server {r.cpu[0]:.2f} s"
            f"{workers_cpu}); POSTs {r.posted:.3f} s, runs began within {r.spread:.3f} s, each took "
            f"{r.each:.3f} s; the script {r.plain_wall:.3f} s = {r.plain_wall / ideal:.2f} x, "
            f"{r.plain_cpu_ms:.1f} ms CPU each; flowrun / script {r.ratio:.2f}"
        )
    median = statistics.median(r.ratio for r in done)
    print(
        f"  flowrun / the plain SDK script, the median of {rounds}: {median:.2f}   target <= {TARGET_RATIO}"
    )


def sdk_conversations(url: str, n: int) -> dict[str, float]:
    """bench/sdk_batch.py's plain `openai` loop, `n` conversations at once: this machine's floor."""
    argv = [sys.executable, str(REPO / "bench" / "sdk_batch.py"), url + "/v1", "--items", str(n)]
    done = subprocess.run([*argv, "--concurrency", str(n)], capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["list", "sse", "runs", "all"], default="all")
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--concurrent", type=int, default=50)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--rounds", type=int, default=5, help="runs: rounds (the median ratio printed)")
    parser.add_argument(
        "--workers", type=int, default=0, help="runs: in N worker processes (0: in the server)"
    )
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="flowrun-http-bench-") as tmp:
        folder = Path(tmp)
        wire, url = wire_server(folder, args.latency, 0.02, 15)
        try:
            files = project(folder, url)
            if args.part in ("list", "all"):
                part_list(folder, args.runs, files)
            if args.part in ("sse", "all"):
                asyncio.run(part_sse(folder, files, args.clients))
            if args.part in ("runs", "all"):
                asyncio.run(
                    part_runs(folder, files, url, args.concurrent, args.latency, args.workers, args.rounds)
                )
        finally:
            wire.terminate()
            wire.wait()


if __name__ == "__main__":
    main()
