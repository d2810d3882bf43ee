"""What a tool implementation receives and how it reports: ToolContext and helpers.

A built-in tool is a plain async function::

    async def read_file(ctx: ToolContext, *, path: str, start_line: int | None = None) -> ToolResult

The runtime validates the model's arguments against the tool manifest's `parameters` schema,
drops keys the schema does not declare, calls the function with the rest as keywords, and turns
any exception into a `status: error` result, so a tool never raises into the agent loop.

Loop control: a tool that must change the agent loop itself (finish, dashboard reset) sets
`ToolResult.control` to `Finish(result)` or `ResetContext()`; the runtime acts on it after all
tool calls of the step have returned.

Properties: a tool says what the engine must know about it (writes files, reads files, runs
alone, reuses its recorded result on replay, safe to repeat, parameters made from config) in its
manifest (`tools.d/NAME.yaml`) and/or with the `@tool(...)` decorator on its function; where
both say something, the manifest wins.

Shared state: `ctx.state` is the run's `RunState` (one object per type, e.g. the shell's
background jobs: `ctx.state.of(ShellJobs)`); `ctx.services` the run's hooks (`ask_user`, `emit`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar, get_args, runtime_checkable

from flowrun.events import Event
from flowrun.tools.sandbox import SandboxPolicy
from flowrun.types import FileUse, ReplayUse, ToolError, ToolResult

T = TypeVar("T")
ToolFunction = Callable[..., Awaitable[ToolResult]]
F = TypeVar("F", bound=ToolFunction)
# whether a call with these (validated, defaults filled) arguments may safely run twice
IdempotentRule = Callable[[dict[str, Any]], bool]
# (search path, the agent's config for the tool) -> the parameters schema, or None: the manifest's
DynamicParameters = Callable[[list[Path], dict[str, Any]], dict[str, Any] | None]
# a person's answer to a question: plain or awaitable; EOFError when the input is closed
AskUser = Callable[[str], Awaitable[str] | str]
PROPERTIES_ATTRIBUTE = "__flowrun_tool__"


# ---------------------------------------------------------------- declared properties


@dataclass(frozen=True, slots=True)
class ToolProperties:
    """What a tool's function declares about itself with `@tool(...)`. None: not said (the
    manifest's key, else the engine's default, decides)."""

    files: FileUse | None = None  # read | write | change: the path it is given (see tool())
    replay: ReplayUse | None = None  # run | recorded: what a replay does with a recorded call
    sequential: bool | None = None  # never concurrently with the step's other calls
    idempotent: bool | IdempotentRule | None = None  # safe to repeat: a flag, or a rule on arguments
    parameters: DynamicParameters | None = None  # the parameters schema, made at bind time
    foreign_text: bool = False  # its results frame text from outside the workflow (foreign_text.py)


def tool(
    *,
    files: FileUse | None = None,
    replay: ReplayUse | None = None,
    sequential: bool | None = None,
    idempotent: bool | IdempotentRule | None = None,
    parameters: DynamicParameters | None = None,
    foreign_text: bool = False,
) -> Callable[[F], F]:
    """Declare a tool function's properties; the function itself is returned unchanged::

        @tool(files="write", idempotent=lambda args: args.get("mode") != "append")
        async def save(ctx: ToolContext, *, path: str, text: str, mode: str = "create") -> ToolResult: ...

    - files: "read" (a dry run gives it a file that exists), "write" (each result's
      `context.path_resolved` counts as a file the agent wrote: an agent-as-tool lists it to its
      caller) or "change" (it deletes or makes folders: a dry run gives it only the agent's own
      path, never another existing file)
    - replay: "recorded": `flowrun replay` and `flowrun test` give the model the recorded result
      without running the tool (the network, a person); "run" (default): it runs again
    - sequential: it runs alone, after the step's other calls
    - idempotent: False, or a rule `(arguments) -> bool`: a call that is not safe to repeat is
      recorded before it starts, and a resume never runs it blindly a second time
    - parameters: `(search_path, config) -> schema | None`, the parameters the model sees (an
      enum of what the agent's config allows), over the manifest's
    - foreign_text: its results hold text from outside the workflow (a page, a remote service),
      framed with `flowrun.foreign_text.frame`: the agent's system prompt then says once what
      such blocks are
    A tool manifest's `files`, `replay`, `sequential` and `idempotent` keys win over these."""
    if files is not None and files not in get_args(FileUse):
        raise ValueError(f"@tool(files={files!r}): expected one of {', '.join(get_args(FileUse))}")
    if replay is not None and replay not in get_args(ReplayUse):
        raise ValueError(f"@tool(replay={replay!r}): expected one of {', '.join(get_args(ReplayUse))}")
    declared = ToolProperties(files, replay, sequential, idempotent, parameters, foreign_text)

    def mark(func: F) -> F:
        setattr(func, PROPERTIES_ATTRIBUTE, declared)
        return func

    return mark


def tool_properties(func: object) -> ToolProperties:
    """What `@tool(...)` declared on `func` (nothing said when it was not decorated)."""
    found = getattr(func, PROPERTIES_ATTRIBUTE, None)
    return found if isinstance(found, ToolProperties) else ToolProperties()


# ---------------------------------------------------------------- what a run shares with its tools


@runtime_checkable
class Closable(Protocol):
    async def aclose(self) -> None: ...


class RunState:
    """What the tools of one run share, one object per type: `ctx.state.of(ShellJobs)` is the
    run's ShellJobs, made with `ShellJobs()` on first use, and typed as one. A tool module (a
    user's too) keeps its run-scoped state in a class of its own, so no two modules share a key.
    When the run ends, the runtime awaits `aclose()` of each object that has one."""

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: dict[type[Any], object] = {}

    def of(self, kind: type[T]) -> T:
        found = self._parts.get(kind)
        if isinstance(found, kind):
            return found
        made = kind()
        self._parts[kind] = made
        return made

    def find(self, kind: type[T]) -> T | None:
        """The run's `kind` if a tool made it, without making one."""
        found = self._parts.get(kind)
        return found if isinstance(found, kind) else None

    async def aclose(self) -> None:
        """Release what the tools hold (background jobs are killed); a failure of one part does
        not keep the others open."""
        parts = [p for p in self._parts.values() if isinstance(p, Closable)]
        await asyncio.gather(*(p.aclose() for p in parts), return_exceptions=True)


def _no_event(event: Event) -> None:
    """Where events go when no run is listening (a tool called on its own, in a test)."""


@dataclass(frozen=True, slots=True)
class ToolServices:
    """The run's hooks a tool may call (filled by the runtime)."""

    # asks the person running the workflow; None when nobody can answer (see ToolContext.interactive)
    ask_user: AskUser | None = None
    # writes an event to the run's log (and to its subscribers: progress display, UI)
    emit: Callable[[Event], None] = _no_event


@dataclass(slots=True)
class ToolContext:
    """Everything a tool may touch. Paths: `base_dir` is the root a file tool is confined to
    (the run's workspace unless the agent's tool config sets `base_dir`); `cwd` is where relative
    paths and shell commands start (a step may set a working folder below the workspace)."""

    workspace: Path
    base_dir: Path
    cwd: Path
    run_dir: Path
    agent_name: str = ""
    agent_id: str = ""
    call_id: str = ""
    tool_name: str = ""
    # tool manifest `defaults`, overlaid with the agent's per-tool config
    config: dict[str, Any] = field(default_factory=dict)
    # tool manifest `limits` (timeout_s, max_output_bytes, ...)
    limits: dict[str, Any] = field(default_factory=dict)
    # project folders (next to the workflow file first, then the built-ins): skills/, corpus/
    search_path: list[Path] = field(default_factory=list)
    # run-scoped shared state, one object per type (background jobs, stream cursors)
    state: RunState = field(default_factory=RunState)
    # the run's hooks: ask_user, emit
    services: ToolServices = field(default_factory=ToolServices)
    interactive: bool = False
    # a dry run: a tool that would reach a paid or remote service answers offline instead
    # (web_search searches the corpus, visit_url reads only file:// URLs)
    dry_run: bool = False
    # engine-owned files in the workspace root (events.jsonl, ...): no tool may touch them
    protected: frozenset[str] = frozenset()
    # how processes the tool starts are confined (required by default: fail closed)
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)
    # writes must stay inside this folder (a sub-agent called with `output_dir`); None: no limit
    write_within: Path | None = None
    # the context's own folders (workspace, base_dir, cwd, run_dir) resolved, once per call
    resolved: dict[Path, Path] = field(default_factory=dict, repr=False, compare=False)

    def real(self, folder: Path) -> Path:
        """`folder.resolve()` for one of the context's own folders, walked once per call (a
        file tool's checks and messages need them several times). Paths a tool is given are
        always resolved afresh (paths.resolve_path)."""
        found = self.resolved.get(folder)
        if found is None:
            found = self.resolved[folder] = folder.resolve()
        return found

    def relative(self, path: Path) -> str:
        """`path` as the model and the event log should see it: relative to the workspace."""
        return self.shown(path.resolve())

    def shown(self, resolved: Path) -> str:
        """`relative` for a path paths.resolve_path gave (already without symlinks: it is not
        walked again, and a final symlink it kept as itself is shown as itself)."""
        try:
            rel = resolved.relative_to(self.real(self.workspace))
        except ValueError:
            return str(resolved)
        return rel.as_posix() or "."


def finish_result(
    result: ToolResult,
    params: Mapping[str, object],
    started: float,
    path_resolved: str | None = None,
    **stats: object,
) -> ToolResult:
    """Fill in the protocol's `stats` and `context` fields (time, inputs, resolved path)."""
    result.stats = {"time_ms": round((time.perf_counter() - started) * 1000, 2), **result.stats, **stats}
    result.context = {"params_input": params, **result.context}
    if path_resolved is not None:
        result.context["path_resolved"] = path_resolved
    return result


def error(code: str, message: str, **data: object) -> ToolResult:
    return ToolResult(status="error", text=message, data=data, error=ToolError(code, message))
