"""`flowrun test` (replay each test file's cassette and check its expectations) and `flowrun
record` (make a cassette, and a test file when there is none, from a live run)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from flowrun.cli.common import reported
from flowrun.cli.input_args import parse_input_args
from flowrun.cli.run_cmd import (
    _with_progress,
    ask_on_terminal,
    sandbox_option,
    terminal_approver,
    usage_table,
)
from flowrun.cli.run_options import RunArgs, run_options

if TYPE_CHECKING:
    from flowrun.testing import CaseReport

FORMATS = click.Choice(["text", "github", "junit"])


@click.command(name="test")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=FORMATS,
    default="text",
    show_default=True,
    help="github: ::error annotations; junit: JUnit XML.",
)
@click.option(
    "--output",
    "output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the report to this file instead of stdout.",
)
@click.option(
    "--keep", type=click.Path(file_okay=False, path_type=Path), help="Keep each replay in KEEP/<test name>."
)
@click.option("-v", "--verbose", is_flag=True, help="Also list the expectations that passed.")
@sandbox_option
def test(
    paths: tuple[Path, ...],
    fmt: str,
    output: Path | None,
    keep: Path | None,
    verbose: bool,
    sandbox: str | None,
) -> None:
    """Replay recorded runs offline and check what test files (*.flowrun.yaml) expect.

    PATHS are test files or folders searched for *.flowrun.yaml (default: tests/, else .).
    Exit 0 when every expectation holds, 1 when one fails, 2 when no test file is found."""
    with reported(verbose):
        import asyncio

        from flowrun.errors import UsageError
        from flowrun.testing import find_test_files, run_test_file

        roots = list(paths) or [Path("tests") if Path("tests").is_dir() else Path(".")]
        files = find_test_files(roots)
        if not files:
            where = ", ".join(str(p) for p in roots)
            raise UsageError(f"no test files (*.flowrun.yaml) in {where}", "record one with `flowrun record`")

        async def all_reports() -> list[CaseReport]:
            return [await run_test_file(f, keep=keep, sandbox=sandbox) for f in files]  # type: ignore[arg-type]

        reports = asyncio.run(all_reports())
        text = {"text": text_report, "github": github_report, "junit": junit_report}[fmt](reports, verbose)
        if output is not None:
            output.write_text(text + "\n", encoding="utf-8")
            click.echo(summary(reports), err=True)
        else:
            click.echo(text)
    sys.exit(0 if all(r.ok for r in reports) else 1)


def summary(reports: list[CaseReport]) -> str:
    failed = sum(not r.ok for r in reports)
    checks = [c for r in reports for c in r.checks]
    passed = sum(c.ok for c in checks)
    return (
        f"{len(reports)} test(s): {len(reports) - failed} passed, {failed} failed "
        f"({passed} of {len(checks)} expectations held)"
    )


def text_report(reports: list[CaseReport], verbose: bool) -> str:
    lines: list[str] = []
    for report in reports:
        state = "PASS" if report.ok else "FAIL"
        lines.append(f"{state} {report.name} ({report.display}) {report.duration_s:.1f} s")
        if report.error is not None:
            lines.append(f"  ✗ {report.error}")
        for check in report.checks:
            if check.ok and not verbose:
                continue
            mark = "✓" if check.ok else "✗"
            where = f"{report.display}:{report.line_of(check)}"
            lines.append(f"  {mark} {check.name} ({where}): {check.detail}")
    lines.append(summary(reports))
    return "\n".join(lines)


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    """A workflow command's property value (file=, title=) also escapes `:` and `,`."""
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


def github_report(reports: list[CaseReport], verbose: bool) -> str:
    lines: list[str] = []
    for report in reports:
        where = f"file={_escape_property(report.display)}"
        title = _escape_property(f"flowrun test {report.name}")
        if report.error is not None:
            body = _escape(report.error)
            lines.append(f"::error {where},line={report.line_of()},title={title}::{body}")
        for check in report.checks:
            if not check.ok:
                body = _escape(f"{check.name}: {check.detail}")
                lines.append(f"::error {where},line={report.line_of(check)},title={title}::{body}")
    lines.append(summary(reports))
    return "\n".join(lines)


def junit_report(reports: list[CaseReport], verbose: bool) -> str:
    """One <testsuite> per test file, one <testcase> per expectation."""
    from xml.etree import ElementTree as ET

    root = ET.Element("testsuites", name="flowrun test")
    for report in reports:
        failures = sum(not c.ok for c in report.checks)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=report.name,
            file=report.display,
            tests=str(max(len(report.checks), 1)),
            failures=str(failures),
            errors=str(int(report.error is not None)),
            time=f"{report.duration_s:.3f}",
        )
        if report.error is not None:
            case = ET.SubElement(suite, "testcase", name="run", classname=report.name, file=report.display)
            ET.SubElement(case, "error", message=report.error.splitlines()[0]).text = report.error
        for check in report.checks:
            case = ET.SubElement(
                suite,
                "testcase",
                name=check.name,
                classname=report.name,
                file=report.display,
                line=str(report.line_of(check)),
            )
            if not check.ok:
                ET.SubElement(case, "failure", message=check.detail.splitlines()[0]).text = check.detail
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode")


@click.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("test_file", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("workflow", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@run_options(
    "dry_run",
    "model",
    "stream",
    "quiet",
    "verbose",
    "sandbox",
    "yes",
    help={"dry_run": "Record a run of the offline test provider.", "model": "As for `flowrun run`."},
)
@click.pass_context
def record(ctx: click.Context, test_file: Path, workflow: Path | None, run_args: RunArgs) -> None:
    """Run a workflow live and keep the run as the cassette of TEST_FILE.

    An existing TEST_FILE names the workflow, inputs and cassette: the cassette is recorded
    again and the expectations are kept. A new one needs WORKFLOW and its inputs
    (--INPUT VALUE): the cassette goes to cassettes/NAME/ next to it, and the test file is
    written with expectations drawn from the run (status, tools called, output file)."""
    with reported(run_args.verbose):
        from flowrun.cli.env_files import load_env_files
        from flowrun.testing import read_test_file, record_cassette, recording_target

        load_env_files([workflow or test_file])

        _, wf, _ = recording_target(test_file, workflow)
        if ctx.args or not test_file.exists():
            inputs = parse_input_args(wf, list(ctx.args))
        else:
            inputs = dict(read_test_file(test_file)[0].inputs or {})
        level = run_args.verbosity
        options = run_args.options()
        recording = _with_progress(
            level,
            lambda on_event, progress: record_cassette(
                test_file,
                workflow,
                inputs,
                options,
                on_event=on_event,
                ask_user=ask_on_terminal if sys.stdin.isatty() else None,
                approve=terminal_approver(progress),
            ),
        )
        result = recording.result
        if level >= 0:
            click.echo("\n" + usage_table(result.usage))
        click.echo(f"status: {result.status}")
        if result.status != "completed" and result.message:
            click.echo(f"error: {result.message.splitlines()[0][:500]}", err=True)
        state = "written: edit its expectations" if recording.drafted else "kept: its expectations unchanged"
        click.echo(f"test file: {test_file} ({state})")
        click.echo(f"cassette: {recording.cassette}")
    sys.exit(result.exit_code)
