"""A connection to one MCP server, through the official `mcp` package (imported only here, and
only when a server starts): stdio servers run as a child process (confined by the sandbox when
the caller wraps the command), HTTP servers are reached over streamable HTTP (or SSE).

One background task owns each connection (the SDK's transports are anyio context managers that
must be entered and left by the same task); tool calls from any task go through its session.
`start()` waits at most `startup_timeout_s` for the server to answer and list its tools, a call
at most `timeout_s`, and `close()` stops the server (its whole process tree). A stdio server
that dies is started again at the next call, after a pause that doubles each time, at most
MAX_RESTARTS times in a connection's life; the call it died in is an UNAVAILABLE result. Results map onto
the tool result protocol: text and structured content for the model (framed as data, in a block
naming the server and the tool: flowrun/foreign_text.py), images and audio as a note, the
server's `isError` as a TOOL_ERROR result."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import re
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO, cast

from flowrun._version import __version__
from flowrun.foreign_text import frame
from flowrun.tools.remote.mcp_elicit import Ask, AskStopped, Elicitations
from flowrun.tools.remote.mcp_oauth import OAuthSettings
from flowrun.types import ToolResult

MAX_TEXT_CHARS = 100_000  # what the model reads of one result
CONNECTION_CLOSED = -32000  # the JSON-RPC error code the mcp SDK gives calls cut off by a closed connection
STDERR_TAIL_CHARS = 400  # of a server's stderr, in the line that says why it did not start
CLOSE_TIMEOUT_S = 10.0
MAX_RESTARTS = 3  # of a stdio server that died, per run
RESTART_PAUSE_S = 0.5  # before the first restart; doubled for each one after


class McpServerDown(Exception):
    """The server did not start, or is gone."""


@dataclass(frozen=True, slots=True)
class RemoteTool:
    name: str
    description: str
    parameters: dict[str, Any]
    idempotent: bool = False  # readOnlyHint or idempotentHint: a resume may run it again
    read_only: bool = False  # readOnlyHint: a dry run may call it
    output_schema: dict[str, Any] | None = None  # its structured result, when it declares one


@dataclass(slots=True)
class ServerLaunch:
    """How to reach one server. stdio: `argv` (already wrapped in the sandbox when confined),
    `env` and `cwd`; http/sse: `url` and `headers`."""

    name: str
    transport: Literal["stdio", "http", "sse"]
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 60.0
    startup_timeout_s: float = 30.0
    hint: str = ""  # what to try when it does not start (added to the reason)
    oauth: OAuthSettings | None = None  # http: sign in with OAuth (tools/remote/mcp_oauth.py)


class McpConnection:
    def __init__(self, launch: ServerLaunch) -> None:
        self.launch = launch
        self.tools: list[RemoteTool] = []
        self.client: Any = None
        self.pid: int | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None
        self._errlog: TextIO | None = None
        self.restarts = 0
        self._http_refusal: tuple[int, str] | None = None  # the last HTTP error status and URL
        self._restarting = asyncio.Lock()
        self.elicitations = Elicitations(launch.name)  # a server's questions during a call

    @property
    def alive(self) -> bool:
        return self._task is not None and not self._task.done() and self.client is not None

    async def start(self) -> list[RemoteTool]:
        """Start the server and list its tools; McpServerDown says why it did not start."""
        if importlib.util.find_spec("mcp") is None:
            raise McpServerDown("the `mcp` package is not installed: pip install 'flowrun[mcp]'")
        self._ready, self._stop, self._error = asyncio.Event(), asyncio.Event(), None
        if self.launch.transport == "stdio":
            self._errlog = cast(TextIO, tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace"))
        self._task = asyncio.create_task(self._own(), name=f"mcp:{self.launch.name}")
        try:
            await asyncio.wait_for(self._ready.wait(), self.launch.startup_timeout_s)
        except TimeoutError:
            tail = self._stderr_tail()
            await self.close()
            raise McpServerDown(
                f"did not answer within startup_timeout_s={self.launch.startup_timeout_s:g}"
                + tail
                + self._hint()
            ) from None
        if self.client is None:
            reason = self._why(self._error) if self._error else "it stopped while starting"
            tail = self._stderr_tail()
            await self.close()
            raise McpServerDown(reason + tail + self._hint())
        return self.tools

    def _hint(self) -> str:
        return f"; {self.launch.hint}" if self.launch.hint else ""

    async def _own(self) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = await self._connect(stack)
                self.tools = await _list_tools(client)
                self.client = client
                self._ready.set()
                await self._stop.wait()
        except Exception as e:  # reported by start() or by the next call
            self._error = e
        finally:
            self.client = None
            self._ready.set()

    async def _connect(self, stack: contextlib.AsyncExitStack) -> object:
        from mcp import Client
        from mcp.types import Implementation

        launch = self.launch
        if launch.transport == "stdio":
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            params = StdioServerParameters(
                command=launch.argv[0], args=launch.argv[1:], env=launch.env, cwd=launch.cwd
            )
            assert self._errlog is not None
            transport: Any = stdio_client(params, errlog=self._errlog)
        elif launch.transport == "sse":
            from mcp.client.sse import sse_client

            transport = sse_client(launch.url, headers=launch.headers or None)
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            async def seen(response: httpx2.Response) -> None:  # the SDK keeps no status in its errors
                if response.status_code >= 400:
                    self._http_refusal = (response.status_code, str(response.request.url))

            auth = None
            if launch.oauth is not None:
                from flowrun.tools.remote.mcp_oauth import oauth_auth

                auth = oauth_auth(launch.name, launch.url, launch.oauth)
            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    auth=auth,
                    headers=launch.headers,
                    timeout=httpx2.Timeout(30.0, read=300.0),
                    event_hooks={"response": [seen]},
                )
            )
            transport = streamable_http_client(launch.url, http_client=http)
        client = Client(
            transport,
            read_timeout_seconds=launch.startup_timeout_s,
            elicitation_callback=self.elicitations.callback,
            client_info=Implementation(name="flowrun", version=__version__),  # (the SDK's own else)
        )
        return await stack.enter_async_context(client)

    def _stderr_tail(self) -> str:
        if self._errlog is None:
            return ""
        try:
            self._errlog.flush()
            self._errlog.seek(0)
            text = self._errlog.read()
        except (OSError, ValueError):
            return ""
        line = telling_line(text)
        if not line:
            return ""
        tail = line if len(line) <= STDERR_TAIL_CHARS else line[-STDERR_TAIL_CHARS:]
        return f"; its stderr ends: {tail}"

    async def call(self, tool: str, arguments: Mapping[str, object], ask: Ask | None = None) -> ToolResult:
        """One tool call; never raises (a dead server, a timeout, a protocol error are results)
        but what `ask` raises to stop it (tools/remote/mcp_elicit.py: the server's questions go to `ask`)."""
        name = self.launch.name
        if not self.alive:
            gone = await self._restart()
            if gone is not None:
                return gone
        client = self.client
        timeout = self.launch.timeout_s
        started = time.monotonic()
        try:
            async with asyncio.timeout(timeout + 2):
                called = client.call_tool(tool, arguments, read_timeout_seconds=timeout)
                raw = await self.elicitations.drive(called, tool, ask)
        except AskStopped as stopped:
            raise stopped.error from None
        except TimeoutError:
            return _timeout(name, tool, timeout)
        except Exception as e:
            if time.monotonic() - started >= timeout * 0.98 or "timed out" in str(e):
                return _timeout(name, tool, timeout)
            if _connection_closed(e) or not self.alive:  # the server died under the call
                tail = self._stderr_tail()
                self._error = e
                await self.close()  # its task leaves the SDK's contexts, the process is reaped
                return ToolResult.fail(
                    "UNAVAILABLE",
                    f"MCP server '{name}' stopped during {tool}: {_reason(e)}{tail}; " + self._next_time(),
                )
            return ToolResult.fail("MCP_ERROR", f"MCP server '{name}' refused {tool}: {self._why(e)}")
        return result_of(name, tool, raw)

    def _why(self, error: BaseException) -> str:
        """One line for an error; for an HTTP server that answered with an error status, the
        status, the URL and what to check (the SDK says only "Server returned an error response")."""
        refusal, self._http_refusal = self._http_refusal, None
        if refusal is None:
            return _reason(error)
        status, url = refusal
        hint = HTTP_HINTS.get(status) or (HTTP_HINTS[500] if status >= 500 else _reason(error))
        return f"HTTP {status} from {url}: {hint}"

    def _next_time(self) -> str:
        if self.launch.transport == "stdio" and self.restarts < MAX_RESTARTS:
            return "it is started again at the next call"
        return "calling it again will not work in this run"

    async def _restart(self) -> ToolResult | None:
        """Start a stdio server that died again (once, whoever calls first); an UNAVAILABLE
        result when it cannot be: not stdio, restarted too often, or it did not start."""
        name = self.launch.name
        async with self._restarting:
            if self.alive:  # another call restarted it meanwhile
                return None
            why = _reason(self._error) if self._error else "it is not running"
            if self.launch.transport != "stdio" or self.restarts >= MAX_RESTARTS:
                tried = f"; restarted {self.restarts} times already" if self.restarts else ""
                return ToolResult.fail(
                    "UNAVAILABLE", f"MCP server '{name}' is gone ({why}){self._stderr_tail()}{tried}"
                )
            await asyncio.sleep(RESTART_PAUSE_S * 2**self.restarts)
            self.restarts += 1
            await self.close()
            try:
                await self.start()
            except McpServerDown as e:
                return ToolResult.fail(
                    "UNAVAILABLE", f"MCP server '{name}' died and did not start again: {e}"
                )
        return None

    async def close(self) -> None:
        self._stop.set()
        task = self._task
        if task is not None and not task.done():
            if not self._ready.is_set():  # still starting: nothing there waits for _stop, so stop it now
                task.cancel()
            try:
                await asyncio.wait_for(asyncio.shield(task), CLOSE_TIMEOUT_S)
            except (TimeoutError, asyncio.CancelledError):
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None


# lines of a crash report that say nothing about why: node's version trailer and stack frames,
# Python's traceback frames, closing brackets, a caret under a source line, npm's epilogue
NOISE = re.compile(
    r"^(Node\.js v\d.*|at .*|File \".*|\^+|[\]})]+,?|Traceback .*"
    r"|npm (error|ERR!) (You can rerun|Log files were not written|A complete log"
    r"|\S+ This is related|\S*$).*)$"
)
ERROR_LINE = re.compile(
    r"^[\w.]*(Error|Exception)\b.*:|^bwrap: |^error:|^Error |(?-i:\bE[A-Z]{2,}: )", re.IGNORECASE
)


def telling_line(text: str) -> str:
    """The line of a server's stderr that says why it stopped: the last error line (a Python
    exception, node's `Error: ...`, bwrap's message), else the last line that is not noise."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    meaningful = [line for line in lines if not NOISE.match(line)]
    errors = [line for line in meaningful if ERROR_LINE.search(line)]
    found = errors or meaningful or lines
    return found[-1] if found else ""


def _repeat_safe(tool: object) -> bool:
    """The server's own word (its annotations) that calling the tool twice does no more than
    once; without it a remote tool is taken to be unsafe to repeat."""
    hints = getattr(tool, "annotations", None)
    return _read_only(tool) or bool(getattr(hints, "idempotent_hint", False))


def _read_only(tool: Any) -> bool:
    """The server's word that the tool changes nothing (`readOnlyHint`); absent, it may."""
    return getattr(getattr(tool, "annotations", None), "read_only_hint", None) is True


async def _list_tools(client: Any) -> list[RemoteTool]:
    found: list[RemoteTool] = []
    cursor: str | None = None
    for _ in range(100):  # a paginator that never ends cannot hang the start
        page = await client.list_tools(cursor=cursor)
        for tool in page.tools:
            schema = dict(tool.input_schema or {}) or {"type": "object", "properties": {}}
            schema.setdefault("type", "object")
            output = getattr(tool, "output_schema", None)
            found.append(
                RemoteTool(
                    tool.name,
                    (tool.description or "").strip(),
                    schema,
                    _repeat_safe(tool),
                    _read_only(tool),
                    dict(output) if isinstance(output, dict) else None,
                )
            )
        cursor = page.next_cursor
        if not cursor:
            break
    return found


HTTP_HINTS = {
    401: "the server wants credentials: give them in its `headers:` (e.g. Authorization: Bearer ${TOKEN})",
    403: "the server refused these credentials: check the token in its `headers:`",
    404: "no MCP endpoint at this URL: check `url` (streamable HTTP servers often end in /mcp)",
    405: "this URL does not take MCP requests: check `url`, or `type: sse` for an SSE server",
    500: "the server failed: see its own logs",
}


def _connection_closed(error: BaseException) -> bool:
    """The SDK's word that the connection ended (the server's process exited or its stream
    closed), not that the server refused the request."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if getattr(getattr(error, "error", None), "code", None) == CONNECTION_CLOSED:
        return True
    return type(error).__name__ in ("ClosedResourceError", "BrokenResourceError", "EndOfStream")


def _reason(error: BaseException | None) -> str:
    """One line for an exception (an ExceptionGroup is reported by its first leaf)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if error is None:
        return "unknown error"
    text = " ".join(str(error).split()) or type(error).__name__
    if isinstance(error, FileNotFoundError | PermissionError):
        text = f"cannot run {error.filename or 'the command'}: {error.strerror}"
    return text[:500]


def _timeout(server: str, tool: str, timeout: float) -> ToolResult:
    return ToolResult.fail(
        "TIMEOUT",
        f"MCP server '{server}' did not answer {tool} within timeout_s={timeout:g}; try again "
        "later or with less work",
    )


# ---------------------------------------------------------------- results


def result_of(server: str, tool: str, raw: object) -> ToolResult:
    """An MCP CallToolResult as the tool result protocol."""
    parts: list[str] = []
    blocks: list[dict[str, object]] = []
    for block in getattr(raw, "content", None) or []:
        text, summary = _block(block)
        parts.append(text)
        blocks.append(summary)
    structured = getattr(raw, "structured_content", None)
    text = "\n".join(p for p in parts if p)
    if structured is not None and not text:
        text = json.dumps(structured, ensure_ascii=False, indent=1)
    data: dict[str, object] = {"server": server, "tool": tool, "content": blocks}
    if structured is not None:
        data["structured"] = structured
    source = f"MCP server '{server}', tool '{tool}'"
    if getattr(raw, "is_error", False):
        if not text:
            return ToolResult.fail("TOOL_ERROR", f"{tool} failed without a message", **data)
        return ToolResult.fail("TOOL_ERROR", capped_frame(text, source)[0], **data)
    if not text:
        return ToolResult.ok("(no output)", **data)
    text, cut = capped_frame(text, source)
    if cut:
        return ToolResult.partial(text, **data)
    return ToolResult.ok(text, **data)


def capped_frame(text: str, source: str) -> tuple[str, bool]:
    """A server's text as the model reads it: at most MAX_TEXT_CHARS of it, framed as data
    naming `source`, and a note outside the block when it was cut; (that, whether it was cut)."""
    if len(text) <= MAX_TEXT_CHARS:
        return frame(text, source), False
    note = f"\n[cut at {MAX_TEXT_CHARS} of {len(text)} characters]"
    return frame(text[:MAX_TEXT_CHARS], source) + note, True


def _block(block: Any) -> tuple[str, dict[str, Any]]:
    """(what the model reads, what the log keeps) of one content block; binary data is never
    sent to the model as text, only noted."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return block.text, {"type": "text"}
    if kind in ("image", "audio"):
        mime = getattr(block, "mime_type", "") or "unknown type"
        size = len(getattr(block, "data", "") or "") * 3 // 4
        return f"[{kind}: {mime}, about {size} bytes, not shown]", {"type": kind, "mime_type": mime}
    if kind == "resource_link":
        uri, name = str(getattr(block, "uri", "")), getattr(block, "name", "")
        return f"[resource: {name} {uri}]".replace("  ", " "), {"type": kind, "uri": uri}
    if kind == "resource":
        resource = block.resource
        uri = str(getattr(resource, "uri", ""))
        text = getattr(resource, "text", None)
        if text is not None:
            return text, {"type": kind, "uri": uri}
        mime = getattr(resource, "mime_type", "") or "binary"
        return f"[resource {uri}: {mime}, not shown]", {"type": kind, "uri": uri}
    return f"[{kind or 'unknown'} content, not shown]", {"type": kind or "unknown"}
