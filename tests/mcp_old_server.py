"""An MCP server of an earlier protocol revision, over stdio, written as raw JSON-RPC (no SDK):
it answers `initialize` with the revision it was started with (2025-06-18 by default) whatever
the client asked, refuses every method it does not know (`server/discover` of 2026-07-28
among them), and offers one tool, `echo`. Every message the client sends is appended to the
file given as --record, one a line."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

ECHO = {
    "name": "echo",
    "description": "Say the text back.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


def answer(message: dict[str, Any], revision: str, record: str) -> dict[str, Any] | None:
    method, params = message.get("method"), message.get("params") or {}
    with open(record, "a") as log:  # every message the client sent, one a line
        log.write(json.dumps(message) + "\n")
    if "id" not in message:
        return None  # a notification
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": revision,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "old-server", "version": "0.1"},
        }
    elif method == "tools/list":
        result = {"tools": [ECHO]}
    elif method == "tools/call":
        text = str((params.get("arguments") or {}).get("text", ""))
        result = {"content": [{"type": "text", "text": f"echo ({revision}): {text}"}], "isError": False}
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": f"no {method}"}}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--revision", default="2025-06-18")
    parser.add_argument("--record", required=True)
    args = parser.parse_args()
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line), args.revision, args.record)
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
