"""`flowrun show RUN --html FILE`: one self-contained HTML file of a run (its timeline,
conversations, usage and output files) that opens with no network, to attach to a CI artifact
or a bug report. It is drawn by the same ES modules as the live run page: they are joined into
one inline script (their `import`/`export` lines taken out, in dependency order), and the run's
summary (runtime/summary/, what the HTTP API sends), conversations, each agent instance as it
was asked, its team and output files are embedded as JSON, redacted again before they are
written."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

from flowrun.errors import RunError
from flowrun.pinned import read_whole
from flowrun.redaction import Redactor
from flowrun.runtime.summary.conversations import conversation_json, instance_json
from flowrun.runtime.summary.folder import RunSummary, read_summary, replay_steps
from flowrun.serve.ui import STATIC

ENTRY = "report.js"
SHOWN_FILE_BYTES = 200_000  # an output file larger than this is named, not embedded
IMPORT = re.compile(r'^import\s*\{[^}]*\}\s*from\s*"\./([\w-]+\.js)";\s*$', re.MULTILINE)
EXPORT = re.compile(r"^export\s+(?=(async\s+)?(function|class|const|let)\b)", re.MULTILINE)


def bundle(entry: str = ENTRY) -> str:
    """The entry module and every module it imports, dependencies first, as one script."""
    ordered: list[str] = []

    def visit(name: str, seen: tuple[str, ...]) -> None:
        if name in ordered:
            return
        if name in seen:
            raise ValueError(f"import cycle through {name}")
        source = (STATIC / name).read_text(encoding="utf-8")
        for dep in IMPORT.findall(source):
            visit(dep, (*seen, name))
        ordered.append(name)

    visit(entry, ())
    parts = []
    for name in ordered:
        source = (STATIC / name).read_text(encoding="utf-8")
        parts.append(f"// ---- {name}\n" + EXPORT.sub("", IMPORT.sub("", source)))
    return "\n".join(parts)


def _files(summary: RunSummary) -> list[dict[str, object]]:
    """The declared output and the files agents reported, as text (inside the run folder only)."""
    run_dir = summary.entry.path
    root = run_dir.resolve()
    out: list[dict[str, object]] = []
    for rel in summary.output_files:
        path = (run_dir / rel).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            continue
        file: dict[str, object] = {"path": rel, "main": rel == summary.output, "content": None}
        size = path.stat().st_size
        if size > SHOWN_FILE_BYTES:
            file["note"] = f"{size} bytes: too large to embed"
        else:
            raw = read_whole(path)
            try:
                file["content"] = raw.decode("utf-8")
            except UnicodeDecodeError:
                file["note"] = f"{size} bytes of binary data"
        out.append(file)
    return out


def _team(run_dir: Path) -> dict[str, object] | None:
    """The team of the run's workflow as its files are now; None when they no longer load."""
    from flowrun.api import recorded_run
    from flowrun.errors import FlowrunError
    from flowrun.serve.team_graph import team_graph

    try:
        return team_graph(recorded_run(run_dir)[1])
    except FlowrunError:
        return None


def report_data(run_dir: Path) -> dict[str, object]:
    """What the report embeds: the run's summary (as the HTTP API sends it), its conversations
    and output files (and its replay's steps when a RUN-replay folder sits beside it), every
    string redacted."""
    summary = read_summary(run_dir)
    agents = {
        agent_id: instance_json(summary.conversations, agent_id)
        for agent_id in summary.conversations.instances
    }
    data: dict[str, object] = {
        "summary": summary.to_dict(),
        "conversations": conversation_json(summary.conversations),
        "agents": agents,
        "team": _team(run_dir),
        "files": _files(summary),
    }
    if summary.replay is not None:
        data["replay"] = replay_steps(run_dir, summary.replay)
    redacted: dict[str, object] = Redactor().value(data)
    return redacted


def _script_json(value: object) -> str:
    """JSON that cannot end the <script> element it sits in."""
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def report_html(run_dir: Path) -> str:
    """The self-contained HTML report of the run in `run_dir`."""
    data = report_data(run_dir)
    script = bundle()
    if "</script" in script.lower():
        raise ValueError("a page module contains '</script'")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    style = (STATIC / "style.css").read_text(encoding="utf-8")
    title = f"flowrun run {run_dir.name}".replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    policy = (
        f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{title}</title>\n<style>\n{style}</style>\n</head>\n<body>\n"
        '<header class="top"><span class="brand">flowrun</span>'
        f'<span class="report-title">{title}</span></header>\n'
        '<main id="main" class="report"></main>\n'
        f'<script type="application/json" id="flowrun-data">{_script_json(data)}</script>\n'
        f'<script type="module">{script}</script>\n</body>\n</html>\n'
    )


def write_report(run_dir: Path, target: Path) -> Path:
    """Write the report of `run_dir` to `target` (its folder must exist)."""
    html = report_html(run_dir)
    try:
        target.write_text(html, encoding="utf-8")
    except OSError as e:
        raise RunError(
            f"cannot write {target}: {e.strerror or e}", "choose a writable path for --html"
        ) from e
    return target
