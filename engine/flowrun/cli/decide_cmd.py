"""`flowrun approve` and `flowrun answer`: take a decision a waiting run waits for (an
`approve: ask` call, a budget under `on_budget: ask`, an `ask_user` question), record it in the
run's log with who took it and when, and continue the run from its log as `flowrun resume`
does (`--no-continue`: only record it)."""

from __future__ import annotations

import getpass
import sys
from pathlib import Path

import click

from flowrun.cli.common import reported, verbosity

RUN_DIR = click.Path(exists=True, file_okay=False, path_type=Path)
call_option = click.option(
    "--call",
    "call_id",
    metavar="ID",
    help="Which pending request: its call id, AGENT_ID/CALL_ID or its ref AGENT_ID/CALL_ID#ATTEMPT (that "
    "request only); needed when several are pending.",
)
reason_option = click.option("--reason", metavar="TEXT", help="Why; a denial's reason reaches the agent.")
no_continue_option = click.option(
    "--no-continue", is_flag=True, help="Only record the decision; `flowrun resume RUN_DIR` continues later."
)
quiet_option = click.option("-q", "--quiet", is_flag=True, help="Print only the final summary.")
verbose_option = click.option("-v", "--verbose", is_flag=True, help="Print every model call and tool call.")


@click.command()
@click.argument("run_dir", type=RUN_DIR)
@call_option
@click.option(
    "--allow/--deny", "allow", default=None, help="Let the call run (or the budget grow), or refuse it."
)
@click.option(
    "--grant",
    type=float,
    metavar="AMOUNT",
    help="A budget decision: how much more of the limit (dollars, tokens, steps or seconds; default: as "
    "much again).",
)
@reason_option
@no_continue_option
@quiet_option
@verbose_option
def approve(
    run_dir: Path,
    call_id: str | None,
    allow: bool | None,
    grant: float | None,
    reason: str | None,
    no_continue: bool,
    quiet: bool,
    verbose: bool,
) -> None:
    """Allow or deny a call (or more budget) a waiting run waits for, then continue it."""
    with reported(verbose, f"continue with `flowrun resume {run_dir}`"):
        if allow is None:
            from flowrun.errors import UsageError

            raise UsageError("say --allow or --deny", f"`flowrun approve {run_dir} --allow`")
        level = verbosity(quiet, verbose)
        decide(run_dir, call_id, no_continue, level, allow=allow, grant=grant, reason=reason)


@click.command()
@click.argument("run_dir", type=RUN_DIR)
@click.argument("text")
@call_option
@no_continue_option
@quiet_option
@verbose_option
def answer(
    run_dir: Path, text: str, call_id: str | None, no_continue: bool, quiet: bool, verbose: bool
) -> None:
    """Answer an agent's question a waiting run waits for (TEXT; @FILE reads it), then continue it."""
    with reported(verbose, f"continue with `flowrun resume {run_dir}`"):
        from flowrun.manifest.inputs import value_from_arg

        given = str(value_from_arg("answer", text))
        decide(run_dir, call_id, no_continue, verbosity(quiet, verbose), answer=given)


def decide(
    run_dir: Path,
    call_id: str | None,
    no_continue: bool,
    level: int,
    *,
    allow: bool | None = None,
    grant: float | None = None,
    reason: str | None = None,
    answer: str | None = None,
) -> None:
    """Record the decision (by "cli", with the login name), then continue the run."""
    from flowrun.api import resume
    from flowrun.cli.run_cmd import _with_progress, ask_on_terminal, print_summary, terminal_approver
    from flowrun.runtime.decide import respond

    decision = respond(
        run_dir, call_id, allow=allow, answer=answer, grant=grant, reason=reason, by="cli", user=_login()
    )
    click.echo(f"decided: {decision.describe()}", err=True)
    if no_continue:
        click.echo(f"recorded; continue with `flowrun resume {run_dir}`", err=True)
        return
    result = _with_progress(
        level,
        lambda on_event, progress: resume(
            run_dir,
            on_event=on_event,
            ask_user=ask_on_terminal if sys.stdin.isatty() else None,
            approve=terminal_approver(progress),
        ),
    )
    print_summary(result, level, None)
    sys.exit(result.exit_code)


def _login() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (a container)
        return None
