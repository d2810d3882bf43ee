"""`flowrun show RUN_DIR`: one run as a tree of agent invocations (nested as they called each
other) with their tool calls, notes and timings, then a summary; everything from the run's
summary (runtime/summary/), the one `flowrun runs`, the HTTP API and the web UI read too."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from io import StringIO
from pathlib import Path

from rich.console import Console, RenderableType
from rich.text import Text
from rich.tree import Tree

from flowrun.cli.views.runs_table import STATUS_STYLE, format_cost, format_duration
from flowrun.cli.views.runs_table import short as _short
from flowrun.errors import FlowrunError, RunError
from flowrun.events import AgentPromptEvent
from flowrun.records import run_record
from flowrun.runtime.durable.event_log import read_events
from flowrun.runtime.options import RunOptions
from flowrun.runtime.summary.fold import Call, Group, Invocation, Item, Note
from flowrun.runtime.summary.folder import LIST_HINT, RunSummary, read_summary
from flowrun.types import Usage

NOTE_STYLE = {"error": "red", "warn": "yellow", "info": "dim"}


def _render(renderables: list[RenderableType], width: int, color: bool | None) -> str:
    """Render into a string; plain text (no escape codes) unless colour is asked for."""
    color = sys.stdout.isatty() if color is None else color
    buffer = StringIO()
    console = Console(
        file=buffer,
        width=width,
        force_terminal=color,
        color_system="standard" if color else None,
        highlight=False,
        emoji=False,
        markup=False,
    )
    for renderable in renderables:
        console.print(renderable)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines())


def _ms(start: float | None, end: float | None) -> str:
    if start is None or end is None:
        return "?"
    ms = (end - start) * 1000
    if ms < 10:
        return f"{ms:.1f} ms"
    return f"{ms:.0f} ms" if ms < 10_000 else format_duration(ms / 1000)


def _status(status: str) -> Text:
    return Text(status, style=STATUS_STYLE.get(status, ""))


def _arguments(arguments: object, limit: int = 60) -> str:
    if isinstance(arguments, dict):
        text = ", ".join(f"{k}={_short(v, 40)}" for k, v in arguments.items())
    else:
        text = str(arguments or "")
    return _short(text, limit)


def _tokens(usage: Usage) -> str:
    parts = f"{usage.input_tokens:,} in / {usage.output_tokens:,} out"
    if usage.cache_read_tokens:
        parts += f" / {usage.cache_read_tokens:,} cached"
    return f"{usage.total:,} tokens ({parts})"


# ------------------------------------------------------------------ the tree of one run


def _agent_label(inst: Invocation, summary: RunSummary) -> Text:
    status = inst.status or summary.unfinished()
    label = Text.assemble((inst.agent, "bold"), f" ({inst.model}) ", _status(status))
    label.append(f" · {inst.steps} step(s) · {_tokens(inst.usage)} · {_ms(inst.start, inst.end)}")
    if inst.budget:
        limits = ", ".join(f"{k.removeprefix('max_')} {v:g}" for k, v in inst.budget.items())
        label.append(f" · budget {limits}", style="yellow" if inst.status == "budget_exceeded" else "")
    if inst.children():
        tokens, cost = inst.subtree()
        label.append(f" · sub-tree {tokens:,} tokens, {format_cost(cost)}")
    return label


def _call_label(call: Call) -> Text:
    mark = {"success": "✓", "partial": "~", "error": "✗"}.get(call.status or "", "…")
    label = Text.assemble((f"{mark} ", STATUS_STYLE.get(call.status or "", "")), (call.tool, "bold"))
    label.append(f" {_arguments(call.arguments)}" if call.arguments else "")
    if call.status is None:
        label.append(" · no result", style="yellow")
    else:
        label.append(f" · {_ms(call.start, call.end)}")
        if call.status == "partial":
            label.append(" · partial", style=STATUS_STYLE["partial"])
    if call.error:
        label.append(f" · {_short(call.error, 100)}", style="red")
    return label


def _note(note: Note) -> Text:
    return Text(_short(note.text, 200), style=NOTE_STYLE.get(note.level, ""))


def _add_items(tree: Tree, items: Sequence[Item], summary: RunSummary) -> None:
    for item in items:
        if isinstance(item, Invocation):
            _add_items(tree.add(_agent_label(item, summary)), item.items, summary)
        elif isinstance(item, Call):
            branch = tree.add(_call_label(item))
            _add_items(branch, item.agents, summary)
        elif isinstance(item, Group):
            outcome = f" · {item.outcome}" if item.outcome else ""
            _add_items(tree.add(Text(f"{item.label}{outcome}", style="magenta")), item.items, summary)
        else:
            tree.add(_note(item))


def _summary_lines(summary: RunSummary) -> list[str]:
    entry, fold = summary.entry, summary.fold
    ended = (
        "" if fold.end is not None or entry.status == "running" else " (no end recorded: killed or crashed)"
    )
    inputs = entry.inputs
    lines = [
        f"status: {entry.status}{ended}",
        f"workflow: {entry.workflow} ({summary.workflow_file})" + (", dry run" if entry.dry_run else ""),
        "inputs: " + (", ".join(f"{k}={_short(v, 60)}" for k, v in inputs.items()) or "(none)"),
        f"duration: {format_duration(entry.duration_s if entry.duration_s is not None else _span(summary))}"
        f" (first to last of {fold.events} events)",
        f"model steps: {entry.steps} · {_tokens(fold.usage)} · cost {format_cost(entry.cost_usd)}"
        + (f" · {fold.retries} model retries" if fold.retries else ""),
        f"tool calls: {fold.tool_calls} ({fold.tool_errors} errors)",
    ]
    if options := recorded_options(summary).summary():
        lines.append(f"options: {options}")
    if output := summary.output:
        written = (entry.path / output).exists()
        lines.append(f"output: {output}" + ("" if written else " (not written)"))
    lines.extend(_short(note.text, 300) for note in fold.notes)
    if entry.status == "waiting":
        lines.extend(waiting_lines(entry.path, summary.meta))
    if entry.status not in ("completed", "waiting", "running") and summary.message:
        lines.append(f"message: {_short(summary.message.splitlines()[0], 300)}")
    return lines


def _span(summary: RunSummary) -> float | None:
    first, last = summary.fold.first_t, summary.fold.last_t
    return None if first is None or last is None else last - first


def recorded_options(summary: RunSummary) -> RunOptions:
    """The run's options from run.json, else from its run_start event (any layout, the flat one
    of earlier versions too); the defaults when neither can be read."""
    meta, start = summary.meta, summary.fold.start
    record = meta if "options" in meta or "dry_run" in meta else (start.to_dict() if start else {})
    try:
        return RunOptions.from_record(run_record(record))
    except (FlowrunError, TypeError, ValueError):  # a damaged or hand-edited record
        return RunOptions()


def waiting_lines(run_dir: Path, meta: Mapping[str, object]) -> list[str]:
    """What a waiting run waits for (run.json's `pending`), and how to decide."""
    from flowrun.runtime.durable.decisions import handle, how_to_decide, pending_in_meta

    pending = pending_in_meta(meta)
    lines = []
    for p in pending:  # named as `--call` takes it, and by the ref that names that request only
        named = handle(p, pending)
        lines.append(f"waiting for: {named}: {p.describe()}" + ("" if named == p.ref else f" (ref {p.ref})"))
    if not pending:
        return [f"waiting: its decisions are taken; continue with `flowrun resume {run_dir}`"]
    return [*lines, how_to_decide(run_dir, pending)]


def show_run(run_dir: Path, *, width: int = 120, color: bool | None = None) -> str:
    """One run as a tree of agent invocations with their tool calls and timings, then a summary.
    Plain text unless `color` (default: stdout is a TTY)."""
    summary = read_summary(run_dir)
    if not summary.fold.events:
        raise RunError(
            f"{run_dir}/events.jsonl holds no events",
            "the run stopped before its first event; see flowrun.log in that folder if present",
        )
    root = Tree(Text.assemble(("run ", "bold"), (run_dir.name, "bold cyan")))
    _add_items(root, summary.fold.roots, summary)
    return _render([root, "", *_summary_lines(summary)], width, color)


# ------------------------------------------------------------------ what each agent was told


def show_prompts(run_dir: Path, agent: str | None = None) -> str:
    """Each agent instance's rendered system prompt and tool list, from its `agent_prompt`
    event, in the order the instances started; `agent` keeps one agent's instances."""
    if not (run_dir / "events.jsonl").is_file():
        raise RunError(f"{run_dir} has no events.jsonl, so it is not a flowrun run folder", LIST_HINT)
    found = [e for e in read_events(run_dir / "events.jsonl") if isinstance(e, AgentPromptEvent)]
    if not found:
        raise RunError(f"{run_dir} records no prompts", "runs made before flowrun recorded prompts have none")
    names = sorted({e.agent for e in found})
    if agent is not None:
        found = [e for e in found if e.agent == agent]
        if not found:
            raise RunError(f"no agent '{agent}' in {run_dir}", "its agents: " + ", ".join(names))
    blocks: list[str] = []
    for event in found:
        rule = f"── {event.agent_id} · agent {event.agent} · model {event.model} "
        tools = [f"  - {t['name']}: {_short(t.get('description', ''), 100)}" for t in event.tools]
        blocks.append(
            "\n".join(
                [rule.ljust(100, "─"), event.system, "", f"tools ({len(event.tools)}):", *tools]
                if tools
                else [rule.ljust(100, "─"), event.system, "", "tools: (none)"]
            )
        )
    return "\n\n".join(blocks)
