"""`flowrun serve mcp`: workflows as an MCP server (the `mcp` package's low-level `Server`),
over stdio or streamable HTTP.

Each workflow is one tool: its name, its description, its inputs as the parameters (types,
descriptions, choices, defaults and required from the input declarations). A call is a normal
run in its own run folder under `runs_dir` (resumable with `flowrun resume`); while it runs,
progress notifications (when the client sent a progress token) and log messages (at `info`,
unless the client set a higher level) say what the agents do; the client cancelling the call
stops the run, which stays resumable (`flowrun resume`); the result is the declared output's content
(or the final answer), the run folder's path, and in the structured content the status, exit
code, run folder and output path. A run that does not complete is an `isError` result; one
that waits for a decision (an `approve: ask` call, an ask_user question: nobody can answer
through MCP) says what it waits for and how to decide (`flowrun approve`, `flowrun answer`,
which continue it), and lists it in the structured content's `pending`.

Over HTTP the server keeps what it sent on each stream (serve/mcp_events.py), so a client that
lost its connection during a long run reconnects with `Last-Event-ID` and gets the result. It
always checks the Host and Origin headers (DNS-rebinding protection):
loopback names, the address it listens on, this machine's names and `allowed_hosts`. With a
token, every request must carry `Authorization: Bearer TOKEN` (401 otherwise); the CLI
refuses an address other than loopback without one, since the agents behind the tools may
have a shell."""

from __future__ import annotations

import asyncio
import re
import warnings
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from flowrun._version import __version__
from flowrun.api import Workflow
from flowrun.errors import FlowrunError
from flowrun.events import AgentEndEvent, AgentStartEvent, Event, ToolCallEvent
from flowrun.manifest.specs import InputSpec
from flowrun.runtime.options import RunOptions
from flowrun.serve.access import BearerToken, accepted_hosts

if TYPE_CHECKING:
    import socket

    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.server.session import ServerSession
    from mcp.server.transport_security import TransportSecuritySettings
    from mcp.types import (
        CallToolRequestParams,
        CallToolResult,
        EmptyResult,
        ListToolsResult,
        LoggingLevel,
        PaginatedRequestParams,
        SetLevelRequestParams,
    )
    from starlette.types import ASGIApp

    Context = ServerRequestContext[object]

JSON_TYPES = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "list": "array",
}
MAX_RESULT_CHARS = 200_000
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
TOOL_NAME = re.compile(r"[^A-Za-z0-9_.-]")


def input_schema(inputs: dict[str, InputSpec]) -> dict[str, object]:
    """A workflow's input declarations as the JSON Schema of the tool's parameters."""
    properties: dict[str, object] = {}
    for name, spec in inputs.items():
        prop: dict[str, object] = {"type": JSON_TYPES[spec.type]}
        if spec.description:
            prop["description"] = spec.description
        if spec.choices and spec.type == "list":
            prop["items"] = {"enum": list(spec.choices)}
        elif spec.choices:
            prop["enum"] = list(spec.choices)
        if spec.default is not None:
            prop["default"] = spec.default
        properties[name] = prop
    required = [name for name, spec in inputs.items() if spec.is_required]
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def tool_name(workflow: Workflow) -> str:
    return TOOL_NAME.sub("_", workflow.name)[:128]


def describe(workflow: Workflow) -> str:
    what = (workflow.spec.description or f"Run the {workflow.name} workflow.").strip()
    output = f" It writes {workflow.spec.output}, whose content is returned." if workflow.spec.output else ""
    return f"{what}{output} Runs the flowrun workflow {workflow.name}; the result names its run folder."


def progress_line(event: Event) -> str | None:
    """What a progress notification says for an event (None: not worth one)."""
    if isinstance(event, AgentStartEvent):
        return f"{event.agent} started"
    if isinstance(event, ToolCallEvent):
        return f"{event.agent} → {event.tool}"
    if isinstance(event, AgentEndEvent):
        return f"{event.agent} {event.status}"
    return None


class WorkflowServer:
    """The MCP server for a set of workflows."""

    def __init__(
        self, workflows: list[Workflow], options: RunOptions | None = None, runs_dir: Path = Path("runs")
    ) -> None:
        self.workflows = {tool_name(wf): wf for wf in workflows}
        self.options = options or RunOptions()  # every call's run options
        self.runs_dir = runs_dir
        # the level each client set with logging/setLevel (none set: info and above are sent)
        self.log_levels: weakref.WeakKeyDictionary[ServerSession, str] = weakref.WeakKeyDictionary()

    def build(self) -> Server[object]:
        from mcp.server.lowlevel import Server
        from mcp.shared.exceptions import MCPDeprecationWarning

        with warnings.catch_warnings():  # logging is deprecated from protocol 2026-07-28 on, not before
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            return Server(
                "flowrun",
                version=__version__,
                instructions="Each tool runs a flowrun workflow (LLM agents) and returns its output.",
                on_list_tools=self._list_tools,
                on_call_tool=self._call_tool,
                on_set_logging_level=self._set_level,
            )

    async def _set_level(self, ctx: Context, params: SetLevelRequestParams) -> EmptyResult:
        from mcp.types import EmptyResult

        self.log_levels[ctx.session] = params.level
        return EmptyResult()

    async def _log(self, ctx: Context, level: LoggingLevel, line: str) -> None:
        from mcp.shared.exceptions import MCPDeprecationWarning

        wanted = self.log_levels.get(ctx.session, "info")
        if LOG_LEVELS.index(level) < LOG_LEVELS.index(wanted):
            return
        with warnings.catch_warnings():  # the call warns; its sending happens below, outside
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            sending = ctx.session.send_log_message(level, line, "flowrun", related_request_id=ctx.request_id)
        await sending

    async def _list_tools(self, ctx: Context, params: PaginatedRequestParams | None) -> ListToolsResult:
        from mcp.types import ListToolsResult, Tool

        tools = [
            Tool(name=name, description=describe(wf), input_schema=input_schema(wf.inputs))
            for name, wf in self.workflows.items()
        ]
        return ListToolsResult(tools=tools)

    async def _call_tool(self, ctx: Context, params: CallToolRequestParams) -> CallToolResult:
        from mcp.types import CallToolResult, TextContent

        workflow = self.workflows.get(params.name)
        if workflow is None:
            known = ", ".join(self.workflows)
            return _error(f"no workflow tool named {params.name!r}; tools: {known}")
        try:
            text, structured, failed = await self._run(ctx, workflow, dict(params.arguments or {}))
        except FlowrunError as e:  # bad inputs, a run that cannot start: the caller can fix it
            return _error(e.message + (f" ({e.hint})" if e.hint else ""))
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=structured, is_error=failed
        )

    async def _run(
        self, ctx: Context, workflow: Workflow, arguments: dict[str, object]
    ) -> tuple[str, dict[str, object], bool]:
        """The run in a task of its own, so that a cancelled call (the client's
        notifications/cancelled: the SDK cancels this handler's scope, again at every await)
        can wait, shielded, until the run has stopped and recorded that it was cancelled."""
        import anyio

        task = asyncio.create_task(self._follow(ctx, workflow, arguments))
        try:
            return await asyncio.shield(task)
        except anyio.get_cancelled_exc_class():
            task.cancel()
            with anyio.CancelScope(shield=True):
                await asyncio.gather(task, return_exceptions=True)
            raise

    async def _follow(
        self, ctx: Context, workflow: Workflow, arguments: dict[str, object]
    ) -> tuple[str, dict[str, object], bool]:
        steps = 0
        async with workflow.stream(arguments, self.options, runs_dir=self.runs_dir) as events:
            async for event in events:
                line = progress_line(event)
                if line is not None:
                    steps += 1
                    await ctx.session.report_progress(steps, None, line)
                    await self._log(ctx, "info", line)
            result = events.result
        output = result.output.read_text(encoding="utf-8", errors="replace") if result.output else ""
        body = output or result.message or f"the run ended {result.status}"
        if len(body) > MAX_RESULT_CHARS:
            body = body[:MAX_RESULT_CHARS] + f"\n[cut at {MAX_RESULT_CHARS} characters; the file has it all]"
        text = f"{body}\n\nrun folder: {result.run_dir.resolve()}\nstatus: {result.status}"
        structured = {
            "status": result.status,
            "exit_code": result.exit_code,
            "run_dir": str(result.run_dir.resolve()),
            "run_id": result.run_id,
            "output": str(result.output.resolve()) if result.output else None,
        }
        if result.status == "waiting":  # a decision only a person can take (`flowrun approve`, ...)
            structured["pending"] = [p.to_dict() for p in result.pending]
        return text, structured, result.status not in ("completed", "max_steps")


def _error(message: str) -> CallToolResult:
    from mcp.types import CallToolResult, TextContent

    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


async def serve_stdio(server: WorkflowServer) -> None:
    from mcp.server.stdio import stdio_server

    app = server.build()
    async with stdio_server() as (read, write):
        await app.run(read, write, app.create_initialization_options())


def security(host: str, extra: tuple[str, ...] = ()) -> TransportSecuritySettings:
    """The transport's DNS-rebinding protection: on, whatever the address."""
    from mcp.server.transport_security import TransportSecuritySettings

    hosts = accepted_hosts(host, extra)
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


async def serve_http(
    server: WorkflowServer,
    sock: socket.socket,
    host: str,
    token: str | None = None,
    allowed_hosts: tuple[str, ...] = (),
) -> None:
    """Streamable HTTP at http://HOST:PORT/mcp on `sock` until cancelled: resumable streams,
    Host and Origin checked always, the token (when given) on every request."""
    import uvicorn

    from flowrun.serve.mcp_events import MemoryEventStore

    protection = security(host, allowed_hosts)
    app: ASGIApp = server.build().streamable_http_app(
        host=host, transport_security=protection, event_store=MemoryEventStore()
    )
    if token is not None:
        app = BearerToken(app, token)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])
