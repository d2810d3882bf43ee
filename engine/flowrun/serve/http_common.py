"""What the route handlers of `serve http` share: a JSON answer, the server's runs, a request's
JSON body."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from flowrun.serve.served_runs import ServedRuns
from flowrun.types import decode_json

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

JSON_HEADERS = {"cache-control": "no-store"}


def reply(body: object, status: int = 200) -> Response:
    from starlette.responses import Response

    text = json.dumps(body, ensure_ascii=False, default=str)
    return Response(text, status, headers=JSON_HEADERS, media_type="application/json")


def runs_of(request: Request) -> ServedRuns:
    served: ServedRuns = request.app.state.served
    return served


async def body_of(request: Request) -> Mapping[str, object]:
    from flowrun.errors import UsageError

    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        body = decode_json(raw.decode("utf-8"))
    except ValueError as e:
        raise UsageError(f"the body is not JSON: {e}", "send a JSON object") from None
    if not isinstance(body, dict):
        raise UsageError("the body must be a JSON object", "send a JSON object")
    return body
