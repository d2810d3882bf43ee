"""`flowrun serve mcp WORKFLOW.yaml...`: the workflows as MCP tools, over stdio (default) or
streamable HTTP (`--http PORT`); `flowrun serve http WORKFLOW.yaml...`: the runs API (start,
follow, decide, resume runs over HTTP); `flowrun serve a2a WORKFLOW.yaml...`: the workflows as
A2A agents. Any of them on an address other than loopback only with a
token. `flowrun worker WORKFLOW.yaml...`: a worker process that takes runs of the workflows from a
queue and executes them (queue/worker.py); `flowrun workers`: the workers of a queue, their
runs and their last heartbeat. The queue is the runs folder's own (`embedded`, SQLite) or a
Postgres database (`--queue postgresql://...`), shared by every machine that mounts the runs
folder at the same path."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Never, TypeVar

import click

from flowrun.cli.common import fail, reported
from flowrun.cli.run_options import Command, RunArgs, run_options

if TYPE_CHECKING:
    import socket

    from starlette.types import ASGIApp

    from flowrun.api import Workflow
    from flowrun.queue.store import Limits
    from flowrun.queue.worker import WorkerConfig
    from flowrun.runtime.options import RunOptions
    from flowrun.serve.served_runs import ServedRuns

T = TypeVar("T")
LOOP_ENV = "FLOWRUN_LOOP"  # asyncio | uvloop: the event loop of `serve http`, `ui`, `serve a2a`, `worker`
TOKEN_ENV = "FLOWRUN_MCP_TOKEN"
HTTP_TOKEN_ENV = "FLOWRUN_HTTP_TOKEN"
A2A_TOKEN_ENV = "FLOWRUN_A2A_TOKEN"


QUEUE_HELP = "The queue: `embedded` (SQLite in the runs folder, one machine) or a postgresql:// URL."


def queue_option(default: str | None) -> Callable[[Command], Command]:
    return click.option("--queue", "queue", metavar="URL", default=default, help=QUEUE_HELP)


@dataclass(frozen=True)
class WorkerArgs:
    """How each worker runs (`flowrun worker`, and the workers of `serve http --workers`)."""

    concurrency: int = 32
    lease_s: float = 30.0
    drain_s: float = 30.0
    max_runs: int | None = None
    max_runs_per: tuple[str, ...] = ()

    @classmethod
    def given(cls, values: Mapping[str, object]) -> WorkerArgs:
        def number(name: str) -> float:
            value = values[name]
            assert isinstance(value, int | float)
            return value

        max_runs = values["max_runs"]
        per = values["max_runs_per"]
        return cls(
            int(number("concurrency")),
            number("lease_s"),
            number("drain_s"),
            max_runs if isinstance(max_runs, int) else None,
            tuple(str(p) for p in per) if isinstance(per, tuple) else (),
        )

    def config(self) -> WorkerConfig:
        from flowrun.queue.worker import WorkerConfig

        return WorkerConfig(
            self.concurrency, self.lease_s, self.drain_s, limits_of(self.max_runs, self.max_runs_per)
        )

    def argv(self) -> list[str]:
        """These options as `flowrun worker` takes them."""
        argv = ["--concurrency", str(self.concurrency), "--lease", str(self.lease_s)]
        argv += ["--drain-timeout", str(self.drain_s)]
        if self.max_runs:
            argv += ["--max-runs", str(self.max_runs)]
        for given in self.max_runs_per:
            argv += ["--max-runs-per", given]
        return argv


WORKER_OPTIONS = ("concurrency", "lease_s", "drain_s", "max_runs", "max_runs_per")


def worker_options(function: Command) -> Command:
    """What `flowrun worker` and `serve http --workers` share: how each worker runs; the
    command gets them as `worker_args` (a WorkerArgs)."""

    @functools.wraps(function)
    def command(*args: object, **kwargs: object) -> object:
        given = {name: kwargs.pop(name) for name in WORKER_OPTIONS}
        return function(*args, worker_args=WorkerArgs.given(given), **kwargs)

    options: list[Callable[[Command], Command]] = [
        click.option(
            "--concurrency",
            type=click.IntRange(1, 10_000),
            default=32,
            show_default=True,
            help="Runs at once in one worker.",
        ),
        click.option(
            "--lease",
            "lease_s",
            type=click.FloatRange(1.0),
            default=30.0,
            show_default=True,
            help="Seconds a worker's hold on a run lasts past its last heartbeat (a beat every third): "
            "how soon another worker takes over the runs of one that died.",
        ),
        click.option(
            "--drain-timeout",
            "drain_s",
            type=click.FloatRange(0.0),
            default=30.0,
            show_default=True,
            help="On SIGTERM, seconds the running runs have to end before they are stopped and "
            "handed back to the queue (a second SIGTERM: at once).",
        ),
        click.option(
            "--max-runs",
            type=click.IntRange(1),
            help="At most this many runs at once over all the queue's workers.",
        ),
        click.option(
            "--max-runs-per",
            "max_runs_per",
            multiple=True,
            metavar="WORKFLOW=N",
            help="At most N runs of WORKFLOW at once over all the queue's workers (repeatable).",
        ),
    ]
    wrapped: Command = command
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped


def load_served(workflows: tuple[Path, ...], run_args: RunArgs) -> tuple[list[Workflow], RunOptions]:
    """The served workflows (their .env files read first; two with one name refused) and the
    options of every run."""
    from flowrun.api import load
    from flowrun.cli.env_files import load_env_files

    load_env_files(workflows)
    options = run_args.options()
    loaded = [load(path) for path in workflows]
    names = [wf.name for wf in loaded]
    if len(set(names)) != len(names):
        fail("two workflows have the same name", "serve workflows with different `name:`s", 2)
    return loaded, options


def limits_of(max_runs: int | None, max_runs_per: tuple[str, ...]) -> Limits:
    from flowrun.queue.store import Limits

    per: dict[str, int] = {}
    for given in max_runs_per:
        name, _, count = given.partition("=")
        if not name or not count.isdigit() or int(count) < 1:
            fail(f"--max-runs-per {given!r} is not WORKFLOW=N", "e.g. --max-runs-per research=4", 2)
        per[name] = int(count)
    return Limits(max_runs, per or None)


@click.command()
@click.argument("workflows", nargs=-1, required=True, type=click.Path(path_type=Path))
@queue_option("embedded")
@worker_options
@run_options("runs_dir")
def worker(workflows: tuple[Path, ...], queue: str, worker_args: WorkerArgs, run_args: RunArgs) -> None:
    """Take runs of WORKFLOWS from a queue and execute them until SIGTERM (which drains)."""
    from flowrun.queue.databases import open_database
    from flowrun.queue.store import Store
    from flowrun.queue.worker import Worker

    config = worker_args.config()
    runner = loop_runner()
    with reported(False):
        loaded, _ = load_served(workflows, run_args)
        store = Store(open_database(queue, run_args.runs_dir)).prepare()
        running = Worker(store, run_args.runs_dir, loaded, config, lambda line: click.echo(line, err=True))
        runner(running.serve())


@click.command()
@queue_option("embedded")
@run_options("runs_dir")
@click.option("--all", "show_all", is_flag=True, help="Also the workers stopped or lost.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per worker.")
def workers(queue: str, run_args: RunArgs, show_all: bool, as_json: bool) -> None:
    """List a queue's workers: their state, their runs and their last heartbeat."""
    import dataclasses
    import json

    from flowrun.queue.databases import open_database
    from flowrun.queue.store import Store

    with reported(False):
        if queue == "embedded" and not run_args.runs_dir.is_dir():
            fail(f"no runs folder at {run_args.runs_dir}", "pass --runs-dir (or --queue URL)")
        found = Store(open_database(queue, run_args.runs_dir)).prepare().workers(show_all)
    if as_json:
        for row in found:
            click.echo(json.dumps(dataclasses.asdict(row)))
        return
    if not found:
        click.echo("no workers" + ("" if show_all else " up (--all: also those stopped or lost)"))
        return
    click.echo(f"{'worker':<36} {'state':<9} {'runs':>9}  {'heartbeat':>10}  started")
    for row in found:
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row.started))
        beat = f"{row.age_s:.1f} s ago"
        click.echo(
            f"{row.id:<36} {row.state:<9} {len(row.runs):>4}/{row.concurrency:<4}  {beat:>10}  {started}"
        )
        for run_id in row.runs:
            click.echo(f"  {run_id}")


@click.group()
def serve() -> None:
    """Serve workflows to other programs."""


@serve.command("mcp")
@click.argument("workflows", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--http",
    "port",
    type=click.IntRange(0, 65535),
    help="Serve streamable HTTP on this port (0: any free one).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="With --http: the address to listen on. Another than loopback needs a token.",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help=f"With --http: the token every request must send (`Authorization: Bearer TOKEN`), read from "
    f"this file; default: ${TOKEN_ENV}.",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="With --http: another Host header to answer (a DNS name clients use); loopback names and "
    "the listening address are always answered, any other is refused.",
)
@run_options(
    "runs_dir",
    "dry_run",
    "model",
    "sandbox",
    "yes",
    "decisions",
    "decide_within",
    help={
        "dry_run": "Every call uses the offline test provider.",
        "model": "Use this model for every agent of every call.",
        "sandbox": "Override every `sandbox:` mode.",
        "yes": "Approve every call of an `approve: ask` tool (else such a call makes the run wait for "
        "`flowrun approve`, with --decisions refuse it is refused).",
    },
)
def mcp(
    workflows: tuple[Path, ...],
    port: int | None,
    host: str,
    token_file: Path | None,
    allow_hosts: tuple[str, ...],
    run_args: RunArgs,
) -> None:
    """Serve WORKFLOWS as MCP tools: one tool per workflow, its inputs as parameters."""
    import asyncio
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        fail("`flowrun serve mcp` needs the `mcp` package", "pip install 'flowrun[mcp]'")
    from flowrun.serve.access import bind
    from flowrun.serve.mcp_server import WorkflowServer, serve_http, serve_stdio

    token = http_token(token_file, TOKEN_ENV, host) if port is not None else None
    with reported(False):
        loaded, options = load_served(workflows, run_args)
        server = WorkflowServer(loaded, options, run_args.runs_dir)
        try:
            if port is None:
                asyncio.run(serve_stdio(server))
                return
            try:
                sock = bind(host, port)
            except OSError as e:
                fail(f"cannot listen on {host}:{port}: {e.strerror or e}", "choose another --http port", 2)
            shown = f"[{host}]" if ":" in host else host
            click.echo(f"serving MCP at http://{shown}:{sock.getsockname()[1]}/mcp", err=True)
            asyncio.run(serve_http(server, sock, host, token, allow_hosts))
        except KeyboardInterrupt:
            return


def served_over_http(
    port: int, token_env: str, token_note: str = "", model_note: str = ""
) -> Callable[[Command], Command]:
    """The options `serve http` and `serve a2a` share: where to listen, the token, other Host
    names, and the runs' options."""

    def apply(command: Command) -> Command:
        options: list[Callable[[Command], Command]] = [
            click.option(
                "--host",
                default="127.0.0.1",
                show_default=True,
                help="The address to listen on. Another than loopback needs a token.",
            ),
            click.option(
                "--port",
                type=click.IntRange(0, 65535),
                default=port,
                show_default=True,
                help="0: any free one.",
            ),
            click.option(
                "--token-env",
                metavar="VAR",
                default=token_env,
                show_default=True,
                help="The environment variable holding the token every request must send "
                f"(`Authorization: Bearer TOKEN`{token_note}).",
            ),
            click.option(
                "--token-file",
                type=click.Path(dir_okay=False, path_type=Path),
                help="Read the token from this file instead.",
            ),
            click.option(
                "--allow-host",
                "allow_hosts",
                multiple=True,
                metavar="NAME",
                help="Another Host header to answer (a DNS name clients use); loopback names and the "
                "listening address are always answered, any other is refused.",
            ),
            run_options(
                "runs_dir",
                "dry_run",
                "model",
                "sandbox",
                "decisions",
                "decide_within",
                help={
                    "dry_run": "Every run uses the offline test provider.",
                    "model": "Use this model for every agent of every run" + model_note + ".",
                },
            ),
        ]
        for option in reversed(options):
            command = option(command)
        return command

    return apply


def listen(host: str, port: int) -> tuple[socket.socket, str]:
    """A socket listening on host:port, and the base URL it answers at."""
    from flowrun.serve.access import bind

    try:
        sock = bind(host, port)
    except OSError as e:
        fail(
            f"cannot listen on {host}:{port}: {e.strerror or e}", "choose another --port (0: any free one)", 2
        )
    shown = f"[{host}]" if ":" in host else host
    return sock, f"http://{shown}:{sock.getsockname()[1]}"


@serve.command("http")
@click.argument("workflows", nargs=-1, required=True, type=click.Path(path_type=Path))
@served_over_http(8321, HTTP_TOKEN_ENV, model_note=" (a request's options may choose another)")
@click.option(
    "--workers",
    type=click.IntRange(0, 256),
    default=0,
    show_default=True,
    help="Run the runs in this many `flowrun worker` processes started beside the server, from a "
    "queue (0: on the server's own loop).",
)
@queue_option(None)
@worker_options
def http(
    workflows: tuple[Path, ...],
    host: str,
    port: int,
    token_env: str,
    token_file: Path | None,
    allow_hosts: tuple[str, ...],
    run_args: RunArgs,
    workers: int,
    queue: str | None,
    worker_args: WorkerArgs,
) -> None:
    """Serve the runs API over HTTP: start runs of WORKFLOWS, follow their events, take their decisions."""
    queued = QueueArgs(queue, workers, worker_args) if queue is not None or workers else None
    serve_api(
        workflows, host, port, http_token(token_file, token_env, host), allow_hosts, run_args, queued=queued
    )


@dataclass(frozen=True)
class QueueArgs:
    """`serve http --workers N` / `--queue URL`: where runs are queued, and the local workers."""

    queue: str | None  # None: the embedded queue of the runs folder
    workers: int
    worker_args: WorkerArgs

    def worker_argv(self, workflows: tuple[Path, ...], runs_dir: Path) -> list[str]:
        """`flowrun worker`'s arguments for the local workers."""
        argv = [*(str(w.resolve()) for w in workflows), "--runs-dir", str(runs_dir.resolve())]
        return [*argv, "--queue", self.queue or "embedded", *self.worker_args.argv()]


def serve_api(
    workflows: tuple[Path, ...],
    host: str,
    port: int,
    token: str | None,
    allow_hosts: tuple[str, ...],
    run_args: RunArgs,
    open_browser: bool = False,
    queued: QueueArgs | None = None,
) -> None:
    """The runs API (and the web UI's pages) on HOST:PORT until Ctrl-C (`serve http`, `ui`);
    `queued`: its runs go to a queue, executed by workers (local ones started here)."""
    import importlib.util

    if importlib.util.find_spec("starlette") is None or importlib.util.find_spec("uvicorn") is None:
        fail(
            "`flowrun serve http` and `flowrun ui` need starlette and uvicorn", "pip install 'flowrun[serve]'"
        )
    loop_runner()  # a FLOWRUN_LOOP it cannot use: said before anything is loaded or bound
    with reported(False):
        loaded, options = load_served(workflows, run_args)
        sock, base = listen(host, port)
        click.echo(f"serving the runs API at {base}/v1 (see /openapi.json)", err=True)
        page = f"{base}/" + (f"#token={token}" if token else "")
        click.echo(f"the web UI: {page}", err=True)
        if open_browser:
            import webbrowser

            webbrowser.open(page)
        from flowrun.serve.http_app import build_app
        from flowrun.serve.served_runs import ServedRuns

        runs_dir = run_args.runs_dir
        served: Callable[[], ServedRuns] = lambda: ServedRuns(loaded, runs_dir, options)  # noqa: E731
        if queued is not None:
            served = queued_runs(queued, workflows, loaded, run_args, options)
        app = build_app(served, host, token, allow_hosts, _told)
        run_app(app, sock)


def queued_runs(
    queued: QueueArgs,
    workflows: tuple[Path, ...],
    loaded: list[Workflow],
    run_args: RunArgs,
    options: RunOptions,
) -> Callable[[], ServedRuns]:
    """What makes the server's runs when they go to a queue: the queue opened now (a bad URL,
    a database that does not answer: one line before the server listens), the local workers
    started once the server runs."""
    from flowrun.queue.submit import Queue
    from flowrun.serve.queued_runs import QueuedRuns, adopt_folder

    queue = Queue(queued.queue, run_args.runs_dir)
    adopt_folder(queue)  # the runs made before the queue are listed too
    where = queued.queue.split("@")[-1] if queued.queue else f"{queue.runs_dir}/.queue.sqlite"
    click.echo(f"runs go to the queue at {where}", err=True)

    def made() -> ServedRuns:
        from flowrun.queue.local_workers import LocalWorkers

        workers = None
        if queued.workers:
            workers = LocalWorkers(queued.worker_argv(workflows, run_args.runs_dir), queued.workers)
            click.echo(
                f"started {queued.workers} worker(s): pids {' '.join(map(str, workers.pids))}", err=True
            )
        drain_s = queued.worker_args.drain_s
        return QueuedRuns(loaded, run_args.runs_dir, options, queue, workers, drain_s)

    return made


def _told(served: ServedRuns) -> None:
    """Say which runs a restarted server found waiting or stopped, and what to do."""
    waiting, stopped = served.left_over()
    for what, runs in (("wait for decisions", waiting), ("were stopped (cancelled or interrupted)", stopped)):
        if runs:
            ids = ", ".join(e.id for e in runs[:5]) + (", ..." if len(runs) > 5 else "")
            click.echo(f"{len(runs)} run(s) {what}: {ids}", err=True)
    if waiting or stopped:
        click.echo("decide with POST /v1/runs/ID/decisions, continue with POST /v1/runs/ID/resume", err=True)


def run_app(app: ASGIApp, sock: socket.socket) -> None:
    """Serve an ASGI app on a listening socket until Ctrl-C (`serve http`, `ui`, `serve a2a`)."""
    import uvicorn

    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5)
    with contextlib.suppress(KeyboardInterrupt):
        loop_runner()(uvicorn.Server(config).serve(sockets=[sock]))


def loop_runner() -> Callable[[Coroutine[object, Never, T]], T]:
    """What runs a serving command's loop: uvloop's when it is installed (`flowrun[serve]`
    brings it), as uvicorn does; a server and a worker spend a third less CPU per request and
    per model call on it (bench/http_api.py). FLOWRUN_LOOP=asyncio keeps asyncio's own; a value
    flowrun does not know is a usage error before anything starts."""
    import asyncio

    wanted = os.environ.get(LOOP_ENV, "").strip().lower()
    installed = importlib.util.find_spec("uvloop") is not None
    if wanted not in ("", "asyncio", "uvloop"):
        fail(f"{LOOP_ENV}={wanted!r} is not an event loop flowrun knows", "use asyncio or uvloop", 2)
    if wanted == "uvloop" and not installed:
        fail(f"{LOOP_ENV}=uvloop, but uvloop is not installed", "pip install 'flowrun[serve]'", 2)
    if wanted != "asyncio" and installed:
        import uvloop

        return uvloop.run
    return asyncio.run


def http_token(token_file: Path | None, env: str, host: str) -> str | None:
    """The token HTTP requests must carry: the file's content, else $`env`; an address other
    than loopback without one is refused."""
    from flowrun.serve.access import MAKE_TOKEN, MIN_TOKEN_CHARS, is_loopback

    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as e:
            fail(f"cannot read --token-file {token_file}: {getattr(e, 'strerror', None) or e}", "", 2)
        where = f"--token-file {token_file}"
    else:
        token = os.environ.get(env, "").strip()
        where = env
    if not token:
        if is_loopback(host):
            return None
        fail(
            f"--host {host} would serve these workflows, and the tools of their agents, to the network "
            "without a token",
            f"set {env} or give --token-file FILE (make one with {MAKE_TOKEN}); clients send "
            "`Authorization: Bearer TOKEN`",
            2,
        )
    if len(token) < MIN_TOKEN_CHARS:
        fail(
            f"the token in {where} is shorter than {MIN_TOKEN_CHARS} characters",
            f"make one with {MAKE_TOKEN}",
            2,
        )
    return token


@serve.command("a2a")
@click.argument("workflows", nargs=-1, required=True, type=click.Path(path_type=Path))
@served_over_http(8322, A2A_TOKEN_ENV, "; the agent cards are public")
def a2a(
    workflows: tuple[Path, ...],
    host: str,
    port: int,
    token_env: str,
    token_file: Path | None,
    allow_hosts: tuple[str, ...],
    run_args: RunArgs,
) -> None:
    """Serve WORKFLOWS as A2A agents (protocol 1.0, JSON-RPC): a message starts a run, a task is a run."""
    import importlib.util

    needed = ("a2a", "sse_starlette", "starlette", "uvicorn")
    if any(importlib.util.find_spec(name) is None for name in needed):
        fail("`flowrun serve a2a` needs the a2a-sdk's server", "pip install 'flowrun[a2a]'")
    loop_runner()
    token = http_token(token_file, token_env, host)
    with reported(False):
        loaded, options = load_served(workflows, run_args)
        names = [wf.name for wf in loaded]
        sock, base = listen(host, port)
        click.echo(f"serving A2A at {base} (agent card: {base}/.well-known/agent-card.json)", err=True)
        for name in names:
            click.echo(f"  {name}: {base}/a2a/{name}", err=True)
        from flowrun.serve.a2a_app import build_app
        from flowrun.serve.served_runs import ServedRuns

        runs_dir = run_args.runs_dir
        app = build_app(loaded, lambda: ServedRuns(loaded, runs_dir, options), host, token, allow_hosts)
        run_app(app, sock)
