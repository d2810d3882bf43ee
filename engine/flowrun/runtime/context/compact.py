"""The `compact` context strategy: when an agent's prompt nears a share of its model's context
window, older turns are written to a workspace file and replaced by a summary and that path."""

from __future__ import annotations

import json
from typing import Literal

from pydantic import Field

from flowrun.atomic_files import replace_beneath
from flowrun.errors import ProviderError
from flowrun.events import ContextCompactedEvent
from flowrun.manifest.specs import StrategySpec
from flowrun.runtime.loop.contracts import AgentInstance, ContextStrategy, LoopServices
from flowrun.types import Message

SUMMARY_SYSTEM = (
    "You compress the earlier part of an AI agent's working conversation. Write a dense summary "
    "(at most 300 words) of what was asked, what was done, what was found, which files were written "
    "or read, and what is still open. Facts and file paths only; no preamble."
)


class CompactContext(StrategySpec):
    """Near the context limit, older turns are summarised and moved to a file."""

    strategy: Literal["compact"]
    compact_at: float = Field(
        default=0.75, gt=0, lt=1, description="Share of the context window that triggers it."
    )
    keep_recent: int = Field(default=6, ge=1, description="Recent turns kept verbatim.")


def estimate_tokens(inst: AgentInstance) -> int:
    """A cheap estimate (4 characters a token) of the next prompt's size."""
    chars = len(inst.system)
    for m in inst.messages:
        chars += len(m.content) + sum(len(json.dumps(c.arguments)) for c in m.tool_calls)
    chars += sum(len(json.dumps(b.spec.parameters)) + len(b.spec.description) for b in inst.tools.values())
    return chars // 4


def needs_compaction(inst: AgentInstance, ctx: CompactContext) -> bool:
    return estimate_tokens(inst) > ctx.compact_at * inst.model.context_window


def split_point(messages: list[Message], keep: int) -> int:
    """Index where the kept tail starts: an assistant turn, so no tool result loses its call."""
    index = max(1, len(messages) - keep)
    while index > 1 and messages[index].role != "assistant":
        index -= 1
    return index


def transcript(messages: list[Message]) -> str:
    parts = []
    for m in messages:
        calls = "".join(
            f"\n  -> {c.name}({json.dumps(c.arguments, ensure_ascii=False)})" for c in m.tool_calls
        )
        parts.append(f"### {m.role}{' (' + m.name + ')' if m.name else ''}\n{m.content}{calls}")
    return "\n\n".join(parts)


def mechanical_summary(messages: list[Message]) -> str:
    lines = [f"- {m.role}: {m.content[:160].strip()}" for m in messages if m.content.strip()]
    return "\n".join(lines[-40:])


async def compact(services: LoopServices, inst: AgentInstance, ctx: CompactContext) -> None:
    messages = inst.messages
    cut = split_point(messages, ctx.keep_recent)
    older = messages[1:cut]
    if not older:
        return
    text = transcript(older)
    count = sum(1 for m in messages if m.content.startswith("[Earlier turns")) + 1
    rel = f"context/{inst.id.replace('/', '__').replace('@', '_')}-{count}.md"
    path = services.workspace / rel
    replace_beneath(services.workspace, path, text)
    try:
        summary = await services.side_call(inst, SUMMARY_SYSTEM, text, purpose="compact")
    except ProviderError:
        summary = mechanical_summary(older)
    note = (
        f"[Earlier turns ({len(older)} messages) were compacted to save context. "
        f"Summary:\n{summary.strip()}\n"
        f"The full transcript is in {rel}; read it if you need details.]"
    )
    before = len(messages)
    inst.messages = [messages[0], Message("user", note), *messages[cut:]]
    services.emit(
        ContextCompactedEvent(
            agent=inst.name,
            agent_id=inst.id,
            messages_before=before,
            messages_after=len(inst.messages),
            transcript=rel,
        )
    )


class CompactStrategy(ContextStrategy):
    name = "compact"
    spec = CompactContext

    async def before_call(self, inst: AgentInstance, services: LoopServices) -> None:
        ctx = inst.spec.context
        if isinstance(ctx, CompactContext) and needs_compaction(inst, ctx):
            await compact(services, inst, ctx)


STRATEGY = CompactStrategy()
