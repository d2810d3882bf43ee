"""The run options of the commands that start runs (`run` and the `flowrun WORKFLOW.yaml`
shorthand, `chat`, `record`, `batch`, `serve mcp`), declared once:

    @click.command()
    @run_options("dry_run", "model", "sandbox", "yes", help={"dry_run": "Every call uses ..."})
    def command(run_args: RunArgs) -> None:
        options = run_args.options()          # the flowrun.RunOptions the flags make

`run_options(NAME, ...)` adds the click options a command has, in the order given (a command
keeps exactly the flags it has; `help` words one for it), and hands their values to the command
as one `run_args` parameter. `resume` and `replay` keep flags of their own: they change a
recorded run. Nothing heavy is imported here (`flowrun --help` stays fast): the options object is
made when a command runs."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from flowrun.cli.common import verbosity

if TYPE_CHECKING:
    from flowrun.runtime.options import RunOptions

SANDBOX_MODES = click.Choice(["required", "auto", "off"])
DECISION_MODES = click.Choice(["wait", "refuse"])
SANDBOX_HELP = (
    "Override every `sandbox:` mode: required, auto (unconfined with a warning when the sandbox "
    "cannot start) or off (tools run unconfined)."
)
YES_HELP = "Approve every call of an `approve: ask` tool without asking."
DECISIONS_HELP = (
    "What an `approve: ask` call, an ask_user question or an `on_budget: ask` budget does when nobody "
    "can answer now: wait (the run ends `waiting`, exit 75, until `flowrun approve`/`answer`) or "
    "refuse (the call is refused, the question unanswered, the budget stops the run)."
)
DECIDE_WITHIN_HELP = (
    "How long a decision may wait (90s, 30m, 2h, 1d); past it, pending approvals and budgets are "
    "denied and questions unanswered when the run is next answered or resumed (over "
    "`limits.decide_within_s`)."
)
FOLDER = click.Path(file_okay=False, path_type=Path)

# name (the command's parameter, and the RunArgs field) -> (flags, click.option's other arguments)
DECLARED: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "dry_run": (
        ("--dry-run",),
        {"is_flag": True, "help": "Use the offline test provider: checks wiring, costs nothing."},
    ),
    "model": (
        ("--model", "model"),
        {
            "metavar": "[AGENT=]MODEL",
            "multiple": True,
            "help": "Use this model (a workflow model name or provider:model) for every agent, or with "
            "AGENT= for one agent; repeatable.",
        },
    ),
    "overrides": (
        ("--set", "overrides"),
        {
            "metavar": "PATH=VALUE",
            "multiple": True,
            "help": "Change a manifest value for this run, e.g. agents.worker.max_steps=5 (VALUE is "
            "YAML); repeatable.",
        },
    ),
    "runs_dir": (("--runs-dir",), {"type": FOLDER, "default": Path("runs"), "show_default": True}),
    "run_id": (("--run-id",), {"help": "Name of the run folder (default: timestamp + workflow name)."}),
    "workdir": (
        ("--workdir",),
        {
            "type": FOLDER,
            "help": "Run the agents in this folder (made if missing, kept), confined to it; the run "
            "folder keeps the engine's files.",
        },
    ),
    "inputs_file": (
        ("--inputs", "inputs_file"),
        {
            "type": click.Path(dir_okay=False, path_type=Path),
            "help": "A YAML or JSON file of input values ({name: value}); --NAME options override it.",
        },
    ),
    "stream": (
        ("--stream/--no-stream",),
        {"default": None, "help": "Force streaming on or off for every model."},
    ),
    "no_thinking": (
        ("--no-thinking",),
        {
            "is_flag": True,
            "help": "Switch every model's thinking off (for proxies without it; OpenAI-compatible "
            "models send their `thinking_off` body).",
        },
    ),
    "estimate": (
        ("--estimate",),
        {
            "is_flag": True,
            "help": "Print the cost preview (worst case per agent and sub-agent tree, the limits "
            "that cap it, earlier runs' cost and duration) and send nothing, as `flowrun cost`.",
        },
    ),
    "quiet": (("-q", "--quiet"), {"is_flag": True, "help": "Print only the final summary."}),
    "verbose": (("-v", "--verbose"), {"is_flag": True, "help": "Print every model call and tool call."}),
    "sandbox": (("--sandbox", "sandbox"), {"type": SANDBOX_MODES, "default": None, "help": SANDBOX_HELP}),
    "yes": (("-y", "--yes"), {"is_flag": True, "help": YES_HELP}),
    "decisions": (
        ("--decisions",),
        {"type": DECISION_MODES, "default": "wait", "show_default": True, "help": DECISIONS_HELP},
    ),
    "decide_within": (("--decide-within",), {"metavar": "DURATION", "help": DECIDE_WITHIN_HELP}),
    "memory_dir": (
        ("--memory-dir",),
        {
            "type": FOLDER,
            "help": "Keep every memory the agents declare (but `run` ones) in DIR/SCOPE/NAME instead of its "
            "own folder: a scratch memory to try a workflow with (made if missing, kept).",
        },
    ),
}


@dataclass(frozen=True, slots=True)
class RunArgs:
    """What the run options of a command were given (those it lacks keep these defaults)."""

    dry_run: bool = False
    model: tuple[str, ...] = ()
    overrides: tuple[str, ...] = ()
    runs_dir: Path = Path("runs")
    run_id: str | None = None
    workdir: Path | None = None
    inputs_file: Path | None = None
    stream: bool | None = None
    no_thinking: bool = False
    estimate: bool = False  # print the cost preview instead of running (not a RunOptions field)
    quiet: bool = False
    verbose: bool = False
    sandbox: str | None = None
    yes: bool = False
    decisions: str = "wait"
    decide_within: str | None = None
    memory_dir: Path | None = None

    @property
    def verbosity(self) -> int:
        """The terminal's: -1 (-q), 0 or 1 (-v)."""
        return verbosity(self.quiet, self.verbose)

    def folder_name(self, workflow: str) -> str:
        """The run id: --run-id (checked: a name, not a path), else a new one for `workflow`."""
        from flowrun.api import new_run_id
        from flowrun.runtime.durable.run_folder import check_run_id

        return check_run_id(self.run_id) if self.run_id is not None else new_run_id(workflow, self.runs_dir)

    def options(self) -> RunOptions:
        """The flowrun.RunOptions these flags make (UsageError for a --model given twice)."""
        from flowrun.runtime.options import RunOptions, duration

        every, per_agent = split_models(self.model)
        return RunOptions(
            model=every,
            agent_models=per_agent,
            dry_run=self.dry_run,
            stream=self.stream,
            sandbox=self.sandbox,  # type: ignore[arg-type]  # click checked it is a Mode
            yes=self.yes,
            no_thinking=self.no_thinking,
            workdir=self.workdir,
            verbosity=1 if self.verbose else 0,  # -q is about the terminal, not flowrun.log
            overrides=self.overrides,
            decisions="refuse" if self.decisions == "refuse" else "wait",
            decide_within=duration(self.decide_within) if self.decide_within is not None else None,
            memory_dir=self.memory_dir.resolve() if self.memory_dir is not None else None,
        )


Command = Callable[..., Any]


def run_options(*names: str, help: Mapping[str, str] | None = None) -> Callable[[Command], Command]:
    """Add the run options `names` (keys of DECLARED) to a click command, in this order, with
    `help` replacing the help text of some; the command gets their values as `run_args`."""
    unknown = [name for name in names if name not in DECLARED]
    if unknown:
        raise ValueError(f"no run option {unknown[0]!r} (run_options.DECLARED has them)")

    def decorate(function: Command) -> Command:
        @functools.wraps(function)
        def command(*args: Any, **kwargs: Any) -> object:
            given = {name: kwargs.pop(name) for name in names}
            return function(*args, run_args=RunArgs(**given), **kwargs)

        for name in reversed(names):  # click lists options in the order of their decorators
            flags, attrs = DECLARED[name]
            worded: dict[str, Any] = {**attrs, **({"help": help[name]} if help and name in help else {})}
            command = click.option(*flags, **worded)(command)
        return command

    return decorate


def split_models(values: tuple[str, ...]) -> tuple[str | None, dict[str, str]]:
    """`--model REF` (every agent) and `--model AGENT=REF` (one agent), each at most once:
    (the model for every agent, the models of single agents)."""
    from flowrun.errors import UsageError

    every: str | None = None
    per_agent: dict[str, str] = {}
    for value in values:
        agent, eq, ref = value.partition("=")
        if eq and ":" not in agent and agent.strip():
            if agent in per_agent:
                raise UsageError(f"--model {agent}=... is given twice", "give each agent's model once")
            per_agent[agent.strip()] = ref.strip()
        elif every is not None:
            raise UsageError(
                f"--model is given twice ({every} and {value})",
                "give one model for every agent, and AGENT=MODEL for single agents",
            )
        else:
            every = value
    return every, per_agent
