"""`flowrun ui [WORKFLOW.yaml...]`: the runs API of `serve http` with the web UI's pages, on
127.0.0.1 by default; it prints the address to open (with the token in its fragment) and opens
a browser only with --open. The server itself is `flowrun.serve.http_app` (HTTP_CONTRACT.md)."""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path

import click

from flowrun.cli.common import fail, reported
from flowrun.cli.run_options import RunArgs, run_options

TOKEN_ENV = "FLOWRUN_HTTP_TOKEN"
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
    help=f"The token every request must send (the pages take it from the printed address), read "
    f"from this file; default: ${TOKEN_ENV}.",
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
    if importlib.util.find_spec("flowrun.serve.http_app") is None:
        fail(
            "the HTTP server is not available in this build (flowrun.serve.http_app is missing)",
            "flowrun ui needs `flowrun serve http`; install a flowrun that has it",
            2,
        )
    for name in ("starlette", "uvicorn"):
        if importlib.util.find_spec(name) is None:
            fail(f"`flowrun ui` needs the `{name}` package", "pip install 'flowrun[serve]'", 2)
    with reported(False):
        _serve(workflows, host, port, _token(token_file, host), open_browser, run_args)


def _serve(
    workflows: tuple[Path, ...],
    host: str,
    port: int,
    token: str | None,
    open_browser: bool,
    run_args: RunArgs,
) -> None:
    import socket
    import webbrowser

    import uvicorn

    from flowrun.api import load
    from flowrun.cli.env_files import load_env_files

    load_env_files(workflows)
    loaded = [load(path) for path in workflows]
    http_app = importlib.import_module("flowrun.serve.http_app")  # the other half of issue 22's server
    app = http_app.create_app(loaded, run_args.runs_dir, run_args.options(), token)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        fail(
            f"cannot listen on {host}:{port}: {e.strerror or e}", "choose another --port (0: any free one)", 2
        )
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{sock.getsockname()[1]}/" + (f"#token={token}" if token else "")
    click.echo(f"flowrun ui at {url}", err=True)
    if open_browser:
        webbrowser.open(url)
    try:
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    except KeyboardInterrupt:
        return


def _token(token_file: Path | None, host: str) -> str | None:
    """The token requests must carry: the file's content, else $FLOWRUN_HTTP_TOKEN; an address
    other than loopback without one is refused."""
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
            f"--host {host} would serve the runs, and the workflows' tools, to the network without a token",
            f"set {TOKEN_ENV} or give --token-file FILE (make one with {make})",
            2,
        )
    if len(token) < MIN_TOKEN_CHARS:
        fail(f"the token in {where} is shorter than {MIN_TOKEN_CHARS} characters", f"make one with {make}", 2)
    return token
