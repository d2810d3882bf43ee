"""`flowrun run` (and the `flowrun WORKFLOW.yaml` shorthand), `flowrun resume`, `flowrun replay`:
the command line over the Python API, with progress on stderr and a summary on stdout."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import click

from flowrun.cli.common import read_in_background, reported, verbosity, warn_skipped
from flowrun.cli.input_args import parse_input_args
from flowrun.cli.pause_key import HINT, PauseKey, terminal_pause
from flowrun.cli.run_options import SANDBOX_HELP, SANDBOX_MODES, YES_HELP, RunArgs, run_options
from flowrun.pinned import read_json_object
from flowrun.records import UsageRecord

if TYPE_CHECKING:
    from flowrun.api import ReplayResult, RunResult
    from flowrun.cli.views.progress import Progress
    from flowrun.events import Event
    from flowrun.manifest.specs import InputSpec
    from flowrun.runtime.loop.approvals import ApprovalRequest, Approver

R = TypeVar("R")
RESUME_HINT = "the run folder is kept: continue with `flowrun resume RUN_DIR`"
# resume and replay change a recorded run: their flags are their own
sandbox_option = click.option("--sandbox", "sandbox", type=SANDBOX_MODES, default=None, help=SANDBOX_HELP)
yes_option = click.option("-y", "--yes", is_flag=True, help=YES_HELP)


@click.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []}
)
@click.argument("workflow", required=False, type=click.Path(path_type=Path))
@run_options(
    "dry_run",
    "model",
    "overrides",
    "runs_dir",
    "run_id",
    "workdir",
    "inputs_file",
    "stream",
    "no_thinking",
    "estimate",
    "quiet",
    "verbose",
    "sandbox",
    "yes",
    "decisions",
    "decide_within",
    "memory_dir",
)
@click.option("-h", "--help", "show_help", is_flag=True, help="Show this message and the workflow's inputs.")
@click.pass_context
def run(ctx: click.Context, workflow: Path | None, show_help: bool, run_args: RunArgs) -> None:
    """Run WORKFLOW.yaml; each of its inputs is an option (--question "...", --question @FILE)."""
    folder: list[Path] = []  # the run folder, once it is known
    with reported(run_args.verbose, lambda: interrupted_hint(folder)):
        workflow = workflow_or_help(ctx, workflow, show_help)
        from flowrun.api import load

        options = run_args.options()
        # the SDK starts importing now, while the run is set up, unless nothing will be sent
        wf = load(workflow, list(options.overrides), prefetch=not (options.dry_run or run_args.estimate))
        warn_skipped(wf.diagnostics)
        inputs = parse_input_args(wf, list(ctx.args), run_args.inputs_file)
        if run_args.estimate:  # the preview instead of the run: nothing is sent
            from flowrun.cli.views.cost_view import estimate

            click.echo(estimate(wf, options, inputs, run_args.runs_dir))
            sys.exit(0)
        run_id = run_args.folder_name(wf.name)
        folder.append(run_args.runs_dir / run_id)
        level = run_args.verbosity
        pause = terminal_pause()
        result = _with_progress(
            level,
            lambda on_event, progress: wf.run(
                inputs,
                options,
                runs_dir=run_args.runs_dir,
                run_id=run_id,
                on_event=on_event,
                ask_user=terminal_asker(pause) if sys.stdin.isatty() else None,
                approve=terminal_approver(progress, pause),
                interject=pause,
            ),
            pause=pause,
        )
        print_summary(result, level, wf.spec.output)
    sys.exit(result.exit_code)


def interrupted_hint(folder: list[Path]) -> str:
    """After Ctrl-C or SIGTERM: how to continue, or that nothing was started."""
    if folder and any((folder[0] / name).exists() for name in ("run.json", "events.jsonl")):
        return f"the run folder is kept: continue with `flowrun resume {folder[0]}`"
    return "nothing was started: no run folder was made"


@click.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "-m",
    "--message",
    metavar="TEXT",
    help="An instruction to the entry agent (or the chat's agent) where the run stopped; a finished "
    "run continues with it.",
)
@click.option("-q", "--quiet", is_flag=True, help="Print only the final summary.")
@click.option("-v", "--verbose", is_flag=True, help="Print every model call and tool call.")
@sandbox_option
@yes_option
def resume(
    run_dir: Path, message: str | None, quiet: bool, verbose: bool, sandbox: str | None, yes: bool
) -> None:
    """Continue a stopped or waiting run from its event log (a chat goes on).

    A stopped run (a crash, a kill, Ctrl-C) goes on where its log ends; a waiting one goes on
    with the decisions taken meanwhile (`flowrun approve`, `flowrun answer`), those past their
    deadline denied first, and waits again for any still open (exit 75). On a terminal, open
    approvals and questions are asked there."""
    with reported(verbose, f"continue with `flowrun resume {run_dir}`"):
        from flowrun.api import resume as resume_run
        from flowrun.cli.chat_input import chat_reader, is_chat
        from flowrun.cli.env_files import load_env_files

        load_env_files([recorded_workflow(run_dir)])

        level = verbosity(quiet, verbose)
        chatting = message is None and is_chat(run_dir)
        pause = None if chatting else terminal_pause()  # a chat reads its own lines
        ask = terminal_asker(pause) if sys.stdin.isatty() else None
        if message is not None and not message.strip():
            from flowrun.errors import UsageError

            raise UsageError("--message is empty", "give the instruction as text")
        result = _with_progress(
            level,
            lambda on_event, progress: resume_run(
                run_dir,
                on_event=on_event,
                ask_user=ask,
                approve=terminal_approver(progress, pause),
                message=message,
                read=chat_reader(progress) if chatting else None,
                interject=pause,
                # what is not given stays as the run recorded it
                verbosity=1 if verbose else None,
                sandbox=sandbox,
                yes=True if yes else None,
            ),
            live=not chatting,
            pause=pause,
        )
        if result.message == "already completed; nothing to resume":
            click.echo(f"{run_dir} already completed; nothing to resume")
        else:
            print_summary(result, level, None)
    sys.exit(result.exit_code)


@click.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--into", type=click.Path(file_okay=False, path_type=Path), help="Folder for the replay.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the final summary.")
@click.option("-v", "--verbose", is_flag=True, help="Print every model call and tool call.")
@click.option(
    "--diff",
    is_flag=True,
    help="Report which step first differs from the recording (system prompt, tools, history) and how; "
    "replays into a temporary folder unless --into is given.",
)
@click.option(
    "--memory",
    type=click.Choice(["recorded", "current"]),
    default="recorded",
    show_default=True,
    help="The agents' memories as the run saw them, or as they are now (a copy: never changed), so "
    "--diff names a memory change as the cause of the step it changes.",
)
@sandbox_option
def replay(
    run_dir: Path, into: Path | None, quiet: bool, verbose: bool, diff: bool, memory: str, sandbox: str | None
) -> None:
    """Re-run a recorded run offline from its event log; report the first differing step."""
    with reported(verbose):
        from flowrun.api import replay as replay_run

        level = -1 if diff and not verbose else verbosity(quiet, verbose)  # --diff: only the report
        result = _with_progress(
            level,
            lambda on_event, progress: replay_run(
                run_dir,
                into=into,
                on_event=on_event,
                verbosity=1 if verbose else 0,
                sandbox=sandbox,
                diff=diff,
                memory="current" if memory == "current" else "recorded",
            ),
        )
        if diff:
            sys.exit(diff_report(result))
        print_summary(result, level, None)
        for line in result.differences:
            click.echo(f"  {line}", err=True)
    sys.exit(replay_exit(result))


def recorded_workflow(run_dir: Path) -> Path | None:
    """The workflow file a run recorded (for the `.env` next to it), if run.json names one."""
    named = read_json_object(run_dir / "run.json").get("workflow_file")
    return Path(named) if isinstance(named, str) and named else None


def diff_report(result: ReplayResult) -> int:
    """`replay --diff`: the first diverging step and what differs there, or that none does."""
    if result.divergence is None:
        if result.status != result.recorded_status:
            click.echo(f"no model call diverged, but the replay ended {result.status}: {result.message}")
            return 1
        click.echo("no step diverges: every model call matched the recording (system prompt, tools, history)")
        return replay_exit(result)
    click.echo(result.divergence["message"])
    for line in result.differences:
        click.echo(f"  {line}")
    return 1


def replay_exit(result: ReplayResult) -> int:
    if result.output_reproduced is not None:
        output = result.declared_output or "the output"
        state = "reproduced" if result.output_reproduced else "DIFFERS from the recording"
        click.echo(f"output {state}: {output}")
        return result.exit_code if result.output_reproduced else 1
    if result.status != result.recorded_status:
        click.echo(f"replay ended {result.status}; the recorded run ended {result.recorded_status}", err=True)
        return result.exit_code or 1
    return result.exit_code


# ---------------------------------------------------------------- helpers


def _with_progress(
    level: int,
    start: Callable[[Callable[[Event], None], Progress | None], Coroutine[object, object, R]],
    live: bool = True,
    pause: PauseKey | None = None,
) -> R:
    """Run the API call with the progress display (and the warnings, even with -q) subscribed;
    always close the display. `live=False`: plain lines even on a terminal (a chat reads input).
    `pause`: the run's pause key listens meanwhile, and the terminal is always given back."""
    from flowrun.cli.run_signals import run_until_signal  # asyncio: not at import time
    from flowrun.redaction import Redactor

    redact = Redactor().text
    progress: Progress | None = None
    if level >= 0:  # -q shows no progress: rich is not even imported
        from flowrun.cli.views.progress import make_progress

        progress = make_progress(level, redact, live=live)

    def on_event(event: Event) -> None:
        warning = warning_line(event, redact)
        if warning is not None:
            if progress is not None:
                with progress.paused():
                    click.echo(warning, err=True)
            else:
                click.echo(warning, err=True)
        if progress is not None:
            progress(event)

    if pause is not None:
        pause.progress = progress
        if level >= 0:
            click.echo(HINT, err=True)
        pause.start()
    try:
        return run_until_signal(lambda: start(on_event, progress))
    finally:
        if pause is not None:
            pause.close()
        if progress is not None:
            progress.close()


def warning_line(event: Event, redact: Callable[[str], str]) -> str | None:
    """The line printed whatever the verbosity: the sandbox is not confining the tools."""
    from flowrun.events import SandboxUnavailableEvent

    if not isinstance(event, SandboxUnavailableEvent):
        return None
    what = (
        "tools run UNCONFINED (sandbox: auto)"
        if event.unconfined
        else "the sandboxed tools answer SANDBOX_UNAVAILABLE (dry run)"
    )
    return redact(f"warning: the sandbox cannot start, {what}: {event.reason}")


def print_summary(result: RunResult, level: int, declared_output: str | None) -> None:
    if level >= 0:
        click.echo("")
        click.echo(usage_table(result.usage))
    click.echo(f"status: {result.status}")
    click.echo(f"run folder: {os.path.relpath(result.run_dir)}")
    if result.output:
        click.echo(f"output: {os.path.relpath(result.output)}")
    elif declared_output:
        click.echo(f"output: {declared_output} was not written")
    if result.status == "waiting":
        print_waiting(result)
    elif result.status != "completed" and result.message:
        click.echo(f"error: {result.message.splitlines()[0][:500]}", err=True)


def print_waiting(result: RunResult) -> None:
    """What a waiting run waits for, and how to decide (after `status: waiting`)."""
    from flowrun.redaction import redact
    from flowrun.runtime.durable.decisions import handle, how_to_decide

    for pending in result.pending:
        click.echo(redact(f"waiting for: {handle(pending, result.pending)}: {pending.describe()}"))
    click.echo(redact(how_to_decide(os.path.relpath(result.run_dir), result.pending)), err=True)


def usage_table(usage: UsageRecord) -> str:
    """Tokens and cost per agent and model (from usage.json's shape)."""
    rows = [
        f"{'agent':<16} {'model':<28} {'calls':>5} {'input':>9} {'output':>8} {'cached':>8} {'cost $':>9}"
    ]
    for line in usage.get("by_agent_model", []):
        u = line.get("usage", {})
        cost = f"{line['cost_usd']:.4f}" if line.get("cost_usd") is not None else "unknown"
        model = str(line["model"])[:28]
        rows.append(
            f"{line['agent']:<16} {model:<28} {line['calls']:>5} {u.get('input_tokens', 0):>9} "
            f"{u.get('output_tokens', 0):>8} {u.get('cache_read_tokens', 0):>8} {cost:>9}"
        )
    total_cost = usage.get("total_cost_usd")
    total = f"${total_cost:.4f}" if total_cost is not None else "unknown"
    rows.append(f"total tokens {usage.get('total_tokens', 0)}, cost {total}")
    return "\n".join(rows)


def workflow_or_help(ctx: click.Context, workflow: Path | None, show_help: bool) -> Path:
    """The workflow a command (`run`, `chat`) runs, its folder's .env files loaded; with -h (or
    without a workflow) the command's help and the workflow's inputs, and exit 0 (2)."""
    if show_help or workflow is None:
        click.echo(ctx.get_help())
        if workflow is not None and workflow.is_file():
            click.echo("\n" + workflow_help(workflow))
        sys.exit(0 if show_help else 2)
    from flowrun.cli.env_files import load_env_files

    load_env_files([workflow])
    return workflow


def workflow_help(path: Path) -> str:
    from flowrun.api import load

    wf = load(path, prefetch=False)
    lines = [f"Workflow '{wf.name}': {(wf.spec.description or '').strip()}", "Inputs:"]
    for name, inp in wf.inputs.items():
        lines.append(f"  --{name} {inp.type.upper():<8} {inp.description or ''} ({_need(inp)})")
    return "\n".join(lines)


def _need(inp: InputSpec) -> str:
    return "required" if inp.is_required else f"default {inp.default!r}"


def terminal_approver(progress: Progress | None, pause: PauseKey | None = None) -> Approver | None:
    """On a terminal: y/n/later for each `approve: ask` call, the live panel paused (and the
    pause key's hold on the terminal released) meanwhile (later: the run waits for `flowrun
    approve`). Without one: None, so such calls wait (or, with --decisions refuse, are refused;
    --yes approves them)."""
    if not sys.stdin.isatty():
        return None
    from flowrun.redaction import Redactor

    redact = Redactor().text

    def ask(request: ApprovalRequest) -> bool | None:
        shown = redact(", ".join(f"{k}={v!r}" for k, v in request.arguments.items()))
        if len(shown) > 1000:
            shown = shown[:1000] + "…"
        display = progress.paused() if progress is not None else contextlib.nullcontext()
        with display, pause.suspended() if pause is not None else contextlib.nullcontext():
            print(f"\n? {request.agent} wants to call {request.tool}({shown})", file=sys.stderr)
            print("  allow it? [y/N/later] ", end="", file=sys.stderr, flush=True)
            answer = sys.stdin.readline().strip().lower()
        if answer in ("l", "later"):
            return None  # the run waits for `flowrun approve`
        return answer in ("y", "yes")

    async def approve(request: ApprovalRequest) -> bool | None:
        return await read_in_background(lambda: ask(request))

    approve.decided_by = "user"  # type: ignore[attr-defined]
    return approve


def terminal_asker(pause: PauseKey | None) -> Callable[[str], Coroutine[object, object, str | None]]:
    """ask_user on a terminal, the pause key's hold on it released while the answer is typed."""
    if pause is None:
        return ask_on_terminal

    async def ask(question: str) -> str | None:
        with pause.suspended():
            return await ask_on_terminal(question)

    return ask


async def ask_on_terminal(question: str) -> str | None:
    """ask_user on an interactive run: the question on stderr, the answer from stdin; the
    line `/later`, or the end of the terminal's input (Ctrl-D: nobody can answer now), puts it
    off (None: the run waits for `flowrun answer`)."""

    def ask() -> str | None:
        print(f"\n? {question}", file=sys.stderr)
        print("  (your answer, or /later to answer it with `flowrun answer`)", file=sys.stderr, flush=True)
        raw = sys.stdin.readline()
        if not raw:  # the input has ended (an empty line is "\n")
            print("  (no more input: the run waits for `flowrun answer`)", file=sys.stderr, flush=True)
            return None
        line = raw.rstrip("\n")
        return None if line.strip() == "/later" else line

    return await read_in_background(ask)


ask_on_terminal.decided_by = "user"  # type: ignore[attr-defined]
