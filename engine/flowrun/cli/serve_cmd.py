"""`flowrun serve mcp WORKFLOW.yaml...`: the workflows as MCP tools, over stdio (default) or
streamable HTTP (`--http PORT`); `flowrun serve http WORKFLOW.yaml...`: the runs API (start,
follow, decide, resume runs over HTTP); `flowrun serve a2a WORKFLOW.yaml...`: the workflows as
A2A agents. Any of them on an address other than loopback only with a
token."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from flowrun.cli.common import fail, reported
from flowrun.cli.run_options import Command, RunArgs, run_options
from flowrun.cli.worker_cmd import WorkerArgs, load_served, queue_option, worker_options

if TYPE_CHECKING:
    import socket

    from starlette.types import ASGIApp

    from flowrun.api import Workflow
    from flowrun.runtime.options import RunOptions
    from flowrun.serve.served_runs import ServedRuns

TOKEN_ENV = "FLOWRUN_MCP_TOKEN"
HTTP_TOKEN_ENV = "FLOWRUN_HTTP_TOKEN"
A2A_TOKEN_ENV = "FLOWRUN_A2A_TOKEN"


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
    import asyncio

    import uvicorn

    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


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
