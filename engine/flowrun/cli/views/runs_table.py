"""`flowrun runs`: the runs of a runs folder as an aligned table, from the runs index
(runtime/durable/runs_index.py). Written without rich, so listing thousands of runs starts and
prints in a fraction of a second; colour is plain ANSI, only on a terminal."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Iterable, Mapping

from flowrun.runtime.durable.runs_index import RunEntry

# Piped output is not wrapped, so `flowrun show … | grep` finds whole lines.
UNWRAPPED_WIDTH = 1000
GAP = "  "


def since_time(text: str | None) -> float | None:
    """`--since`: a date or date and time (ISO 8601), or a duration ago (30m, 2h, 7d)."""
    if text is None:
        return None
    from datetime import datetime

    from flowrun.errors import FlowrunError, UsageError
    from flowrun.runtime.options import duration

    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        pass
    try:
        return time.time() - duration(text)
    except FlowrunError:
        hint = "e.g. --since 2025-01-31 or --since 2h"
        raise UsageError(f"--since {text!r} is neither a date nor a duration", hint) from None


def output_width() -> int:
    """The terminal's width when stdout is one, else wide enough never to wrap."""
    if sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return UNWRAPPED_WIDTH


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def format_cost(cost: float | None) -> str:
    return "unknown" if cost is None else f"${cost:.4f}"


def short(value: object, limit: int) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def format_inputs(inputs: Mapping[str, object], limit: int = 60) -> str:
    """`question=How do Python's sort…` : each input, shortened, for one table cell."""
    return short(", ".join(f"{k}={short(v, 40)}" for k, v in inputs.items()), limit) or "-"


STATUS_STYLE = {
    "completed": "green",
    "success": "green",
    "stopped": "green",
    "partial": "yellow",
    "max_steps": "yellow",
    "budget_exceeded": "yellow",
    "cancelled": "yellow",
    "interrupted": "yellow",
    "waiting": "magenta",
    "running": "cyan",
    "failed": "red",
    "error": "red",
}
ANSI = {"green": "32", "yellow": "33", "magenta": "35", "cyan": "36", "red": "31", "bold": "1"}
COLUMNS = ("run", "workflow", "status", "started", "steps", "tokens", "cost", "duration", "inputs")
RIGHT = frozenset({"steps", "tokens", "cost", "duration"})
MIN_LAST = 10  # the inputs column is cut to fit the width, down to this


def format_runs(entries: Iterable[RunEntry], *, width: int = 160, color: bool | None = None) -> str:
    """An aligned table of runs as the runs index lists them (newest first), plain text unless
    `color` (default: stdout is a TTY). The last column (inputs) is cut with … to fit `width`."""
    rows = list(entries)
    if not rows:
        return "no runs yet"
    color = sys.stdout.isatty() if color is None else color
    cells = [list(COLUMNS)] + [
        _cells(row) for row in sorted(rows, key=lambda r: r.started or 0, reverse=True)
    ]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    room = width - sum(widths[:-1]) - len(GAP) * (len(COLUMNS) - 1)
    widths[-1] = max(min(widths[-1], room), MIN_LAST)
    out = []
    for n, line in enumerate(cells):
        parts = []
        for i, (name, text) in enumerate(zip(COLUMNS, line, strict=True)):
            text = short(text, widths[i]) if len(text) > widths[i] else text
            padded = text.rjust(widths[i]) if name in RIGHT else text.ljust(widths[i])
            style = "bold" if n == 0 else STATUS_STYLE.get(text, "") if name == "status" else ""
            parts.append(_styled(padded, style) if color and style else padded)
        out.append(GAP.join(parts).rstrip())
    return "\n".join(out)


def _cells(row: RunEntry) -> list[str]:
    started = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.started)) if row.started else "-"
    return [
        row.id,
        row.workflow + (" (dry run)" if row.dry_run else ""),
        row.status,
        started,
        str(row.steps),
        f"{row.total_tokens:,}",
        format_cost(row.cost_usd),
        format_duration(row.duration_s),
        format_inputs(row.inputs),
    ]


def _styled(text: str, style: str) -> str:
    return f"\x1b[{ANSI[style]}m{text}\x1b[0m"
