"""`flowrun chat WORKFLOW.yaml [--agent NAME]`: a conversation with one agent and its tools on
the terminal (or over stdin), saved as a normal run folder; `flowrun resume RUN_DIR` goes on
with it. The agent's answers go to stdout, the prompt and progress lines to stderr."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from flowrun.cli.chat_input import chat_reader
from flowrun.cli.common import reported, verbosity
from flowrun.cli.run_cmd import (
    _with_progress,
    ask_on_terminal,
    interrupted_hint,
    model_argument,
    parse_input_args,
    print_summary,
    sandbox_option,
    terminal_approver,
    yes_option,
)


@click.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []}
)
@click.argument("workflow", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--agent", metavar="NAME", help="The agent to talk to (default: the workflow's entry agent).")
@click.option("--dry-run", is_flag=True, help="Use the offline test provider.")
@click.option("--model", "model_override", metavar="[AGENT=]MODEL", multiple=True, help="As for `run`.")
@click.option("--set", "overrides", metavar="PATH=VALUE", multiple=True, help="As for `run`.")
@click.option(
    "--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"), show_default=True
)
@click.option("--run-id", help="Name of the run folder (default: timestamp + workflow name).")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), help="As for `run`.")
@click.option("--stream/--no-stream", default=None, help="Force streaming on or off for every model.")
@click.option("--no-thinking", is_flag=True, help="Switch every model's thinking off.")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines, only the answers.")
@click.option("-v", "--verbose", is_flag=True, help="Print every model call and tool call.")
@sandbox_option
@yes_option
@click.option("-h", "--help", "show_help", is_flag=True, help="Show this message and the workflow's inputs.")
@click.pass_context
def chat(
    ctx: click.Context,
    workflow: Path,
    agent: str | None,
    dry_run: bool,
    model_override: tuple[str, ...],
    overrides: tuple[str, ...],
    runs_dir: Path,
    run_id: str | None,
    workdir: Path | None,
    stream: bool | None,
    no_thinking: bool,
    quiet: bool,
    verbose: bool,
    sandbox: str | None,
    yes: bool,
    show_help: bool,
) -> None:
    """Talk to one agent of WORKFLOW.yaml and its tools; Ctrl-D or /exit ends (resumable)."""
    folder: list[Path] = []  # the run folder, once it is known (for the hint after Ctrl-C)
    with reported(verbose, lambda: interrupted_hint(folder)):
        if show_help:
            click.echo(ctx.get_help())
            sys.exit(0)
        from flowrun.api import load, new_run_id
        from flowrun.runtime.durable.run_folder import check_run_id

        wf = load(workflow, list(overrides))
        inputs = parse_input_args(wf, list(ctx.args))
        run_id = check_run_id(run_id) if run_id is not None else new_run_id(wf.name)
        folder.append(runs_dir / run_id)
        level = verbosity(quiet, verbose)
        click.echo("chat: Ctrl-D or /exit ends; the run folder keeps the conversation", err=True)
        result = _with_progress(
            level,
            lambda on_event, progress: wf.chat(
                chat_reader(progress),
                inputs,
                agent=agent,
                runs_dir=runs_dir,
                run_id=run_id,
                model=model_argument(model_override),
                dry_run=dry_run,
                stream=stream,
                on_event=on_event,
                ask_user=ask_on_terminal if sys.stdin.isatty() else None,
                verbosity=level,
                sandbox=sandbox,
                approve=terminal_approver(progress),
                yes=yes,
                no_thinking=no_thinking,
                workdir=workdir,
            ),
            live=False,
        )
        print_summary(result, -1, None)
        click.echo(f"continue with: flowrun resume {result.run_dir}", err=True)
    sys.exit(result.exit_code)
