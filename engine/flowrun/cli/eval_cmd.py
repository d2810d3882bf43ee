"""`flowrun eval EVALSET.yaml`: run an eval set's cases (per variant, `--repeat` times), grade
the runs and print a table of the scores; write JSON, JUnit or HTML reports; compare with a
baseline; record the runs as cassettes, or grade a recording again offline. Exit 0 when every
threshold holds, 1 when one does not, 2 on a usage error."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

import click

from flowrun.cli.common import reported

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console

    from flowrun.batch import BatchProgress
    from flowrun.evals import EvalReport, Variant
    from flowrun.evals.report import Change
    from flowrun.tools.sandbox import Mode

FILE = click.Path(dir_okay=False, path_type=Path)


@click.command(name="eval")
@click.argument("evalset", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--repeat", type=int, help="Runs per case (pass@k and the spread; default: the eval set's `repeat`)."
)
@click.option(
    "-c", "--concurrency", type=int, default=4, show_default=True, help="Runs (and judge calls) at once."
)
@click.option(
    "--variant",
    "variants",
    metavar='NAME="--model M --set P=V"',
    multiple=True,
    help="A way to run every case, compared side by side with the others; repeatable.",
)
@click.option(
    "--model", metavar="MODEL", help="Every variant's model (a workflow model name or provider:model)."
)
@click.option(
    "--set",
    "overrides",
    metavar="PATH=VALUE",
    multiple=True,
    help="Change a manifest value for every run; repeatable.",
)
@click.option(
    "--min-score",
    "min_scores",
    metavar="[GRADER=]X",
    multiple=True,
    help="The overall score (or with GRADER=, that grader's mean) must reach X (0..1), else exit 1; "
    "repeatable.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="The eval folder (default: evals/NAME-TIMESTAMP).",
)
@click.option(
    "--json", "json_file", type=FILE, help="Write the report as JSON (a later --baseline reads it)."
)
@click.option("--junit", "junit_file", type=FILE, help="Write the report as JUnit XML.")
@click.option(
    "--html", "html_file", type=FILE, help="Write a self-contained HTML report with links to each run."
)
@click.option(
    "--baseline",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A JSON report to compare with: what improved, what regressed.",
)
@click.option(
    "--record",
    is_flag=True,
    help="Keep every run and the judges' answers as cassettes (the eval set's `cassettes:`).",
)
@click.option(
    "--offline", is_flag=True, help="Grade the recorded cassettes again: no model, no key, no network."
)
@click.option("--dry-run", is_flag=True, help="Use the offline test provider for the runs and the judges.")
@click.option(
    "--sandbox", type=click.Choice(["required", "auto", "off"]), help="Override every `sandbox:` mode."
)
@click.option(
    "--backend",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where the runs run (as `flowrun batch`).",
)
@click.option("--address", metavar="ADDR", help="Ray: the cluster to join.")
@click.option(
    "--processes",
    metavar="N|auto",
    help="Local: worker processes the runs are spread over (default 1: all in this process, beside "
    "the judges; auto: as `flowrun batch`).",
)
@click.option("-q", "--quiet", is_flag=True, help="Print only the summary.")
@click.option("-v", "--verbose", is_flag=True, help="Also list every grader of every run.")
def eval_(
    evalset: Path,
    repeat: int | None,
    concurrency: int,
    variants: tuple[str, ...],
    model: str | None,
    overrides: tuple[str, ...],
    min_scores: tuple[str, ...],
    out: Path | None,
    json_file: Path | None,
    junit_file: Path | None,
    html_file: Path | None,
    baseline: Path | None,
    record: bool,
    offline: bool,
    dry_run: bool,
    sandbox: str | None,
    backend: str,
    address: str | None,
    processes: str | None,
    quiet: bool,
    verbose: bool,
) -> None:
    """Run an eval set's cases, grade the runs, report scores (exit 1 below a threshold)."""
    with reported(verbose):
        import asyncio

        from flowrun.cli.env_files import load_env_files
        from flowrun.evals import EvalSettings, compare, read_report, run_eval, run_offline

        load_env_files([evalset])
        overall, per_grader = parse_min_scores(min_scores)
        settings = EvalSettings(
            variants=[parse_variant(v) for v in variants],
            model=model,
            overrides=overrides,
            repeat=repeat,
            concurrency=concurrency,
            out=out,
            dry_run=dry_run,
            sandbox=cast("Mode | None", sandbox),  # click's choice
            min_score=overall,
            grader_min=per_grader,
            record=record,
            backend=backend,
            address=address,
            processes=parse_processes(processes),
            on_progress=None if quiet else _progress(),
        )
        before = read_report(baseline) if baseline is not None else None
        report = asyncio.run(run_offline(evalset, settings) if offline else run_eval(evalset, settings))
        changes = compare(report, before) if before is not None else None
        _write_files(report, json_file, junit_file, html_file, changes)
        if not quiet:
            _print_table(report, changes, verbose)
        _print_summary(report, record)
    sys.exit(0 if report.ok else 1)


def parse_variant(text: str) -> Variant:
    """`NAME="--model M --set P=V ..."` as a Variant."""
    from flowrun.errors import UsageError
    from flowrun.evals import Variant

    name, sep, rest = text.partition("=")
    if not sep or not name.strip():
        raise UsageError(
            f"--variant {text!r} names no variant", 'write --variant NAME="--model M --set PATH=VALUE"'
        )
    try:
        words = shlex.split(rest)
    except ValueError as e:
        raise UsageError(f"--variant {name}: {e}", "quote the variant's options once") from None
    model: str | None = None
    sets: list[str] = []
    while words:
        word = words.pop(0)
        flag, eq, value = word.partition("=")
        if flag not in ("--model", "--set"):
            raise UsageError(
                f"--variant {name}: {word!r} is not --model or --set",
                "a variant changes the model and manifest values",
            )
        if not eq:
            if not words:
                raise UsageError(f"--variant {name}: {flag} needs a value")
            value = words.pop(0)
        if flag == "--model":
            model = value
        else:
            sets.append(value)
    return Variant(name.strip(), model, tuple(sets))


def parse_processes(text: str | None) -> int | Literal["auto"] | None:
    from flowrun.batch import PROCESSES_HINT
    from flowrun.errors import UsageError

    if text is None:
        return None
    if text == "auto":
        return "auto"
    if not text.strip().isdigit() or int(text) < 1:
        message = f"--processes must be a whole number of at least 1, or auto; got {text}"
        raise UsageError(message, PROCESSES_HINT)
    return int(text)


def parse_min_scores(given: tuple[str, ...]) -> tuple[float | None, dict[str, float]]:
    from flowrun.errors import UsageError

    overall: float | None = None
    per_grader: dict[str, float] = {}
    for text in given:
        name, sep, value = text.rpartition("=")
        try:
            number = float(value)
        except ValueError:
            raise UsageError(
                f"--min-score {text!r}: {value!r} is not a number",
                "e.g. --min-score 0.8 or --min-score judge=0.7",
            ) from None
        if not 0 <= number <= 1:
            raise UsageError(f"--min-score {text!r}: a score is from 0 to 1")
        if sep:
            per_grader[name] = number
        else:
            overall = number
    return overall, per_grader


def _progress() -> Callable[[str, BatchProgress], None]:
    def show(variant: str, progress: BatchProgress) -> None:
        if progress.last is not None:
            last = progress.last
            done = progress.completed + progress.failed
            click.echo(
                f"[{variant} {done}/{progress.total}] {last.id} {last.status} {last.duration_s:.1f} s",
                err=True,
            )

    return show


def _write_files(
    report: EvalReport,
    json_file: Path | None,
    junit_file: Path | None,
    html_file: Path | None,
    changes: list[Change] | None,
) -> None:
    from flowrun.evals.formats import html_report, junit

    if json_file is not None:
        report.write(json_file)
    if junit_file is not None:
        junit_file.parent.mkdir(parents=True, exist_ok=True)
        junit_file.write_text(junit(report) + "\n", encoding="utf-8")
    if html_file is not None:
        html_file.parent.mkdir(parents=True, exist_ok=True)
        html_file.write_text(html_report(report, html_file, changes), encoding="utf-8")


FIGURES = ("time", "calls", "tokens", "cost")  # a run's, beside each variant's score column


def _print_table(report: EvalReport, changes: list[Change] | None, verbose: bool) -> None:
    """A row per case, per variant its score column and a run's mean time, calls, tokens and
    cost; below, each variant's summary rows and the totals of its runs."""
    from rich.console import Console
    from rich.table import Table

    verdicts = {(c.variant, c.case): c for c in changes or []}
    table = Table(title=f"eval {report.evalset}" + (" (offline)" if report.offline else ""))
    table.add_column("case")
    for variant in report.variants:
        table.add_column(variant.name, justify="right")
        for figure in FIGURES:
            table.add_column(figure, justify="right")
    cases = list(dict.fromkeys(c.case for v in report.variants for c in v.cases()))
    summaries = {v.name: {c.case: c for c in v.cases()} for v in report.variants}
    for case in cases:
        cells: list[str] = []
        for variant in report.variants:
            summary = summaries[variant.name].get(case)
            if summary is None:
                cells += [""] * (1 + len(FIGURES))
                continue
            passes, change = f"{summary.passes}/{summary.runs}", verdicts.get((variant.name, case))
            cells.append(_cell(summary.mean, summary.stdev, passes, change))
            cells += _figures(summary.duration_s, summary.steps, summary.total_tokens, summary.cost_usd)
        table.add_row(case, *cells)
    table.add_section()
    for label, values in _summary_rows(report, verdicts):
        table.add_row(label, *(cell for value in values for cell in (value, *[""] * len(FIGURES))))
    totals = [("", *_figures(v.duration_s, v.steps, v.total_tokens, v.cost_usd)) for v in report.variants]
    table.add_row("total", *(cell for row in totals for cell in row))
    width = max(100, Console().width, 24 + 56 * len(report.variants))
    console = Console(width=width, soft_wrap=False)
    console.print(table)
    if verbose:
        _print_runs(report, console)


def _summary_rows(report: EvalReport, verdicts: dict[tuple[str, str], Change]) -> list[tuple[str, list[str]]]:
    """Each variant's overall score, pass@1 (and pass@k), and each grader's mean."""
    rows = [("score", [_cell(v.score, v.spread, "", verdicts.get((v.name, ""))) for v in report.variants])]
    rows.append(("pass@1", [f"{v.pass_at_1:.0%}" for v in report.variants]))
    if report.repeat > 1:  # (pass@1 is the row above)
        rows.append((f"pass@{report.repeat}", [f"{v.pass_at_k:.0%}" for v in report.variants]))
    graders = list(dict.fromkeys(name for v in report.variants for name in v.grader_means()))
    for name in graders:
        rows.append((f"  {name}", [_mean(v.grader_means().get(name)) for v in report.variants]))
    return rows


def _figures(seconds: float, calls: float, tokens: float, cost: float | None) -> list[str]:
    """Time, model calls, tokens and cost as the table shows them."""
    return [f"{seconds:.1f} s", _count(calls), _count(tokens), f"${cost:.4f}" if cost is not None else "-"]


def _count(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def _print_runs(report: EvalReport, console: Console) -> None:
    for variant in report.variants:
        for run in variant.runs:
            console.print(
                f"{variant.name} {run.case}#{run.repeat} {run.status} score {run.score:.3f} "
                f"{run.duration_s:.1f} s {run.steps} calls {run.total_tokens} tokens {run.run_dir}",
                markup=False,
            )
            for g in run.graders:
                console.print(
                    f"  {'✓' if g.passed else '✗'} {g.name} {g.score:.2f}: {g.detail}", markup=False
                )


def _cell(score: float, spread: float, passes: str, change: Change | None) -> str:
    text = f"{score:.2f}" + (f" ±{spread:.2f}" if spread else "") + (f" ({passes})" if passes else "")
    if change is not None and change.verdict in ("improved", "regressed"):
        arrow = "▲" if change.verdict == "improved" else "▼"
        text += f" {arrow}{abs((change.after or 0) - (change.before or 0)):.2f}"
    return text


def _mean(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def _print_summary(report: EvalReport, record: bool) -> None:
    for gate in report.gates():
        mark = "ok" if gate.ok else "BELOW"
        click.echo(f"threshold {gate.variant} {gate.what}: {gate.got:.3f} (needs {gate.need:.3f}) {mark}")
    if report.judge_cost_usd is not None:
        click.echo(f"judges cost ${report.judge_cost_usd:.4f}")
    click.echo(f"runs: {report.folder}")
    if record:
        click.echo("recorded: `flowrun eval --offline` grades the recording again without a model")
    click.echo(f"result: {'pass' if report.ok else 'fail'}")
