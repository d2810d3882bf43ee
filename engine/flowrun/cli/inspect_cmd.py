"""`flowrun runs` and `flowrun show`: looking at run folders (see run_views.py)."""

from __future__ import annotations

from pathlib import Path

import click

from flowrun.cli.common import reported

DEFAULT_LIMIT = 200


@click.command()
@click.option(
    "--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("runs"), show_default=True
)
@click.option("--workflow", metavar="NAME", help="Only the runs of this workflow.")
@click.option(
    "--status",
    "statuses",
    multiple=True,
    metavar="STATUS",
    help="Only runs in this state (running, waiting, completed, failed, cancelled, interrupted, ...; "
    "repeatable).",
)
@click.option(
    "--since", metavar="WHEN", help="Only runs started since: a date (2025-01-31), or 30m, 2h, 7d ago."
)
@click.option("--search", "q", metavar="TEXT", help="Only runs whose id, workflow or inputs contain TEXT.")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=DEFAULT_LIMIT,
    show_default=True,
    help="Show at most this many of the newest runs (0: all).",
)
def runs(
    runs_dir: Path,
    workflow: str | None,
    statuses: tuple[str, ...],
    since: str | None,
    q: str | None,
    limit: int,
) -> None:
    """List runs: id, workflow, status, steps, tokens, cost, duration."""
    with reported(verbose=False):
        from flowrun.cli.views.runs_table import format_runs, output_width, since_time
        from flowrun.runtime.durable.runs_index import list_runs as index_list

        page = index_list(
            runs_dir,
            workflow=workflow,
            status=list(statuses) or None,
            since=since_time(since),
            q=q,
            limit=limit or None,
        )
        click.echo(format_runs(page, width=output_width()))
        if limit and page.total > len(page):
            click.echo(f"the newest {len(page)} of {page.total:,} runs; --limit 0 shows them all", err=True)


@click.command()
@click.argument("run_dir", type=click.Path(exists=True, path_type=Path))
@click.option("--prompts", is_flag=True, help="Print each agent's system prompt and tool list instead.")
@click.option(
    "--messages",
    is_flag=True,
    help="Print each agent's conversation instead: system prompt, user turns, answers, tool calls "
    "and results, a sub-agent's under the call that ran it.",
)
@click.option("--agent", metavar="NAME", help="With --prompts or --messages: only this agent's instances.")
@click.option("--full", is_flag=True, help="With --messages: print long texts whole instead of folded.")
@click.option("--json", "as_json", is_flag=True, help="With --messages: the conversations as JSON.")
@click.option(
    "--html",
    "html",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Write the run as one self-contained HTML file instead (timeline, conversations, usage, "
    "outputs; opens with no network), to attach to a CI artifact or a bug report.",
)
def show(
    run_dir: Path,
    prompts: bool,
    messages: bool,
    agent: str | None,
    full: bool,
    as_json: bool,
    html: Path | None,
) -> None:
    """Print a run's tree of agents and tool calls with timings and tokens."""
    with reported(verbose=False):
        from flowrun.errors import UsageError

        if prompts and messages:
            raise UsageError("--prompts and --messages are two views", "give one of them")
        if html is not None:
            if prompts or messages or agent is not None or full or as_json:
                raise UsageError("--html writes the whole run", f"flowrun show {run_dir} --html {html}")
            from flowrun.serve.ui.report import write_report

            click.echo(f"wrote {write_report(run_dir, html)}")
            return
        if agent is not None and not (prompts or messages):
            raise UsageError(
                "--agent goes with --prompts or --messages", "flowrun show RUN_DIR --messages --agent NAME"
            )
        if (full or as_json) and not messages:
            flag = "--full" if full else "--json"
            raise UsageError(f"{flag} goes with --messages", f"flowrun show RUN_DIR --messages {flag}")
        if messages:
            _show_messages(run_dir, agent, full, as_json)
            return
        from flowrun.cli.views.run_views import show_prompts, show_run
        from flowrun.cli.views.runs_table import output_width

        click.echo(show_prompts(run_dir, agent) if prompts else show_run(run_dir, width=output_width()))


def _show_messages(run_dir: Path, agent: str | None, full: bool, as_json: bool) -> None:
    from flowrun.cli.views.messages_view import format_messages, messages_json

    if as_json:
        import json

        click.echo(json.dumps(messages_json(run_dir, agent), ensure_ascii=False, indent=2))
    else:
        click.echo(format_messages(run_dir, agent, full))
