"""`flowrun show RUN --messages`: each agent instance's conversation (folded from events.jsonl
by runtime/summary/conversations.py) as text, a sub-agent's under the call that started it, so
an instructor/worker or orchestrator/sub-agent exchange reads in order; the same as data
(`--json`): one object per instance, flat."""

from __future__ import annotations

import json
from pathlib import Path

from flowrun.errors import RunError
from flowrun.runtime.durable.event_log import read_events
from flowrun.runtime.summary.conversations import Call, Conversations, Segment, Turn
from flowrun.types import ToolResult

LIST_HINT = "pass a run folder such as runs/<run-id>; `flowrun runs` lists them"
FOLD_LINES = 20  # a longer text shows its first lines and says how many more there are
FOLD_CHARS = 2000


# ------------------------------------------------------------------ reading a run


def read_conversations(run_dir: Path) -> Conversations:
    if not run_dir.is_dir():
        raise RunError(f"{run_dir} is not a folder", LIST_HINT)
    if not (run_dir / "events.jsonl").is_file():
        raise RunError(f"{run_dir} has no events.jsonl, so it is not a flowrun run folder", LIST_HINT)
    found = Conversations()
    for event in read_events(run_dir / "events.jsonl"):
        found.feed(event)
    if not found.instances:
        raise RunError(f"{run_dir} records no agent", "the run stopped before its first agent started")
    return found


def _chosen(found: Conversations, agent: str | None, run_dir: Path) -> list[Segment | Turn]:
    """The segments to print: the top-level ones (sub-agents nested under their calls), or
    every segment of one agent's instances, in the order they ran."""
    if agent is None:
        return found.roots
    names = sorted({inst.agent for inst in found.instances.values()})
    if agent not in names:
        raise RunError(f"no agent '{agent}' in {run_dir}", "its agents: " + ", ".join(names))
    return [s for s in found.started if s.instance.agent == agent]


# ------------------------------------------------------------------ text


def fold(text: str, full: bool, hint: str) -> str:
    """`text`, or its first lines and how much is left out (unless `full`)."""
    if full:
        return text
    lines = text.splitlines()
    shown = lines[:FOLD_LINES]
    kept = "\n".join(shown)
    if len(kept) > FOLD_CHARS:
        kept = kept[:FOLD_CHARS]
        shown = kept.splitlines()
    if kept == text or kept == "\n".join(lines):
        return text
    rest_lines = len(lines) - len(shown)
    rest_chars = len(text) - len(kept)
    more = f"{rest_lines} more line(s)" if rest_lines > 0 else f"{rest_chars} more character(s)"
    return f"{kept}…\n[… {more}: {hint} shows all]"


def _arguments_text(arguments: object) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False)


class _Writer:
    def __init__(self, full: bool, hint: str) -> None:
        self.full = full
        self.hint = hint
        self.lines: list[str] = []

    def block(self, prefix: str, label: str, text: str) -> None:
        """`label` on its own line, then `text` indented under it (folded when long)."""
        self.lines.append(f"{prefix}{label}")
        body = fold(text, self.full, self.hint)
        for line in body.splitlines() or [""]:
            self.lines.append(f"{prefix}    {line}".rstrip())

    def segment(self, segment: Segment, prefix: str) -> None:
        inst = segment.instance
        model = segment.model or inst.model
        facts = [inst.agent_id, f"model {model}"] + ([f"session {inst.session}"] if inst.session else [])
        head = f"{prefix}── {inst.agent} · " + " · ".join(facts) + " "
        self.lines.append(head.ljust(max(len(head), 100), "─"))
        if segment.ongoing:
            self.lines.append(f"{prefix}(its conversation goes on from its earlier call)")
        for turn in segment.turns:
            self.turn(turn, prefix)

    def turn(self, turn: Turn, prefix: str) -> None:
        if turn.role == "system":
            label = "system (re-rendered: more tools bound)" if turn.kind == "updated" else "system"
            self.block(prefix, label, turn.text)
        elif turn.role == "user":
            label = {"task": "user (task)", "engine": "user (from flowrun)"}.get(turn.kind, "user")
            self.block(prefix, label, turn.text)
        elif turn.role == "note":
            first, _, rest = turn.text.partition("\n")
            self.lines.append(f"{prefix}[{first}]")
            if rest:
                body = fold(rest, self.full, self.hint)
                self.lines.extend(f"{prefix}    {line}".rstrip() for line in body.splitlines())
        else:
            self.answer(turn, prefix)

    def answer(self, turn: Turn, prefix: str) -> None:
        if turn.thinking:
            self.block(prefix, "assistant (thinking)", turn.thinking)
        if turn.text or not turn.calls:
            self.block(prefix, "assistant", turn.text or "(no text)")
        elif not turn.thinking:
            self.lines.append(f"{prefix}assistant")
        for call in turn.calls:
            arguments = fold(_arguments_text(call.arguments), self.full, self.hint)
            first, *rest = arguments.splitlines() or [""]
            self.lines.append(f"{prefix}  → {call.name} {first}".rstrip())
            self.lines.extend(f"{prefix}      {line}".rstrip() for line in rest)
        for call in turn.calls:
            for segment in call.segments:
                self.segment(segment, prefix + "  │ ")
            self.result(call, prefix)

    def result(self, call: Call, prefix: str) -> None:
        result = call.result
        if result is None:
            self.lines.append(f"{prefix}tool {call.name} [{call.id}]: no result (the run stopped first)")
            return
        self.block(prefix, f"tool {call.name} [{call.id}]: {result.status}", result.model_text())


def format_messages(run_dir: Path, agent: str | None = None, full: bool = False) -> str:
    """Each conversation as text: sub-agents under the calls that ran them (or, with `agent`,
    that agent's instances one after another), long texts folded unless `full`."""
    found = read_conversations(run_dir)
    hint = f"`flowrun show {run_dir} --messages --full`"
    writer = _Writer(full, hint)
    for item in _chosen(found, agent, run_dir):
        if isinstance(item, Segment):
            writer.segment(item, "")
        else:
            writer.lines.append(f"[{item.text}]")
        writer.lines.append("")
    return "\n".join(writer.lines).rstrip()


# ------------------------------------------------------------------ JSON


def messages_json(run_dir: Path, agent: str | None = None) -> list[dict[str, object]]:
    """One object per instance (in the order they started): its agent, id, parent, model and
    session, and its messages in order; a call that ran a sub-agent names its instance
    (`agent_id`), whose own object holds that conversation. Never folded."""
    found = read_conversations(run_dir)
    if agent is not None:
        _chosen(found, agent, run_dir)  # the error for an unknown agent
    out: list[dict[str, object]] = []
    for inst in found.instances.values():
        if agent is not None and inst.agent != agent:
            continue
        if not inst.segments:
            continue
        out.append(
            {
                "agent": inst.agent,
                "agent_id": inst.agent_id,
                "parent": inst.parent,
                "model": inst.model,
                "session": inst.session,
                "messages": [m for turn in inst.turns for m in _turn_json(turn)],
            }
        )
    return out


def _turn_json(turn: Turn) -> list[dict[str, object]]:
    if turn.role == "system":
        system: dict[str, object] = {"role": "system", "text": turn.text}
        return [system | ({"kind": turn.kind} if turn.kind else {})]
    if turn.role in ("user", "note"):
        return [{"role": turn.role, "kind": turn.kind, "text": turn.text}]
    answer: dict[str, object] = {"role": "assistant", "text": turn.text}
    if turn.thinking:
        answer["thinking"] = turn.thinking
    answer["tool_calls"] = [_call_json(call) for call in turn.calls]
    results = [
        {"role": "tool", "call_id": call.id, "name": call.name} | _result_json(call.result)
        for call in turn.calls
    ]
    return [answer, *results]


def _call_json(call: Call) -> dict[str, object]:
    out: dict[str, object] = {"id": call.id, "name": call.name, "arguments": call.arguments}
    agents = list(dict.fromkeys(s.instance.agent_id for s in call.segments))
    if agents:
        out["agent_ids"] = agents
    return out


def _result_json(result: ToolResult | None) -> dict[str, object]:
    if result is None:
        return {"status": None, "text": None}
    out: dict[str, object] = {"status": result.status, "text": result.model_text()}
    if result.error is not None:
        out["error"] = {"code": result.error.code, "message": result.error.message}
    return out
