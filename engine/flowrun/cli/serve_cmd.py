"""`flowrun serve mcp WORKFLOW.yaml...`: the workflows as MCP tools, over stdio (default) or
streamable HTTP (`--http PORT`; on an address other than loopback only with a token)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from flowrun.cli.common import fail, reported
from flowrun.cli.run_options import RunArgs, run_options

TOKEN_ENV = "FLOWRUN_MCP_TOKEN"


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
    from flowrun.api import load
    from flowrun.serve.mcp_server import WorkflowServer, bind, serve_http, serve_stdio

    token = _token(token_file, host) if port is not None else None
    with reported(False):
        from flowrun.cli.env_files import load_env_files

        load_env_files(workflows)
        options = run_args.options()
        loaded = [load(path) for path in workflows]
        names = [wf.name for wf in loaded]
        if len(set(names)) != len(names):
            fail("two workflows have the same name", "serve workflows with different `name:`s", 2)
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


def _token(token_file: Path | None, host: str) -> str | None:
    """The token HTTP requests must carry: the file's content, else $FLOWRUN_MCP_TOKEN; an
    address other than loopback without one is refused."""
    from flowrun.serve.mcp_server import MIN_TOKEN_CHARS, is_loopback

    make = "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as e:
            fail(f"cannot read --token-file {token_file}: {getattr(e, 'strerror', None) or e}", "", 2)
        where = f"--token-file {token_file}"
    else:
        token = os.environ.get(TOKEN_ENV, "").strip()
        where = TOKEN_ENV
    if not token:
        if is_loopback(host):
            return None
        fail(
            f"--host {host} would serve these workflows, and the tools of their agents, to the network "
            "without a token",
            f"set {TOKEN_ENV} or give --token-file FILE (make one with {make}); clients send "
            "`Authorization: Bearer TOKEN`",
            2,
        )
    if len(token) < MIN_TOKEN_CHARS:
        fail(f"the token in {where} is shorter than {MIN_TOKEN_CHARS} characters", f"make one with {make}", 2)
    return token
