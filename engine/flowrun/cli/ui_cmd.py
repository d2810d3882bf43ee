"""`flowrun ui [WORKFLOW.yaml...]`: the runs API of `serve http` with the web UI's pages, on
127.0.0.1 by default; it prints the address to open (with the token in its fragment) and opens
a browser only with --open. It is `flowrun serve http` (cli/serve_cmd.py) under another name."""

from __future__ import annotations

from pathlib import Path

import click

from flowrun.cli.run_options import RunArgs, run_options

DEFAULT_PORT = 8321


@click.command()
@click.argument("workflows", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address to listen on; another than loopback needs a token.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="The port to listen on (0: any free one).",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The token every request must send (the pages take it from the printed address), read "
    "from this file; default: $FLOWRUN_HTTP_TOKEN.",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the runs list in the default browser.")
@run_options("runs_dir", "dry_run", "model", "sandbox", "decisions", "decide_within")
def ui(
    workflows: tuple[Path, ...],
    host: str,
    port: int,
    token_file: Path | None,
    open_browser: bool,
    run_args: RunArgs,
) -> None:
    """Serve the web UI: runs, their timelines and conversations, decisions; WORKFLOWs to start."""
    from flowrun.cli.serve_cmd import HTTP_TOKEN_ENV, http_token, serve_api

    serve_api(workflows, host, port, http_token(token_file, HTTP_TOKEN_ENV, host), (), run_args, open_browser)
