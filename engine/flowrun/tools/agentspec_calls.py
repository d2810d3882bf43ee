"""The tools an Oracle Agent Spec file declares without code flowrun can run: a `ClientTool`
(the caller runs it: here the person running the workflow is asked for its result, a decision
the run waits for) and a `RemoteTool` (an HTTP request whose url, headers, query and body name
the call's arguments as `{{name}}`). Their tool manifests carry what the file said in `defaults`."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import time
from collections.abc import Mapping
from typing import cast
from urllib.parse import urlencode

from flowrun.tools.base import ToolContext, error, finish_result
from flowrun.tools.net_guard import AddressRefused, NetPolicy
from flowrun.types import ToolResult

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
MAX_BYTES = 1_000_000


async def client_tool(ctx: ToolContext, **arguments: object) -> ToolResult:
    """A ClientTool call: the caller (the person running the workflow) gives its result."""
    started = time.perf_counter()
    params: dict[str, object] = dict(arguments)
    if ctx.dry_run:
        return finish_result(ToolResult.ok(f"(the result of {ctx.tool_name})"), params, started)
    service = ctx.services.ask_user
    if not ctx.interactive or service is None:
        message = f"{ctx.tool_name} is run by the caller, and nobody can answer in this run"
        return finish_result(error("NOT_INTERACTIVE", message), params, started)
    question = (
        f"The client tool {ctx.tool_name} was called with {json.dumps(arguments, sort_keys=True)}. "
        "Run it and answer with its result."
    )
    try:
        answer = service(question)
        if inspect.isawaitable(answer):
            answer = await answer
    except EOFError as e:
        return finish_result(error("UNAVAILABLE", str(e) or "no result was given"), params, started)
    except TimeoutError:
        return finish_result(error("TIMEOUT", "nobody gave the result within the deadline"), params, started)
    return finish_result(ToolResult.ok("" if answer is None else str(answer)), params, started)


def fill(value: object, arguments: Mapping[str, object]) -> object:
    """`value` (text, or a mapping or list of texts) with each `{{name}}` as that argument."""
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda m: _text(arguments.get(m.group(1), m.group(0))), value)
    if isinstance(value, Mapping):
        return {str(k): fill(v, arguments) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, arguments) for v in value]
    return value


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)


async def remote_tool(ctx: ToolContext, **arguments: object) -> ToolResult:
    """A RemoteTool call: one HTTP request, its answer the tool's result."""
    started = time.perf_counter()
    params: dict[str, object] = dict(arguments)
    config = ctx.config
    url = str(fill(config.get("url", ""), arguments))
    method = str(config.get("http_method") or "GET").upper()
    if ctx.dry_run:
        return finish_result(ToolResult.ok(f"(the answer of {method} {url})"), params, started)
    try:
        status, text = await _request(ctx, method, url, arguments)
    except AddressRefused as e:
        return finish_result(error("ACCESS_DENIED", f"not sent: {e}"), params, started)
    except TimeoutError:
        return finish_result(error("TIMEOUT", f"{url} did not answer in time"), params, started)
    except OSError as e:
        return finish_result(error("UNAVAILABLE", f"{method} {url}: {e}"), params, started)
    if status >= 400:
        return finish_result(
            error("HTTP_ERROR", f"{method} {url}: HTTP {status}: {text[:500]}"), params, started
        )
    return finish_result(ToolResult.ok(shaped(text, config), status=status), params, started)


def shaped(text: str, config: Mapping[str, object]) -> str:
    """An ApiNode's answer as its outputs (`config["outputs"]`, their names): each the answer's
    key of that name, or the whole answer for a single output it has no key for; one text
    output (`text_output`) as that text, else a JSON object of the outputs."""
    names = config.get("outputs")
    if not isinstance(names, list) or not names:
        return text
    try:
        data: object = json.loads(text)
    except json.JSONDecodeError:
        data = text
    found = data if isinstance(data, Mapping) else {}
    values = {str(n): found.get(str(n), data if len(names) == 1 else None) for n in names}
    if config.get("text_output") and len(values) == 1:
        return _text(next(iter(values.values())))
    return json.dumps(values)


async def _request(
    ctx: ToolContext, method: str, url: str, arguments: Mapping[str, object]
) -> tuple[int, str]:
    import httpx  # lazy: `flowrun validate` never needs it

    from flowrun.tools.net_transport import GuardedTransport

    config = ctx.config
    timeout_s = float(config.get("timeout_s") or ctx.limits.get("timeout_s") or 30)
    data = fill(config.get("data"), arguments)
    # (filled in from the configured mappings of text: their values stay text)
    headers = cast("dict[str, str]", fill(config.get("headers") or {}, arguments))
    kind = next((str(v) for k, v in headers.items() if k.lower() == "content-type"), "")
    form = isinstance(data, Mapping) and "x-www-form-urlencoded" in kind
    json_body = data if isinstance(data, Mapping | list) and not form else None
    content = data.encode() if isinstance(data, str) and data else None
    if form and isinstance(data, Mapping):
        content = urlencode({str(k): _text(v) for k, v in data.items()}).encode()
    params = cast("dict[str, str]", fill(config.get("query_params") or {}, arguments))
    async with asyncio.timeout(timeout_s):
        async with httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_s), transport=GuardedTransport(NetPolicy.from_config(config))
        ) as client:
            try:
                response = await client.request(
                    method, url, headers=headers, params=params, json=json_body, content=content
                )
            except httpx.HTTPError as e:
                raise OSError(f"{type(e).__name__}: {e}") from e
            return response.status_code, response.content[:MAX_BYTES].decode("utf-8", "replace")
