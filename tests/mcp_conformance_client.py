"""The client under test of the MCP conformance suite's client mode (`conformance client
--command "python client.py"`): flowrun's own path from a declaration to a call. It writes a
workflow whose `mcp_servers:` names the suite's server (the URL it is given, `auth:` from the
scenario's context), loads it, starts the server's connection as a run does
(runtime/mcp/launch.py, tools/remote/mcp_client.py, tools/remote/mcp_oauth.py) and calls a tool."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

import yaml

from flowrun.api import load
from flowrun.runtime.mcp.launch import Placement, server_launch
from flowrun.tools.remote.mcp_client import McpConnection

WORKFLOW = {
    "version": 1,
    "kind": "workflow",
    "name": "conformance",
    "models": {"m": {"provider": "test", "model": "t"}},
    "default_model": "m",
    "entry": "caller",
    "task": "Call the server.",
}
CALLER = {"version": 1, "kind": "agent", "name": "caller", "prompt": "Call it.", "tools": ["conf"]}


def declaration(url: str, scenario: str, context: dict[str, object]) -> dict[str, object]:
    server: dict[str, object] = {"url": url, "startup_timeout_s": 25}
    if "private_key_pem" in context:  # client_credentials with a signed JWT (private_key_jwt)
        os.environ["CONF_CLIENT_ID"] = str(context["client_id"])
        os.environ["CONF_CLIENT_KEY"] = str(context["private_key_pem"])
        server["auth"] = {
            "type": "oauth",
            "grant": "client_credentials",
            "client_id": "${CONF_CLIENT_ID}",
            "token_auth": "private_key_jwt",
            "private_key": "${CONF_CLIENT_KEY}",
            "signing_algorithm": str(context.get("signing_algorithm", "RS256")),
        }
    elif scenario.startswith("auth/client-credentials"):
        os.environ["CONF_CLIENT_ID"] = str(context["client_id"])
        os.environ["CONF_CLIENT_SECRET"] = str(context["client_secret"])
        server["auth"] = {
            "type": "oauth",
            "grant": "client_credentials",
            "client_id": "${CONF_CLIENT_ID}",
            "client_secret": "${CONF_CLIENT_SECRET}",
        }
    elif "client_id" in context:  # a pre-registered client
        os.environ["CONF_CLIENT_ID"] = str(context["client_id"])
        os.environ["CONF_CLIENT_SECRET"] = str(context.get("client_secret", ""))
        server["auth"] = {
            "type": "oauth",
            "client_id": "${CONF_CLIENT_ID}",
            "client_secret": "${CONF_CLIENT_SECRET}",
        }
    elif scenario.startswith("auth/"):
        server["auth"] = "oauth"
    return server


async def main(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    with tempfile.TemporaryDirectory(prefix="flowrun-conformance-") as folder:
        root = Path(folder)
        (root / "agents.d").mkdir()
        (root / "agents.d" / "caller.yaml").write_text(yaml.safe_dump(CALLER))
        spec = WORKFLOW | {"mcp_servers": {"conf": declaration(url, scenario, context)}}
        (root / "flow.yaml").write_text(yaml.safe_dump(spec))
        project = load(root / "flow.yaml").project
        place = Placement(None, "off", root / "run", project.roots)
        (root / "run").mkdir()
        connection = McpConnection(server_launch("conf", project.mcp_servers["conf"], place))
        try:
            tools = await connection.start()
            names = {tool.name for tool in tools}
            if "add_numbers" in names:
                result = await connection.call("add_numbers", {"a": 5, "b": 3})
                print(result.text if hasattr(result, "text") else result)
            elif tools:  # a person who accepts what the server proposes (its defaults)
                result = await connection.call(tools[0].name, {}, ask=lambda question: "accept")
                print(result)
        finally:
            await connection.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
