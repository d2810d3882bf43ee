"""An MCP server's resources and prompts, through a running connection (tools/remote/mcp_client.py).

Resources are read as files: `list_resources` lists what a server offers (its resources and
resource templates, with URIs and MIME types) and `read_resource(uri)` returns a resource's
text (binary content is noted, not shown); both framed as data, naming the server
(flowrun/foreign_text.py). A prompt (`prompts/get`) becomes text: the text of
its messages, one paragraph each."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from flowrun.foreign_text import frame
from flowrun.tools.remote.mcp_client import McpConnection, McpServerDown, capped_frame
from flowrun.types import ToolResult

MAX_LISTED = 200  # resources and templates listed in one answer
LIST_PAGES = 20  # a paginator that never ends cannot hang the call


def offers_resources(connection: McpConnection) -> bool:
    """Whether the server said it has resources (its `resources` capability)."""
    client: Any = connection.client
    if client is None:
        return False
    return getattr(client.server_capabilities, "resources", None) is not None


async def has_resources(connection: McpConnection) -> bool:
    """Whether the server has resources or resource templates to list (a server may declare
    the capability and have none)."""
    if not offers_resources(connection):
        return False
    client: Any = connection.client
    try:
        if (await client.list_resources()).resources:
            return True
        return bool((await client.list_resource_templates()).resource_templates)
    except Exception:  # a server that cannot list them has none to read
        return False


def _client(connection: McpConnection) -> Any:
    if not connection.alive:
        raise McpServerDown(f"MCP server '{connection.launch.name}' is not running")
    return connection.client


async def list_resources(connection: McpConnection) -> ToolResult:
    client = _client(connection)
    name = connection.launch.name
    found: list[dict[str, object]] = []
    for method, key in (("list_resources", "resources"), ("list_resource_templates", "resource_templates")):
        cursor: str | None = None
        for _ in range(LIST_PAGES):
            page = await getattr(client, method)(cursor=cursor)
            for item in getattr(page, key):
                uri = getattr(item, "uri", None) or getattr(item, "uri_template", "")
                entry = {"uri": str(uri), "name": item.name, "description": item.description or ""}
                if item.mime_type:
                    entry["mime_type"] = item.mime_type
                if key == "resource_templates":
                    entry["template"] = True
                found.append(entry)
            cursor = page.next_cursor
            if not cursor:
                break
    lines = []
    for entry in found[:MAX_LISTED]:
        what = " (a template: fill in the {…} parts)" if entry.get("template") else ""
        about = f" — {entry['description']}" if entry["description"] else ""
        lines.append(f"- {entry['uri']}{what}: {entry['name']}{about}")
    text = f"{len(found)} resources of MCP server '{name}' (read one with its uri):\n"
    text += frame("\n".join(lines), f"MCP server '{name}', its list of resources")
    if len(found) > MAX_LISTED:
        text += f"\n[{len(found) - MAX_LISTED} more not listed]"
    return ToolResult.ok(text, server=name, resources=found[:MAX_LISTED])


async def read_resource(connection: McpConnection, uri: str) -> ToolResult:
    client = _client(connection)
    raw = await client.read_resource(uri)
    parts: list[str] = []
    for item in raw.contents:
        text = getattr(item, "text", None)
        if text is not None:
            parts.append(text)
        else:
            size = (
                len(base64.b64decode(getattr(item, "blob", "") or "")) if getattr(item, "blob", None) else 0
            )
            parts.append(f"[{item.mime_type or 'binary'} content of {item.uri}, {size} bytes, not shown]")
    text = "\n".join(parts)
    data = {"server": connection.launch.name, "uri": uri}
    if not text:
        return ToolResult.ok("(empty)", **data)
    text, cut = capped_frame(text, f"MCP server '{connection.launch.name}', resource {uri}")
    return ToolResult.partial(text, **data) if cut else ToolResult.ok(text, **data)


async def prompt_text(connection: McpConnection, name: str, arguments: Mapping[str, str]) -> str:
    """The text of a server's prompt with these arguments; McpServerDown when it has none."""
    client = _client(connection)
    try:
        raw = await client.get_prompt(name, dict(arguments))
    except McpServerDown:
        raise
    except Exception as e:
        raise McpServerDown(f"prompt '{name}': {' '.join(str(e).split()) or type(e).__name__}") from None
    parts = [getattr(m.content, "text", "") for m in raw.messages]
    return "\n\n".join(p.strip() for p in parts if p and p.strip())
