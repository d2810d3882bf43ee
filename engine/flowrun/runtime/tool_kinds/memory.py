"""The `memory` tool: an agent's files across runs (manifest/memory.py says where), with the
command set of Anthropic's memory tool (`view`, `create`, `str_replace`, `insert`, `delete`,
`rename`, paths under /memories) plus `search` (tools/memory/), offered as a plain tool to every
provider. An agent that declares `memory:` is offered it without listing it in `tools:`; a
read-only one (`writes: reflect` during the run, `writes: none`) gets `view` and `search` only,
and the reflection at the end of the run (runtime/memory/reflect.py) gets every command.

A write is planned under the memory's writer lock (one writer per memory, across processes),
its text redacted first; a `memory_write` event (the path, the sha256 before and after) is on
disk before the file is replaced whole. A replay gives every call its recorded result and never
touches the memory; a resume that finds a write a kill interrupted looks at the folder: done
(the file is as the event's `after`), to do (as `before`), or of unknown effect (changed since)."""

from __future__ import annotations

import asyncio

from flowrun.events import ErrorEvent, MemoryWriteEvent
from flowrun.manifest.checks.tools import config_problems, entry_key_problems
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.graph import MEMORY_TOOL
from flowrun.manifest.kinds import EntryRef
from flowrun.manifest.project import Project
from flowrun.redaction import MARK, Redactor
from flowrun.runtime.loop.contracts import (
    AgentInstance,
    BindRequest,
    BoundTool,
    Invocation,
    RunServices,
    ToolKind,
)
from flowrun.runtime.memory.record import RecordedMemory
from flowrun.runtime.memory.service import Memory, RunMemory, memory_in_use, memory_of
from flowrun.tools.memory.commands import (
    COMMANDS,
    READ_COMMANDS,
    Change,
    Planned,
    applied,
    apply,
    check_caps,
    plan,
)
from flowrun.tools.memory.folder import MemoryFolder, Refused, writing
from flowrun.tools.memory.history import commit
from flowrun.tools.memory.search import search
from flowrun.types import ToolResult, ToolSpec

TEXT_ARGUMENTS = ("file_text", "new_str", "insert_text")  # what a write puts in a file: redacted first
DESCRIPTION = (
    "Your memory across runs: files under /memories (MEMORY.md is its index, which your prompt "
    "shows). Commands: view {path, view_range?} lists a folder or shows a file's numbered lines; "
    "search {query} finds the passages with any of the words;"
)
WRITE_DESCRIPTION = (
    " create {path, file_text} makes a new file; str_replace {path, old_str, new_str} replaces text "
    "that occurs exactly once; insert {path, insert_line, insert_text} inserts after line N (0: at "
    "the top); delete {path} removes a file or folder; rename {old_path, new_path}. Paths start with "
    "/memories/."
)


def parameters(commands: tuple[str, ...]) -> dict[str, object]:
    path = {"type": "string", "description": "A path under /memories, e.g. /memories/MEMORY.md."}
    properties: dict[str, object] = {
        "command": {"type": "string", "enum": list(commands), "description": "What to do."},
        "path": path,
        "view_range": {
            "type": "array",
            "items": {"type": "integer"},
            "minItems": 2,
            "maxItems": 2,
            "description": "view: [first line, last line] of a file (-1: to its end).",
        },
        "query": {"type": "string", "description": "search: the words to look for."},
    }
    if commands != READ_COMMANDS:
        properties |= {
            "file_text": {"type": "string", "description": "create: the new file's text."},
            "old_str": {"type": "string", "description": "str_replace: the exact text to replace."},
            "new_str": {"type": "string", "description": "str_replace: its replacement."},
            "insert_line": {
                "type": "integer",
                "minimum": 0,
                "description": "insert: after this line (0: at the top).",
            },
            "insert_text": {"type": "string", "description": "insert: the text to insert."},
            "old_path": path,
            "new_path": path,
        }
    return {
        "type": "object",
        "properties": properties,
        "required": ["command"],
        "additionalProperties": False,
    }


class MemoryKind(ToolKind):
    name = "memory"
    implementation = None  # declared by an agent's `memory:`, not in tools.d
    records = (RecordedMemory,)

    def claims(self, name: str, project: Project) -> bool:
        return name == MEMORY_TOOL

    def check_entry(self, entry: EntryRef) -> list[Diagnostic]:
        out = entry_key_problems(entry) + config_problems(entry, None)
        agent = next((a for a in entry.project.agents.values() if a.source is entry.src), None)
        if agent is not None and agent.spec.memory is None:
            message = f"agent '{agent.spec.name}' lists the memory tool but declares no `memory:`"
            hint = "add `memory: project` (or run, local, user) to the agent: it is then offered unlisted"
            out.append(entry.src.diag(entry.where(), message, hint, "memory-undeclared"))
        return out

    def bind(self, request: BindRequest) -> list[BoundTool]:
        config = request.agent.memory_config
        writable = config is not None and config.writes == "agent"
        return [self.tool(COMMANDS if writable else READ_COMMANDS)]

    def tool(self, commands: tuple[str, ...]) -> BoundTool:
        text = DESCRIPTION + (
            WRITE_DESCRIPTION if commands != READ_COMMANDS else " the memory is read-only for you."
        )
        bound = BoundTool(
            MEMORY_TOOL, ToolSpec(MEMORY_TOOL, text, parameters(commands)), self, target=commands
        )
        bound.replay = "recorded"  # a replay never reads or changes a memory: the recorded results
        return bound  # (idempotent: a resume finds an interrupted write by its call: `_resumed`)

    async def prepare(self, inst: AgentInstance, run: RunServices) -> bool:
        """A reflection's instance gets every command on the memory it serves."""
        if not memory_in_use(run, inst):
            return False
        memory = memory_of(run)
        memory.seen_instance(inst)
        if inst.id not in memory.targets:
            return False
        found = inst.tools.get(MEMORY_TOOL)
        if found is not None and found.kind is self and found.target == COMMANDS:
            return False
        inst.tools = {**inst.tools, MEMORY_TOOL: self.tool(COMMANDS)}
        return True

    async def invoke(self, bound: BoundTool, call: Invocation) -> ToolResult:
        inst, service = call.caller, memory_of(call.run)
        command = call.arguments.get("command")
        if command not in bound.target:
            offered = ", ".join(bound.target)
            return ToolResult.fail(
                "PERMISSION_DENIED", f"the memory is read-only for this agent: {offered} only"
            )
        try:
            memory = service.memory(service.owner(inst.name, inst.id))
            if command == "search":
                return await _search(memory, call.arguments.get("query"))
            if command == "view":
                return _result(plan(memory.folder, call.arguments), memory, 0)
            return await _write(service, memory, call)
        except Refused as e:
            return ToolResult.fail(e.code, e.message)


async def _search(memory: Memory, query: object) -> ToolResult:
    if not isinstance(query, str):
        raise Refused("INVALID_PARAM", "search needs `query` (the words to look for)")
    async with writing(memory.folder):  # the index is brought up to date with the files
        hits = await asyncio.to_thread(search, memory.folder, query)
    if not hits:
        return ToolResult.ok(f"no passage of the memory matches {query!r}", hits=[])
    lines = [f"{len(hits)} passage(s) match, best first:"] + [f"{h.path}:{h.line}: {h.snippet}" for h in hits]
    return ToolResult.ok(
        "\n".join(lines), hits=[{"path": h.path, "line": h.line, "snippet": h.snippet} for h in hits]
    )


async def _write(service: RunMemory, memory: Memory, call: Invocation) -> ToolResult:
    inst, run = call.caller, call.run
    folder = memory.folder
    _within_file_cap(folder, call.arguments)  # (before redacting megabytes it would refuse)
    arguments, redacted = _redacted(call.arguments, run.redactor)
    async with writing(folder):
        done = _resumed(service, memory, inst.id, call.call.id)
        if done is not None:
            return done
        planned = plan(folder, arguments)
        change = planned.change
        if change is None:
            return _result(planned, memory, redacted)
        run.emit(
            MemoryWriteEvent(
                agent=inst.name,
                agent_id=inst.id,
                call_id=call.call.id,
                memory=memory.name,
                command=change.command,
                path=folder.virtual(change.path),
                to=folder.virtual(change.to) if change.to is not None else None,
                before=change.before_digest,
                after=change.after_digest,
            )
        )
        await asyncio.to_thread(apply, folder, change)
        problem = (
            await commit(folder, f"{run.run_id} {inst.name}: {change.command} {folder.virtual(change.path)}")
            if memory.spec.git
            else None
        )
    if problem is not None:
        run.emit(ErrorEvent(agent=inst.name, agent_id=inst.id, where="memory", message=problem))
        planned.text += f" (not committed: {problem})"
    return _result(planned, memory, redacted)


def _resumed(service: RunMemory, memory: Memory, agent_id: str, call_id: str) -> ToolResult | None:
    """A resumed run's answer for a write a kill interrupted after its event; None: make it."""
    record = service.record
    event = record.writes.get((agent_id, call_id)) if record.resuming else None
    if event is None:
        return None
    folder = memory.folder
    to = folder.rel(event.to) if event.to is not None else None
    state = applied(folder, event.command, folder.rel(event.path), to, event.before, event.after)
    if state is False:
        return None
    if state:
        return ToolResult.ok(
            f"{event.command} {event.path}: done (it was written before the run was stopped)"
        )
    return ToolResult.fail(
        "EFFECT_UNKNOWN",
        f"this {event.command} of {event.path} was started before the run was stopped, and the file has "
        "changed since; view it before deciding whether to make the change again",
    )


def _within_file_cap(folder: MemoryFolder, arguments: dict[str, object]) -> None:
    """Refused when a text the call writes is alone over the memory's cap per file."""
    for name in TEXT_ARGUMENTS:
        value = arguments.get(name)
        if isinstance(value, str) and len(value) > folder.caps.max_file_bytes:
            path = arguments.get("path")
            check_caps(folder, Change(str(arguments.get("command")), folder.rel(path), None, value.encode()))


def _redacted(arguments: dict[str, object], redactor: Redactor) -> tuple[dict[str, object], int]:
    """The call's arguments with every secret taken out of the text it writes, and how many."""
    out, count = dict(arguments), 0
    for name in TEXT_ARGUMENTS:
        value = out.get(name)
        if isinstance(value, str):
            clean = redactor.text(value)
            count += clean.count(MARK) - value.count(MARK)
            out[name] = clean
    return out, count


def _result(planned: Planned, memory: Memory, redacted: int) -> ToolResult:
    text = planned.text
    if redacted:  # said on the first line, with what it did
        first, _, rest = text.partition("\n")
        note = f" ({redacted} secret(s) replaced by {MARK} before anything was written)"
        text = first + note + (f"\n{rest}" if rest else "")
    result = ToolResult.ok(text, **planned.data)
    result.context["memory"] = memory.name
    return result


KIND = MemoryKind()
