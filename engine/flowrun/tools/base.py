"""What a tool implementation receives and how it reports: ToolContext and helpers.

A built-in tool is a plain async function::

    async def read_file(ctx: ToolContext, *, path: str, start_line: int | None = None) -> ToolResult

The runtime validates the model's arguments against the tool manifest's `parameters` schema,
drops keys the schema does not declare, calls the function with the rest as keywords, and turns
any exception into a `status: error` result, so a tool never raises into the agent loop.

Loop control: a tool that must change the agent loop itself (finish, dashboard reset) sets
`ToolResult.control` to `Finish(result)` or `ResetContext()`; the runtime acts on it after all
tool calls of the step have returned.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowrun.tools.sandbox import SandboxPolicy
from flowrun.types import ToolError, ToolResult


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
    # run-scoped shared state, keyed by the owning module (background jobs, stream cursors)
    state: dict[str, Any] = field(default_factory=dict)
    # runtime hooks a tool may call: "call_agent", "ask_user", "emit" (set by the runtime)
    services: dict[str, Callable[..., Any]] = field(default_factory=dict)
    interactive: bool = False
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
        try:
            rel = path.resolve().relative_to(self.real(self.workspace))
        except ValueError:
            return str(path)
        return rel.as_posix() or "."


ToolFunction = Callable[..., Awaitable[ToolResult]]


def finish_result(
    result: ToolResult,
    params: dict[str, Any],
    started: float,
    path_resolved: str | None = None,
    **stats: Any,
) -> ToolResult:
    """Fill in the protocol's `stats` and `context` fields (time, inputs, resolved path)."""
    result.stats = {"time_ms": round((time.perf_counter() - started) * 1000, 2), **result.stats, **stats}
    result.context = {"params_input": params, **result.context}
    if path_resolved is not None:
        result.context["path_resolved"] = path_resolved
    return result


def error(code: str, message: str, **data: Any) -> ToolResult:
    return ToolResult(status="error", text=message, data=data, error=ToolError(code, message))
