"""An eval report as files for other programs: JUnit XML (one suite per variant, one test case
per run of a case, each with its time, model calls, tokens and cost) and a self-contained HTML
page (the variants side by side with their time, calls, tokens and cost, every run's graders,
figures, output and a link to its run folder and transcript)."""

from __future__ import annotations

import html
import os
from pathlib import Path
from xml.etree import ElementTree as ET

from flowrun.evals.outcome import run_file_text
from flowrun.evals.report import Change, EvalReport, RunScore, VariantReport
from flowrun.pinned import read_json_object


def junit(report: EvalReport) -> str:
    root = ET.Element("testsuites", name=f"flowrun eval {report.evalset}")
    for variant in report.variants:
        failures = sum(not r.passed for r in variant.runs)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=f"{report.evalset}[{variant.name}]",
            tests=str(len(variant.runs)),
            failures=str(failures),
            errors="0",
            time=f"{sum(r.duration_s for r in variant.runs):.3f}",
        )
        props = ET.SubElement(suite, "properties")
        for name, value in (
            ("score", f"{variant.score:.4f}"),
            ("pass_at_1", f"{variant.pass_at_1:.4f}"),
            ("pass_at_k", f"{variant.pass_at_k:.4f}"),
            *_figures(variant.duration_s, variant.steps, variant.total_tokens, variant.cost_usd),
        ):
            ET.SubElement(props, "property", name=name, value=value)
        for run in variant.runs:
            case = ET.SubElement(
                suite,
                "testcase",
                name=f"{run.case}#{run.repeat}",
                classname=f"{report.evalset}.{variant.name}",
                time=f"{run.duration_s:.3f}",
            )
            figures = ET.SubElement(case, "properties")
            for name, value in _figures(run.duration_s, run.steps, run.total_tokens, run.cost_usd):
                ET.SubElement(figures, "property", name=name, value=value)
            ET.SubElement(case, "system-out").text = f"score {run.score:.3f}; run folder {run.run_dir}"
            if not run.passed:
                lines = [f"{g.name}: {g.score:.2f} {g.detail}" for g in run.graders if not g.passed]
                message = lines[0] if lines else f"the run ended {run.status}"
                ET.SubElement(case, "failure", message=message[:500]).text = "\n".join(lines or [run.message])
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode")


def _figures(seconds: float, calls: float, tokens: float, cost: float | None) -> list[tuple[str, str]]:
    """The JUnit properties of a run's (or a suite's) cost and time ("" for an unknown cost)."""
    cost_text = f"{cost:.6f}" if cost is not None else ""
    return [
        ("seconds", f"{seconds:.3f}"),
        ("calls", f"{calls:g}"),
        ("tokens", f"{tokens:g}"),
        ("cost_usd", cost_text),
    ]


# ---------------------------------------------------------------- HTML

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #ccc;padding:4px 8px;vertical-align:top;text-align:left}
th{background:#f3f3f3}
.pass{color:#17702a}.fail{color:#b3261e}.num{text-align:right;font-variant-numeric:tabular-nums}
.improved{color:#17702a}.regressed{color:#b3261e}
details{margin:.3em 0}pre{white-space:pre-wrap;background:#f8f8f8;padding:.5em;max-height:30em;overflow:auto}
code{background:#f3f3f3;padding:0 3px}
"""


def _e(text: object) -> str:
    return html.escape(str(text))


def _link(target: str, base: Path) -> str:
    """A link to a path from the HTML file's folder (relative, so the folder can move)."""
    try:
        return Path(os.path.relpath(target, base)).as_posix()
    except ValueError:
        return Path(target).as_uri()


def html_report(report: EvalReport, where: Path, changes: list[Change] | None = None) -> str:
    """The report as one HTML page to be written at `where`."""
    base = where.parent.resolve()
    verdicts = {(c.variant, c.case): c for c in changes or []}
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>flowrun eval {_e(report.evalset)}</title><style>{STYLE}</style></head><body>",
        f"<h1>Eval <code>{_e(report.evalset)}</code></h1>",
        f"<p>workflow <code>{_e(report.workflow)}</code> · {report.repeat} run(s) per case"
        + (" · graded offline from the recording" if report.offline else "")
        + f" · <span class='{'pass' if report.ok else 'fail'}'>{'PASS' if report.ok else 'FAIL'}</span></p>",
        _summary_table(report, verdicts),
        _gates(report),
    ]
    for variant in report.variants:
        parts.append(_variant(variant, base, verdicts))
    parts.append("</body></html>")
    return "\n".join(parts)


def _summary_table(report: EvalReport, verdicts: dict[tuple[str, str], Change]) -> str:
    k = f"<th>pass@{report.repeat}</th>" if report.repeat > 1 else ""  # (else it is pass@1)
    rows = [
        "<table><tr><th>variant</th><th>model / set</th><th>score</th><th>pass@1</th>"
        f"{k}<th>spread</th>{_figure_heads('all runs')}<th>vs baseline</th></tr>"
    ]
    for v in report.variants:
        change = verdicts.get((v.name, ""))
        setting = " ".join(
            [*(["--model " + v.model] if v.model else []), *(f"--set {o}" for o in v.overrides)]
        )
        pass_k = f"<td class='num'>{v.pass_at_k:.0%}</td>" if report.repeat > 1 else ""
        figures = _figure_cells(v.duration_s, v.steps, v.total_tokens, v.cost_usd)
        rows.append(
            f"<tr><td>{_e(v.name)}</td><td><code>{_e(setting)}</code></td><td class='num'>{v.score:.3f}</td>"
            f"<td class='num'>{v.pass_at_1:.0%}</td>{pass_k}"
            f"<td class='num'>±{v.spread:.3f}</td>{figures}<td>{_change(change)}</td></tr>"
        )
    rows.append("</table>")
    return "\n".join(rows)


def _figure_heads(of: str) -> str:
    return "".join(
        f"<th title='{of}'>{name} <small>({of})</small></th>" for name in ("time", "calls", "tokens", "cost")
    )


def _figure_cells(seconds: float, calls: float, tokens: float, cost: float | None) -> str:
    """Time, model calls, tokens and cost as table cells."""
    shown = [f"{seconds:.1f} s", f"{calls:.4g}", f"{tokens:.6g}", f"${cost:.4f}" if cost is not None else "-"]
    return "".join(f"<td class='num'>{text}</td>" for text in shown)


def _change(change: Change | None) -> str:
    if change is None:
        return ""
    before = "-" if change.before is None else f"{change.before:.3f}"
    return f"<span class='{change.verdict}'>{change.verdict}</span> (was {before})"


def _gates(report: EvalReport) -> str:
    gates = report.gates()
    if not gates:
        return "<p>No thresholds (set <code>min_score</code> or <code>--min-score</code>).</p>"
    rows = ["<table><tr><th>variant</th><th>threshold</th><th>needs</th><th>got</th><th></th></tr>"]
    for g in gates:
        mark = "<span class='pass'>ok</span>" if g.ok else "<span class='fail'>below</span>"
        rows.append(
            f"<tr><td>{_e(g.variant)}</td><td>{_e(g.what)}</td><td class='num'>{g.need:.3f}</td>"
            f"<td class='num'>{g.got:.3f}</td><td>{mark}</td></tr>"
        )
    rows.append("</table>")
    return "\n".join(rows)


def _variant(variant: VariantReport, base: Path, verdicts: dict[tuple[str, str], Change]) -> str:
    parts = [f"<h2>Variant <code>{_e(variant.name)}</code></h2>"]
    parts.append(
        "<table><tr><th>case</th><th>score</th><th>range</th><th>passed</th>"
        f"{_figure_heads('a run (mean)')}<th>vs baseline</th></tr>"
    )
    for case in variant.cases():
        figures = _figure_cells(case.duration_s, case.steps, case.total_tokens, case.cost_usd)
        parts.append(
            f"<tr><td><a href='#{_e(variant.name)}-{_e(case.case)}'>{_e(case.case)}</a></td>"
            f"<td class='num'>{case.mean:.3f}</td><td class='num'>{case.low:.2f}–{case.high:.2f}</td>"
            f"<td class='num'>{case.passes}/{case.runs}</td>{figures}"
            f"<td>{_change(verdicts.get((variant.name, case.case)))}</td></tr>"
        )
    parts.append("</table>")
    for run in variant.runs:
        parts.append(_run(variant.name, run, base))
    return "\n".join(parts)


def _run(variant: str, run: RunScore, base: Path) -> str:
    mark = "<span class='pass'>pass</span>" if run.passed else "<span class='fail'>fail</span>"
    anchor = f"{variant}-{run.case}" if run.repeat == 1 else f"{variant}-{run.case}-{run.repeat}"
    folder = _link(run.run_dir, base)
    rows = "".join(
        f"<tr><td>{_e(g.name)}</td><td class='num'>{g.score:.2f}</td>"
        f"<td class='{'pass' if g.passed else 'fail'}'>{'pass' if g.passed else 'fail'}</td>"
        f"<td>{_e(g.detail)}</td></tr>"
        for g in run.graders
    )
    output = _output_preview(Path(run.run_dir))
    return (
        f"<h3 id='{_e(anchor)}'>{_e(run.case)} · run {run.repeat} · {mark} · score {run.score:.3f}</h3>"
        f"<p>status <code>{_e(run.status)}</code>{' — ' + _e(run.message) if run.message else ''} · "
        f"{run.duration_s:.1f} s · {run.steps} model call(s) · {run.total_tokens} tokens · "
        f"{'$' + format(run.cost_usd, '.4f') if run.cost_usd is not None else 'cost unknown'} · "
        f"<a href='{_e(folder)}/'>run folder</a> · <a href='{_e(folder)}/events.jsonl'>events</a> · "
        f"transcript: <code>flowrun show --messages {_e(run.run_dir)}</code></p>"
        f"<table><tr><th>grader</th><th>score</th><th></th><th>detail</th></tr>{rows}</table>{output}"
    )


def _output_preview(run_dir: Path) -> str:
    """The run's declared output (or final answer), folded away."""
    name = read_json_object(run_dir / "run.json").get("output")
    text = run_file_text(run_dir, name, 20000) if isinstance(name, str) else None
    if text is None:
        return ""
    return f"<details><summary>{_e(name)}</summary><pre>{_e(text)}</pre></details>"
