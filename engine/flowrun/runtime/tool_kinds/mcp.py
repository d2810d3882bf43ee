"""MCP tools: an agent's tool entry `SERVER` (all the server's allowed tools) or `SERVER.TOOL`
(one), for servers declared in the workflow's `mcp_servers:` or a `.mcp.json` next to it.

A server starts once per run, when the first agent that lists it is about to call its model
(the model needs the tools' schemas), and stops with the run. Until then the entry is bound as
a placeholder; `prepare` replaces it with one bound tool per remote tool, named
`SERVER__TOOL` for the model, described in the server's words framed as data (and its results
framed so too: tools/remote/mcp_client.py). A stdio server runs inside the sandbox: the workflow's `sandbox:`
with the server's own over it; it sees the run folder (read-write), the folder of the file that
declares it (read-only: relative paths in `.mcp.json` work) and the project's skills."""

from __future__ import annotations

import asyncio
import hashlib
import re
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field

from flowrun.errors import RunError
from flowrun.foreign_text import frame
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.ecosystem.mcp_config import server_policy
from flowrun.manifest.ecosystem.mcp_refs import McpRef, check_entry, mcp_ref
from flowrun.manifest.kinds import EntryRef, SandboxQuery
from flowrun.manifest.project import Loaded, Project
from flowrun.manifest.specs import McpServerSpec
from flowrun.runtime.loop.contracts import (
    AgentInstance,
    BindRequest,
    BoundTool,
    Invocation,
    RunServices,
    ToolKind,
)
from flowrun.runtime.loop.prompt_version import frames_foreign_text
from flowrun.runtime.mcp.deferral import Search, defers, run_search, search_tool
from flowrun.runtime.mcp.launch import Placement, server_launch
from flowrun.runtime.mcp.resources import ResourceOp, resource_tools, run_op
from flowrun.tools import tool_search
from flowrun.tools.remote.mcp_client import McpConnection, McpServerDown, RemoteTool
from flowrun.tools.remote.mcp_elicit import Ask
from flowrun.tools.sandbox import SandboxPolicy
from flowrun.types import ToolResult, ToolSpec

CALL_GRACE_S = 5.0  # the runtime's own deadline, past the server's timeout_s
MODEL_NAME = re.compile(r"[^A-Za-z0-9_-]")


class McpStartError(RunError):
    """A server an agent needs did not start."""


@dataclass(frozen=True, slots=True)
class Pending:
    """A placeholder: the entry's tools are known once the server runs."""

    ref: McpRef


@dataclass(frozen=True, slots=True)
class Remote:
    server: str
    tool: str


def model_name(server: str, tool: str) -> str:
    """The name the model calls: `SERVER__TOOL`, in the characters every provider accepts."""
    name = MODEL_NAME.sub("_", f"{server}__{tool}")
    if len(name) <= 64:
        return name
    digest = hashlib.sha1(name.encode()).hexdigest()[:8]
    return f"{name[:55]}_{digest}"


@dataclass
class McpPool:
    """The servers of one run, each started on first use."""

    run: RunServices
    connections: dict[str, McpConnection] = field(default_factory=dict)
    failures: dict[str, McpStartError] = field(default_factory=dict)
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    async def tools_of(self, server: str) -> list[RemoteTool]:
        lock = self.locks.setdefault(server, asyncio.Lock())
        async with lock:
            if server in self.failures:
                raise self.failures[server]
            found = self.connections.get(server)
            if found is not None:
                return found.tools
            loaded = self.run.project.mcp_servers[server]
            try:
                place = Placement(
                    self.run.spec, self.run.sandboxes.override, self.run.workspace, self.run.project.roots
                )
                connection = McpConnection(server_launch(server, loaded, place))
                tools = await connection.start()
            except McpServerDown as e:
                failure = McpStartError(
                    f"MCP server '{server}' ({_where(loaded)}) did not start: {e}",
                    "run `flowrun validate --connect` to check it, or fix its declaration",
                )
                self.failures[server] = failure
                raise failure from None
            self.connections[server] = connection
            return tools

    async def call(self, remote: Remote, arguments: dict[str, object], ask: Ask | None = None) -> ToolResult:
        connection = self.connections.get(remote.server)
        if connection is None:
            return ToolResult.fail("UNAVAILABLE", f"MCP server '{remote.server}' is not running")
        return await connection.call(remote.tool, dict(arguments), ask)

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in self.connections.values()), return_exceptions=True)
        self.connections.clear()


def _described(server: str, tool: RemoteTool, own: bool, framed: bool) -> str:
    """What the model reads about a remote tool: the server's description framed as data (the
    server is not the workflow's author; `framed` false only in a run recorded before flowrun
    framed it); flowrun's own words for its resource tools and a tool the server does not describe."""
    if own or not framed or not tool.description:
        return tool.description or f"The {tool.name} tool of the {server} MCP server."
    return frame(tool.description, f"MCP server '{server}', the description of its tool '{tool.name}'")


def _where(loaded: Loaded[McpServerSpec]) -> str:
    return f"declared in {loaded.source.display}"


_POOLS: weakref.WeakKeyDictionary[RunServices, McpPool] = weakref.WeakKeyDictionary()


def pool_of(run: RunServices) -> McpPool:
    found = _POOLS.get(run)
    if found is None:
        found = _POOLS[run] = McpPool(run)
    return found


class McpKind(ToolKind):
    name = "mcp"
    implementation = None  # servers are declared in `mcp_servers:` or .mcp.json, not tools.d

    def claims(self, name: str, project: Project) -> bool:
        return mcp_ref(name, project) is not None

    def check_entry(self, entry: EntryRef) -> list[Diagnostic]:
        ref = mcp_ref(entry.name, entry.project)
        assert ref is not None  # claimed
        return check_entry(entry.src, entry.index, entry.name, ref, entry.config, entry.project)

    def process_policy(
        self, name: str, config: Mapping[str, object], where: SandboxQuery
    ) -> SandboxPolicy | None:
        """A stdio server is a process: its own sandbox (the workflow's with the server's over it)."""
        ref = mcp_ref(name, where.project)
        assert ref is not None  # claimed
        server = where.project.mcp_servers[ref.server]
        if server.spec.transport != "stdio":
            return None
        declared = server.source.path.parent.resolve()
        return server_policy(where.workflow, server.spec, declared, where.override)

    def bind(self, request: BindRequest) -> list[BoundTool]:
        ref = mcp_ref(request.name, request.project)
        assert ref is not None
        spec = ToolSpec(request.name, "", {"type": "object", "properties": {}})
        return [BoundTool(request.name, spec, self, target=Pending(ref), foreign_text=True)]

    async def prepare(self, inst: AgentInstance, run: RunServices) -> bool:
        """Replace the agent's placeholders with the servers' tools (starting the servers);
        True when something changed. Raises McpStartError when a server does not start."""
        if not any(isinstance(b.target, Pending) for b in inst.tools.values()):
            return False
        pool = pool_of(run)
        tools: dict[str, BoundTool] = {}
        deferring: list[str] = []  # servers whose tools wait behind tool_search
        for key, bound in inst.tools.items():
            if not isinstance(bound.target, Pending):
                tools[key] = bound
                continue
            ref = bound.target.ref
            expanded = await self._expand(pool, bound, ref, run)
            if not defers(run.project.mcp_servers[ref.server].spec, ref, len(expanded)):
                tools.update((found.name, found) for found in expanded)
                continue
            inst.deferred.update((found.name, found) for found in expanded)
            deferring.append(ref.server)
            tools.setdefault(tool_search.NAME, bound)  # its place in the list; made below
        inst.tools = tools
        if deferring:
            taken = tools.get(tool_search.NAME)
            if taken is not None and not isinstance(taken.target, Pending):
                raise McpStartError(
                    f"agent '{inst.name}' has its own tool named {tool_search.NAME}, and the MCP server "
                    f"'{deferring[0]}' defers its tools behind a tool of that name",
                    "rename that tool, or set `defer: false` on the server",
                )
            tools[tool_search.NAME] = search_tool(self, inst, deferring)
        return True

    async def _expand(
        self, pool: McpPool, placeholder: BoundTool, ref: McpRef, run: RunServices
    ) -> list[BoundTool]:
        spec = run.project.mcp_servers[ref.server].spec
        remote = await pool.tools_of(ref.server)
        resources = await resource_tools(pool.connections[ref.server])  # its resources, as two tools
        remote = [*remote, *resources]
        allowed = [t for t in remote if spec.tools is None or t.name in spec.tools]
        if ref.tool is not None:
            allowed = [t for t in allowed if t.name == ref.tool]
            if not allowed:
                names = ", ".join(t.name for t in remote) or "(none)"
                raise McpStartError(
                    f"MCP server '{ref.server}' has no tool '{ref.tool}' (it has: {names})",
                    "fix the agent's tool entry",
                )
        out = []
        for tool in allowed:
            target: Remote | ResourceOp = (
                ResourceOp(ref.server, tool.name) if tool in resources else Remote(ref.server, tool.name)
            )
            name = model_name(ref.server, tool.name)
            description = _described(ref.server, tool, tool in resources, frames_foreign_text(run))
            bound = BoundTool(
                name,
                ToolSpec(name, description, tool.parameters),
                self,
                limits={"timeout_s": spec.timeout_s + CALL_GRACE_S},
                target=target,
            )
            bound.approve = placeholder.approve
            bound.sandbox_layers = placeholder.sandbox_layers
            bound.idempotent = tool.idempotent  # a call in flight at a crash is not run again blindly
            bound.in_dry_run = "run" if tool.read_only else "simulate"  # a dry run changes nothing
            bound.result_schema = tool.output_schema
            bound.fills_defaults, bound.takes_undeclared = False, True  # the server decides
            bound.foreign_text = True  # its description and results are the server's words
            out.append(bound)
        return out

    async def invoke(self, bound: BoundTool, call: Invocation) -> ToolResult:
        target = bound.target
        if isinstance(target, Search):
            return run_search(call.caller, call.arguments)
        if isinstance(target, ResourceOp):
            return await run_op(pool_of(call.run).connections.get(target.server), target, call.arguments)
        if not isinstance(target, Remote):  # a placeholder the loop was never prepared for
            return ToolResult.fail("UNAVAILABLE", f"{bound.name} is not connected")
        # the server's elicitation requests are the caller's questions (tools/remote/mcp_elicit.py)
        return await pool_of(call.run).call(target, call.arguments, call.ctx.services.ask_user)

    async def aclose(self, run: RunServices) -> None:
        pool = _POOLS.pop(run, None)
        if pool is not None:
            await pool.close()


KIND = McpKind()
