"""`flowrun show RUN --html FILE`: one self-contained HTML file of a run (its timeline,
conversations, usage and output files) that opens with no network, to attach to a CI artifact
or a bug report. It is drawn by the same ES modules as the live run page: they are joined into
one inline script (their `import`/`export` lines taken out, in dependency order), and the run's
events, summary and output files are embedded as JSON, redacted again before they are written."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

from flowrun.errors import RunError
from flowrun.pinned import read_json_object, read_whole
from flowrun.redaction import Redactor
from flowrun.serve.ui import STATIC

ENTRY = "report.js"
SHOWN_FILE_BYTES = 200_000  # an output file larger than this is named, not embedded
IMPORT = re.compile(r'^import\s*\{[^}]*\}\s*from\s*"\./([\w-]+\.js)";\s*$', re.MULTILINE)
EXPORT = re.compile(r"^export\s+(?=(async\s+)?(function|class|const|let)\b)", re.MULTILINE)
LIST_HINT = "pass a run folder such as runs/<run-id>; `flowrun runs` lists them"


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


def _events(path: Path) -> list[dict[str, object]]:
    """The log's lines as JSON objects (a torn last line, from a crash, is left out)."""
    out: list[dict[str, object]] = []
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                value = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(value, dict):
                out.append(value)
    return out


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _summary(run_dir: Path, meta: dict[str, object], events: list[dict[str, object]]) -> dict[str, object]:
    usage = read_json_object(run_dir / "usage.json")
    times = [t for t in (_number(e.get("t")) for e in events) if t is not None]
    started, ended = (times[0], times[-1]) if times else (None, None)
    status = meta.get("status") or next(
        (e.get("status") for e in reversed(events) if e.get("type") == "run_end"), "unknown"
    )
    tokens = {"input_tokens": 0, "output_tokens": 0}
    rows = usage.get("by_agent_model")
    for row in rows if isinstance(rows, list) else []:
        counts = row.get("usage") if isinstance(row, dict) else None
        if isinstance(counts, dict):
            for key in tokens:
                tokens[key] += int(counts.get(key) or 0)
    options = meta.get("options")
    return {
        "id": run_dir.name,
        "workflow": meta.get("workflow"),
        "status": status,
        "dry_run": isinstance(options, dict) and bool(options.get("dry_run")),
        "started": started,
        "ended": ended if status != "running" else None,
        "duration_s": (ended - started) if started is not None and ended is not None else None,
        **tokens,
        "total_tokens": usage.get("total_tokens"),
        "cost_usd": usage.get("total_cost_usd"),
        "inputs": meta.get("inputs") or {},
        "output": meta.get("output"),
        "pending": meta.get("pending") or [],
        "usage": usage,
    }


def _output_paths(meta: dict[str, object], events: list[dict[str, object]]) -> list[str]:
    paths: list[str] = []
    if isinstance(meta.get("output"), str):
        paths.append(str(meta["output"]))
    for e in events:
        files = e.get("output_files") if e.get("type") == "agent_end" else None
        if isinstance(files, list):
            paths.extend(str(f) for f in files)
    return list(dict.fromkeys(paths))


def _files(
    run_dir: Path, meta: dict[str, object], events: list[dict[str, object]]
) -> list[dict[str, object]]:
    """The declared output and the files agents reported, as text (inside the run folder only)."""
    root = run_dir.resolve()
    out: list[dict[str, object]] = []
    for rel in _output_paths(meta, events):
        path = (run_dir / rel).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            continue
        file: dict[str, object] = {"path": rel, "main": rel == meta.get("output"), "content": None}
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


def report_data(run_dir: Path) -> dict[str, object]:
    """What the report embeds: the run's events, summary and output files (and its replay's
    events when a RUN-replay folder sits beside it), every string redacted."""
    log = run_dir / "events.jsonl"
    if not run_dir.is_dir():
        raise RunError(f"{run_dir} is not a folder", LIST_HINT)
    if not log.is_file():
        raise RunError(f"{run_dir} has no events.jsonl, so it is not a flowrun run folder", LIST_HINT)
    meta = read_json_object(run_dir / "run.json")
    events = _events(log)
    data: dict[str, object] = {
        "events": events,
        "summary": _summary(run_dir, meta, events),
        "files": _files(run_dir, meta, events),
    }
    replay = run_dir.with_name(run_dir.name + "-replay") / "events.jsonl"
    if replay.is_file():
        data["replay"] = {"name": replay.parent.name, "events": _events(replay)}
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
        f'<header class="top"><span class="brand">flowrun</span><span>{title}</span></header>\n'
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
