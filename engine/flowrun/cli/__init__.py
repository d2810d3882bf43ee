"""The `flowrun` command line: the only layer that prints. Each command lives in its own module
and is registered here; heavy modules (the API, pydantic, rich, SDKs) are imported inside the
commands, so `flowrun --help` starts fast."""

from __future__ import annotations

from pathlib import Path

import click

from flowrun._version import __version__
from flowrun.cli import (
    chat_cmd,
    export_cmd,
    inspect_cmd,
    run_cmd,
    schema_cmd,
    serve_cmd,
    test_cmd,
    validate_cmd,
)


class FlowrunGroup(click.Group):
    """`flowrun WORKFLOW.yaml --input x` is short for `flowrun run WORKFLOW.yaml --input x`."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            first = args[0]
            if first.endswith((".yaml", ".yml")) or Path(first).is_file():
                args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group(cls=FlowrunGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="flowrun")
def main() -> None:
    """flowrun: run LLM agent teams described in YAML.

    \b
    flowrun WORKFLOW.yaml --INPUT VALUE ...   run a workflow (same as `flowrun run`)
    flowrun chat WORKFLOW.yaml [--agent NAME]  talk to one agent and its tools
    flowrun validate [PATH...]                 check manifests
    """


for command in (
    run_cmd.run,
    run_cmd.resume,
    run_cmd.replay,
    chat_cmd.chat,
    inspect_cmd.runs,
    inspect_cmd.show,
    validate_cmd.validate,
    schema_cmd.schema,
    serve_cmd.serve,
    export_cmd.export,
    test_cmd.test,
    test_cmd.record,
):
    main.add_command(command)
