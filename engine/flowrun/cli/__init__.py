"""The `flowrun` command line: the only layer that prints. Each command lives in its own module,
listed in COMMANDS and imported only when it runs (`flowrun --help` imports none of them), and
heavy modules (the API, pydantic, rich, SDKs) are imported inside the commands, so the command
line starts fast. `entry` is the console script: it leaves without the interpreter's teardown."""

from __future__ import annotations

import contextlib
import importlib
import sys
from pathlib import Path
from typing import NamedTuple

import click

from flowrun import collector
from flowrun._version import __version__
from flowrun.cli.exit import PIPE_CLOSED, leave, output_closed


class Registered(NamedTuple):
    target: str  # "module:command"
    summary: str  # the first line of the command's docstring (a test keeps them equal)


COMMANDS: dict[str, Registered] = {
    "run": Registered(
        "flowrun.cli.run_cmd:run",
        'Run WORKFLOW.yaml; each of its inputs is an option (--question "...", --question @FILE).',
    ),
    "resume": Registered(
        "flowrun.cli.run_cmd:resume",
        "Continue a stopped or waiting run from its event log (a chat goes on).",
    ),
    "replay": Registered(
        "flowrun.cli.run_cmd:replay",
        "Re-run a recorded run offline from its event log; report the first differing step.",
    ),
    "approve": Registered(
        "flowrun.cli.decide_cmd:approve",
        "Allow or deny a call (or more budget) a waiting run waits for, then continue it.",
    ),
    "answer": Registered(
        "flowrun.cli.decide_cmd:answer",
        "Answer an agent's question a waiting run waits for (TEXT; @FILE reads it), then continue it.",
    ),
    "chat": Registered(
        "flowrun.cli.chat_cmd:chat",
        "Talk to one agent of WORKFLOW.yaml and its tools; Ctrl-D or /exit ends (resumable).",
    ),
    "runs": Registered(
        "flowrun.cli.inspect_cmd:runs", "List runs: id, workflow, status, steps, tokens, cost, duration."
    ),
    "show": Registered(
        "flowrun.cli.inspect_cmd:show", "Print a run's tree of agents and tool calls with timings and tokens."
    ),
    "validate": Registered(
        "flowrun.cli.validate_cmd:validate",
        "Check manifests: YAML, schema, and cross-references (files or folders; default: .).",
    ),
    "batch": Registered(
        "flowrun.cli.batch_cmd:batch",
        "Run WORKFLOW.yaml once per item of ITEMS (JSONL, JSON or CSV), resumably.",
    ),
    "schema": Registered(
        "flowrun.cli.schema_cmd:schema", "Print the JSON Schema of a manifest KIND (default: workflow)."
    ),
    "test": Registered(
        "flowrun.cli.test_cmd:test",
        "Replay recorded runs offline and check what test files (*.flowrun.yaml) expect.",
    ),
    "eval": Registered(
        "flowrun.cli.eval_cmd:eval_",
        "Run an eval set's cases, grade the runs, report scores (exit 1 below a threshold).",
    ),
    "record": Registered(
        "flowrun.cli.test_cmd:record", "Run a workflow live and keep the run as the cassette of TEST_FILE."
    ),
    "init": Registered(
        "flowrun.cli.init_cmd:init",
        "Write a runnable project from a shipped example into DIR (new or empty; default: .).",
    ),
    "new": Registered(
        "flowrun.cli.init_cmd:new",
        "Add one agent, tool or skill to a project: a file that validates, never over one.",
    ),
    "cost": Registered(
        "flowrun.cli.cost_cmd:cost",
        "Print a run's worst-case cost per agent and sub-agent tree, and earlier runs' spread.",
    ),
    "serve": Registered("flowrun.cli.serve_cmd:serve", "Serve workflows to other programs."),
    "ui": Registered(
        "flowrun.cli.ui_cmd:ui",
        "Serve the web UI: runs, their timelines and conversations, decisions; WORKFLOWs to start.",
    ),
    "export": Registered(
        "flowrun.cli.export_cmd:export", "Export a recorded run or a workflow to other tools."
    ),
    "memory": Registered(
        "flowrun.cli.memory.commands:memory",
        "Show, search, edit, forget or export an agent's memory (its `memory:`, kept across runs).",
    ),
    "import": Registered(
        "flowrun.cli.import_cmd:import_",
        "Write a flowrun project from another framework's files (CrewAI, ADK, docker-agent, ...).",
    ),
    "worker": Registered(
        "flowrun.cli.serve_cmd:worker",
        "Take runs of WORKFLOWS from a queue and execute them until SIGTERM (which drains).",
    ),
    "workers": Registered(
        "flowrun.cli.serve_cmd:workers",
        "List a queue's workers: their state, their runs and their last heartbeat.",
    ),
}


class FlowrunGroup(click.Group):
    """Commands imported on first use; `flowrun WORKFLOW.yaml --input x` is short for
    `flowrun run WORKFLOW.yaml --input x`."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        registered = COMMANDS.get(cmd_name)
        if registered is None:
            return None
        module, _, name = registered.target.partition(":")
        command: click.Command = getattr(importlib.import_module(module), name)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list from the table, without importing any command."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [
            (name, click.Command(name, help=COMMANDS[name].summary).get_short_help_str(limit))
            for name in names
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """An unknown command gets a did-you-mean (`flowrun valdate` -> 'validate')."""
        if args and args[0] not in COMMANDS and not args[0].startswith("-"):
            import difflib

            close = difflib.get_close_matches(args[0], COMMANDS, n=1, cutoff=0.6)
            if close:
                ctx.fail(f"No such command {args[0]!r}. Did you mean {close[0]!r}?")
        return super().resolve_command(ctx, args)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in COMMANDS and not args[0].startswith("-"):
            first = args[0]
            if first.endswith((".yaml", ".yml")) or Path(first).is_file() or _foreign_folder(first):
                args = ["run", *args]
        return super().parse_args(ctx, args)


def _foreign_folder(arg: str) -> bool:
    """A folder that is another framework's project (a CrewAI crew, an ADK agent): `flowrun
    FOLDER --input x` runs it."""
    if not Path(arg).is_dir():
        return False
    from flowrun.manifest.foreign.registry import detect

    return detect(Path(arg)) is not None


@click.group(cls=FlowrunGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="flowrun")
def main() -> None:
    """flowrun: run LLM agent teams described in YAML.

    \b
    flowrun WORKFLOW.yaml --INPUT VALUE ...   run a workflow (same as `flowrun run`)
    flowrun chat WORKFLOW.yaml [--agent NAME]  talk to one agent and its tools
    flowrun validate [PATH...]                 check manifests
    """


def entry() -> None:
    """The console script (and `python -m flowrun`): run the command line, then leave."""
    collector.tune(start_up="flowrun.api" not in sys.modules)  # (imported already: a test's fork server)
    _printable_streams()
    try:
        main.main(prog_name="flowrun")
    except SystemExit as e:
        leave(_pipe_closed_or(e.code))
    leave(0)


def _pipe_closed_or(code: object) -> object:
    """click ends a command whose standard output lost its reader with 1; flowrun ends it as
    any program `head` cut off is (141)."""
    return PIPE_CLOSED if code == 1 and output_closed() else code


def _printable_streams() -> None:
    """Whatever a run's records hold can be printed (a lone surrogate a model sent in a tool
    call's arguments, which no encoding can write, is shown as its escape `\\ud800`): the
    standard streams escape what they cannot encode instead of failing the command."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)  # (a stream replaced by something else)
        if reconfigure is not None:
            with contextlib.suppress(ValueError):
                reconfigure(errors="backslashreplace")
