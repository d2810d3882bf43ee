"""A workflow's inputs as command options (`--name value`, `--name=value`, `--name @FILE`, bare
boolean flags), over the values of `--inputs FILE`: for `run`, `chat`, `test` and `cost`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from flowrun.cli.seed_habits import LONG_FLAGS, habit_error

if TYPE_CHECKING:
    from flowrun.api import Workflow


def parse_input_args(wf: Workflow, args: list[str], inputs_file: Path | None = None) -> dict[str, object]:
    """`--name value`, `--name=value`, `--name @FILE` and bare boolean flags for the
    workflow's inputs, over the values of `--inputs FILE`."""
    from flowrun.errors import UsageError
    from flowrun.manifest.inputs import inputs_from_file, resolve_inputs, value_from_arg

    declared = wf.inputs
    options = {name.replace("_", "-"): name for name in declared} | {name: name for name in declared}
    values: dict[str, object] = inputs_from_file(inputs_file) if inputs_file is not None else {}
    given: set[str] = set()  # options on the command line (they override the --inputs file)
    i = 0
    while i < len(args):
        arg = args[i]
        key, eq, inline = arg[2:].partition("=")
        if not arg.startswith("--") or (key not in options and f"--{key}" in LONG_FLAGS):
            raise habit_error(wf, args, i)  # a positional task, -d DIR, -r N ...: what to write instead
        name = options.get(key)
        if name is None:
            raise UsageError(
                f"unknown option --{key} for workflow '{wf.name}'", _unknown_option_hint(key, options)
            )
        if name in given:
            raise UsageError(f"--{key} is given twice", f"give --{key} once")
        given.add(name)
        if eq:
            values[name] = value_from_arg(name, inline)
        elif declared[name].type == "boolean" and (i + 1 >= len(args) or args[i + 1].startswith("--")):
            values[name] = "true"
        elif i + 1 < len(args):
            i += 1
            values[name] = value_from_arg(name, args[i])
        else:
            raise UsageError(f"--{key} needs a value")
        i += 1
    return resolve_inputs(declared, values, wf.name, cli=True)


def _unknown_option_hint(key: str, inputs: dict[str, str]) -> str:
    """A did-you-mean over the workflow's inputs and the command's own options (a typo such as
    `--dry-rn` reaches the input parser, which is the last to see it), then the inputs."""
    import difflib

    known = ", ".join(f"--{n}" for n in dict.fromkeys(inputs.values())) or "(none)"
    ctx = click.get_current_context(silent=True)
    own = [o[2:] for p in (ctx.command.params if ctx else []) for o in p.opts + p.secondary_opts]
    close = difflib.get_close_matches(key, [*inputs, *(o for o in own if o)], n=1, cutoff=0.6)
    if close:
        return f"did you mean --{close[0]}? (the workflow's inputs: {known})"
    return f"its inputs: {known}"
