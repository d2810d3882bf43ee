"""An ASGI guard for the JSON-RPC routes whose library parses request bodies with Python's json
module (the a2a-sdk): a body nested past the parser's recursion is answered here with JSON-RPC's
parse error, where the library had answered an internal error and logged a traceback."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

PARSE_ERROR = -32700


def too_deep(body: bytes) -> bool:
    """Whether parsing `body` breaks the parser's recursion (any other fault is the library's)."""
    try:
        json.loads(body)
    except RecursionError:
        return True
    except ValueError:
        return False
    return False


class DeepJsonGuard:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        received: list[Message] = []
        while True:  # the whole body, as the library reads it anyway; replayed to it below
            message = await receive()
            received.append(message)
            if message["type"] != "http.request" or not message.get("more_body", False):
                break
        if too_deep(b"".join(m.get("body", b"") for m in received if m["type"] == "http.request")):
            from starlette.responses import JSONResponse

            error = {"code": PARSE_ERROR, "message": "Parse error: the JSON nests too deep to read"}
            await JSONResponse({"jsonrpc": "2.0", "id": None, "error": error})(scope, receive, send)
            return
        pending = iter(received)

        async def replay() -> Message:
            return next(pending, None) or await receive()

        await self.app(scope, replay, send)
