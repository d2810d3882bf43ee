"""`flowrun chat WORKFLOW.yaml [--agent NAME]`: a conversation with one agent and its tools on
the terminal (or over stdin), saved as a normal run folder; `flowrun resume RUN_DIR` goes on
with it. The agent's answers go to stdout, the prompt and progress lines to stderr."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from flowrun.cli.chat_input import chat_reader
from flowrun.cli.common import reported
from flowrun.cli.input_args import parse_input_args
from flowrun.cli.run_cmd import (
    _with_progress,
    ask_on_terminal,
    interrupted_hint,
    print_summary,
    terminal_approver,
    workflow_or_help,
)
from flowrun.cli.run_options import RunArgs, run_options


@click.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []}
)
@click.argument("workflow", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--agent", metavar="NAME", help="The agent to talk to (default: the workflow's entry agent).")
@run_options(
    "dry_run",
    "model",
    "overrides",
    "runs_dir",
    "run_id",
    "workdir",
    "stream",
    "no_thinking",
    "quiet",
    "verbose",
    "sandbox",
    "yes",
    help={
        "dry_run": "Use the offline test provider.",
        "model": "As for `run`.",
        "overrides": "As for `run`.",
        "workdir": "As for `run`.",
        "no_thinking": "Switch every model's thinking off.",
        "quiet": "No progress lines, only the answers.",
    },
)
@click.option("-h", "--help", "show_help", is_flag=True, help="Show this message and the workflow's inputs.")
@click.pass_context
def chat(
    ctx: click.Context, workflow: Path | None, agent: str | None, show_help: bool, run_args: RunArgs
) -> None:
    """Talk to one agent of WORKFLOW.yaml and its tools; Ctrl-D or /exit ends (resumable)."""
    folder: list[Path] = []  # the run folder, once it is known (for the hint after Ctrl-C)
    with reported(run_args.verbose, lambda: interrupted_hint(folder)):
        workflow = workflow_or_help(ctx, workflow, show_help)
        from flowrun.api import load

        options = run_args.options()
        wf = load(workflow, list(options.overrides), prefetch=not options.dry_run)
        wf.chat_agent(agent)  # an unknown --agent is told before the banner
        inputs = parse_input_args(wf, list(ctx.args))
        run_id = run_args.folder_name(wf.name)
        folder.append(run_args.runs_dir / run_id)
        level = run_args.verbosity
        click.echo("chat: Ctrl-D or /exit ends; the run folder keeps the conversation", err=True)
        result = _with_progress(
            level,
            lambda on_event, progress: wf.chat(
                chat_reader(progress),
                inputs,
                options,
                agent=agent,
                runs_dir=run_args.runs_dir,
                run_id=run_id,
                on_event=on_event,
                ask_user=ask_on_terminal if sys.stdin.isatty() else None,
                approve=terminal_approver(progress),
            ),
            live=False,
        )
        print_summary(result, -1, None)
        click.echo(f"continue with: flowrun resume {result.run_dir}", err=True)
    sys.exit(result.exit_code)
