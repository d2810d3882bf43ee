"""`flowrun serve mcp WORKFLOW.yaml...`: the workflows as MCP tools, over stdio (default) or
streamable HTTP (`--http PORT`)."""

from __future__ import annotations

from pathlib import Path

import click

from flowrun.cli.common import fail, reported
from flowrun.cli.run_options import RunArgs, run_options


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
@click.option("--host", default="127.0.0.1", show_default=True, help="With --http: the address to listen on.")
@run_options(
    "runs_dir",
    "dry_run",
    "model",
    "sandbox",
    "yes",
    help={
        "dry_run": "Every call uses the offline test provider.",
        "model": "Use this model for every agent of every call.",
        "sandbox": "Override every `sandbox:` mode.",
        "yes": "Approve every call of an `approve: ask` tool (nobody can answer).",
    },
)
def mcp(workflows: tuple[Path, ...], port: int | None, host: str, run_args: RunArgs) -> None:
    """Serve WORKFLOWS as MCP tools: one tool per workflow, its inputs as parameters."""
    import asyncio
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        fail("`flowrun serve mcp` needs the `mcp` package", "pip install 'flowrun[mcp]'")
    from flowrun.api import load
    from flowrun.serve.mcp_server import WorkflowServer, bind, serve_http, serve_stdio

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
            asyncio.run(serve_http(server, sock, host))
        except KeyboardInterrupt:
            return
