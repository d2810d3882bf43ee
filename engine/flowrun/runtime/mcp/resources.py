"""An MCP server's resources as two tools of the server: `SERVER__list_resources` and
`SERVER__read_resource(uri)`, offered with an entry `SERVER` when the server lists resources
or resource templates (a server's own tool of the same name wins). They count as the
server's tools: its `tools:` allowlist and `SERVER.read_resource` entries name them."""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from flowrun.tools.remote.mcp_client import McpConnection, McpServerDown, RemoteTool
from flowrun.tools.remote.mcp_resources import has_resources, list_resources, read_resource
from flowrun.types import ToolResult

LIST, READ = "list_resources", "read_resource"
NO_PARAMETERS: dict[str, object] = {"type": "object", "properties": {}}
URI_PARAMETERS: dict[str, object] = {
    "type": "object",
    "properties": {
        "uri": {"type": "string", "description": "The resource's URI, as list_resources gives it."}
    },
    "required": ["uri"],
}


@dataclass(frozen=True, slots=True)
class ResourceOp:
    """The target of a server's resource tool."""

    server: str
    op: str


_HAS: weakref.WeakKeyDictionary[McpConnection, bool] = weakref.WeakKeyDictionary()


async def resource_tools(connection: McpConnection) -> list[RemoteTool]:
    """The resource tools of a server that has resources (asked once per connection) and no
    tools of these names."""
    if connection not in _HAS:
        _HAS[connection] = await has_resources(connection)
    if not _HAS[connection]:
        return []
    taken = {tool.name for tool in connection.tools}
    server = connection.launch.name
    tools = [
        RemoteTool(
            LIST,
            f"List the resources (files, documents, records) of the {server} MCP server: URIs, names, types.",
            dict(NO_PARAMETERS),
            idempotent=True,
            read_only=True,
        ),
        RemoteTool(
            READ,
            f"Read one resource of the {server} MCP server by its URI (see list_resources).",
            dict(URI_PARAMETERS),
            idempotent=True,
            read_only=True,
        ),
    ]
    return [tool for tool in tools if tool.name not in taken]


async def run_op(
    connection: McpConnection | None, op: ResourceOp, arguments: dict[str, object]
) -> ToolResult:
    if connection is None:
        return ToolResult.fail("UNAVAILABLE", f"MCP server '{op.server}' is not running")
    try:
        if op.op == LIST:
            return await list_resources(connection)
        return await read_resource(connection, str(arguments.get("uri", "")))
    except McpServerDown as e:
        return ToolResult.fail("UNAVAILABLE", str(e))
    except Exception as e:  # the server refused: an unknown URI, a failing handler
        reason = " ".join(str(e).split()) or type(e).__name__
        return ToolResult.fail("MCP_ERROR", f"MCP server '{op.server}' refused {op.op}: {reason[:500]}")
