"""A scripted model server on 127.0.0.1 that speaks the OpenAI Chat Completions and the
Anthropic Messages wire formats, streamed and not, so tests drive the REAL SDKs over HTTP.

    with WireServer(Script({"researcher": [Reply(tool_calls=[ToolCallSpec("search", {"q": "x"})])]})) as srv:
        client = AsyncOpenAI(base_url=srv.openai_base_url, api_key="k")

A responder is a function `WireRequest -> Reply`. Replies are a pure function of the request
(tool call ids derive from the number of assistant turns), so concurrent conversations on
separate connections get consistent answers (TESTING.md 6). Only `FailFirst` keeps state.

Wire details that the SDKs depend on (TESTING.md 1-4): TCP_NODELAY and one `write` per
response, chunked transfer encoding for streams, an `event:` line on every Anthropic SSE event,
OpenAI tool call fragments keyed by `index` with the id and name only on the first fragment.

Also a script: `python tests/support/wire_server.py --script FILE.json --port N` prints its URL and
serves until interrupted (FILE.json: {"agents": {key: [reply, ...]}, "match": {key: substring}}).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal, get_args

Api = Literal["openai", "anthropic"]
OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"


# ---------------------------------------------------------------- neutral request and reply


@dataclass(slots=True)
class WireRequest:
    """One request as a responder sees it, the same fields for both wire formats."""

    api: Api
    path: str
    headers: dict[str, str]  # lower-cased names
    body: dict[str, Any]
    stream: bool
    system: str
    tool_names: list[str]
    tools: list[dict[str, Any]]
    assistant_turns: int
    tool_results: list[tuple[str, str, bool]]  # (tool_call_id, content text, is_error)
    last_user_text: str
    messages: list[dict[str, Any]]
    received: float = field(default_factory=time.monotonic)  # when the server read it (rate-limit tests)


@dataclass(slots=True)
class ToolCallSpec:
    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)  # a str is sent verbatim


@dataclass(slots=True)
class Reply:
    text: str = ""
    tool_calls: list[ToolCallSpec] = field(default_factory=list)
    thinking: str | None = None
    usage: tuple[int, int] = (10, 5)  # (input, output) tokens, input excluding cache reads
    cache: tuple[int, int] = (0, 0)  # (read, write) tokens
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    error_body: dict[str, Any] | None = None  # None: a standard error body for the status
    delay_s: float = 0.0
    stop_reason: str | None = None  # None: derived from whether there are tool calls
    fault: Fault | None = None  # a broken 200 answer (see FAULTS)
    raw: bytes | None = None  # a 200 with exactly this body (headers: `headers`)
    refusal: str | None = None  # OpenAI: a structured-output refusal (`refusal`, no content)
    # OpenAI streamed: no chunk with a finish_reason (the deltas, then [DONE]), as some servers answer
    no_finish: bool = False


# Broken answers with status 200, each in both wire formats, streamed and not:
#   truncated    a stream that ends (properly terminated) before its final event: OpenAI without
#                the finish_reason chunk, the usage chunk and [DONE]; Anthropic without
#                message_delta and message_stop. Not streamed: the JSON body cut in half.
#   no_choices   OpenAI `choices: []` (streamed: chunks without choices); Anthropic `content: []`
#                with no stop_reason (streamed: no content block and no stop_reason).
#   not_json     a text/html body instead of JSON or SSE.
#   malformed    JSON of the wrong shape: OpenAI a null `message` (streamed: a `delta` that is a
#                string); Anthropic a content block without a `type` (streamed: a null
#                `content_block`).
#   not_utf8     the whole answer, with a byte that is not UTF-8 inside it.
#   error_in_200 an error object instead of an answer: OpenAI `{"error": ...}` (streamed: as a
#                `data:` chunk); Anthropic `{"type": "error", ...}` (streamed: an `error` event).
#   empty_body   no body at all.
#   bad_gzip     `Content-Encoding: gzip` on a body that is not gzip.
#   other_format the answer in the other wire format (an Anthropic message to an OpenAI client
#                and the reverse), as a misrouted proxy sends it.
#   too_deep     the answer (streamed: its first event) with an extra field of arrays nested
#                DEEP_LEVELS deep, past the JSON parser's recursion.
#   drip         the answer never completes: a stream sends its first event, then only SSE
#                comments (keep-alive pings); a body arrives one byte at a time. Every read is
#                quick, the whole answer takes minutes (up to DRIP_LIMIT_S, or until the
#                client hangs up).
# `Reply.raw` sends any body verbatim (with `Reply.headers` for its content type).
Fault = Literal[
    "truncated",
    "no_choices",
    "not_json",
    "malformed",
    "not_utf8",
    "error_in_200",
    "empty_body",
    "bad_gzip",
    "other_format",
    "too_deep",
    "drip",
]
SLOW_FAULTS: tuple[Fault, ...] = ("drip",)  # they take the client's timeout to notice
FAULTS: tuple[Fault, ...] = tuple(f for f in get_args(Fault) if f not in SLOW_FAULTS)
DRIP_LIMIT_S = 120.0
DEEP_LEVELS = 5000
DEEP_FIELD = '"deep": ' + "[" * DEEP_LEVELS + "]" * DEEP_LEVELS + ", "


def _deepened(data: str) -> str:
    """A JSON object's text with DEEP_FIELD as its first field (json.dumps cannot write it)."""
    return "{" + DEEP_FIELD + data.removeprefix("{")


DRIP_EVERY_S = 0.1
NOT_JSON_BODY = b"<html><body><h1>502 Bad Gateway</h1>the upstream answered nothing</body></html>\n"

Responder = Callable[[WireRequest], Reply]


def _text_of(content: Any) -> str:
    """The text of a message content: a string, or a list of text blocks/parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def _openai_view(path: str, headers: dict[str, str], body: dict[str, Any]) -> WireRequest:
    messages = body.get("messages", [])
    tools = body.get("tools") or []
    users = [m for m in messages if m.get("role") == "user"]
    return WireRequest(
        api="openai",
        path=path,
        headers=headers,
        body=body,
        stream=bool(body.get("stream")),
        system="\n".join(
            _text_of(m.get("content")) for m in messages if m.get("role") in ("system", "developer")
        ),
        tool_names=[t.get("function", {}).get("name", "") for t in tools],
        tools=tools,
        assistant_turns=sum(1 for m in messages if m.get("role") == "assistant"),
        tool_results=[
            (m.get("tool_call_id", ""), _text_of(m.get("content")), False)
            for m in messages
            if m.get("role") == "tool"
        ],
        last_user_text=_text_of(users[-1].get("content")) if users else "",
        messages=messages,
    )


def _anthropic_tool_results(messages: list[dict[str, Any]]) -> list[tuple[str, str, bool]]:
    results = []
    for m in messages:
        content = m.get("content")
        if m.get("role") != "user" or not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                results.append(
                    (
                        block.get("tool_use_id", ""),
                        _text_of(block.get("content")),
                        bool(block.get("is_error")),
                    )
                )
    return results


def _anthropic_view(path: str, headers: dict[str, str], body: dict[str, Any]) -> WireRequest:
    messages = body.get("messages", [])
    tools = body.get("tools") or []
    user_texts = [_text_of(m.get("content")) for m in messages if m.get("role") == "user"]
    user_texts = [t for t in user_texts if t]
    return WireRequest(
        api="anthropic",
        path=path,
        headers=headers,
        body=body,
        stream=bool(body.get("stream")),
        system=_text_of(body.get("system", "")),
        tool_names=[t.get("name", "") for t in tools],
        tools=tools,
        assistant_turns=sum(1 for m in messages if m.get("role") == "assistant"),
        tool_results=_anthropic_tool_results(messages),
        last_user_text=user_texts[-1] if user_texts else "",
        messages=messages,
    )


def call(tool: str, /, **arguments: Any) -> ToolCallSpec:
    """A call of `tool`: `call("write_file", path="a.md", content="x")`."""
    return ToolCallSpec(tool, arguments)


def calls(*specs: ToolCallSpec, text: str = "") -> Reply:
    """A reply making the calls `specs` at once, `text` beside them."""
    return Reply(text=text, tool_calls=list(specs))


# ---------------------------------------------------------------- responders


class Script:
    """Per agent, the reply for each of its model calls: the agent is the key whose `match`
    substring (default: the key itself) occurs in the system prompt, the longest match winning;
    the call index is the number of assistant turns so far. Past the end: a plain "done"."""

    def __init__(self, agents: dict[str, list[Reply]], match: dict[str, str] | None = None) -> None:
        self.agents = agents
        self.match = {key: (match or {}).get(key, key) for key in agents}

    def agent_for(self, request: WireRequest) -> str | None:
        hits = [key for key, needle in self.match.items() if needle in request.system]
        return max(hits, key=lambda k: len(self.match[k])) if hits else None

    def __call__(self, request: WireRequest) -> Reply:
        key = self.agent_for(request)
        if key is None:
            known = ", ".join(repr(n) for n in self.match.values())
            return Reply(
                status=400,
                error_body=_error_body(request.api, 400, f"no script matches the system prompt ({known})"),
            )
        replies = self.agents[key]
        turn = request.assistant_turns
        return replies[turn] if turn < len(replies) else Reply(text="done")


def _done(request: WireRequest) -> Reply:
    return Reply(text="done")


class FailFirst:
    """Answers the first `n` requests with `status` (and `headers`), then defers to `then`."""

    def __init__(
        self, n: int, status: int, headers: dict[str, str] | None = None, then: Responder | None = None
    ) -> None:
        self.remaining = n
        self.status = status
        self.headers = headers or {}
        self.then = then or _done
        self._lock = threading.Lock()

    def __call__(self, request: WireRequest) -> Reply:
        with self._lock:
            failing = self.remaining > 0
            self.remaining -= 1 if failing else 0
        if failing:
            return Reply(status=self.status, headers=dict(self.headers))
        return self.then(request)


class FaultFirst:
    """Answers the first `n` requests with a broken 200 (`fault`), then defers to `then`."""

    def __init__(self, n: int, fault: Fault, then: Responder | None = None) -> None:
        self.remaining = n
        self.fault: Fault = fault
        self.then = then or _done
        self._lock = threading.Lock()

    def __call__(self, request: WireRequest) -> Reply:
        with self._lock:
            failing = self.remaining > 0
            self.remaining -= 1 if failing else 0
        if failing:
            return Reply(text="lost", fault=self.fault)
        return self.then(request)


class InTurn:
    """Answers request number i with `replies[i]`, then defers to `then` (a fault after
    another, whatever the request)."""

    def __init__(self, replies: list[Reply], then: Responder | None = None) -> None:
        self.replies = list(replies)
        self.then = then or _done
        self._lock = threading.Lock()

    def __call__(self, request: WireRequest) -> Reply:
        with self._lock:
            reply = self.replies.pop(0) if self.replies else None
        return reply if reply is not None else self.then(request)


def always(status: int, headers: dict[str, str] | None = None) -> Responder:
    """A responder answering every request with `status`."""

    def respond(request: WireRequest) -> Reply:
        return Reply(status=status, headers=dict(headers or {}))

    return respond


def reply_from_dict(raw: dict[str, Any]) -> Reply:
    """A Reply from its JSON form (the script file format)."""
    calls = [ToolCallSpec(c["name"], c.get("arguments", {})) for c in raw.get("tool_calls", [])]
    fields = {k: v for k, v in raw.items() if k != "tool_calls"}
    for pair in ("usage", "cache"):
        if pair in fields:
            fields[pair] = tuple(fields[pair])
    return Reply(tool_calls=calls, **fields)


def load_script(path: Path) -> Script:
    raw = json.loads(path.read_text(encoding="utf-8"))
    agents = {key: [reply_from_dict(r) for r in replies] for key, replies in raw["agents"].items()}
    return Script(agents, raw.get("match"))


# ---------------------------------------------------------------- wire encoding


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def _error_body(api: Api, status: int, message: str | None = None) -> dict[str, Any]:
    kind = _ERROR_TYPES.get(status, "api_error")
    message = message or f"scripted {status} ({kind})"
    if api == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "param": None, "code": str(status)}}


def _arguments_text(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _pieces(text: str, n: int = 3) -> list[str]:
    """`text` split into up to `n` fragments, as a streaming server would send it."""
    if len(text) < n:
        return [text] if text else []
    size = -(-len(text) // n)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _signature(thinking: str) -> str:
    return "sig_" + hashlib.sha256(thinking.encode()).hexdigest()[:24]


def _stop_reason(api: Api, reply: Reply) -> str:
    if reply.stop_reason:
        return reply.stop_reason
    if api == "anthropic":
        return "tool_use" if reply.tool_calls else "end_turn"
    return "tool_calls" if reply.tool_calls else "stop"


def _openai_call_id(request: WireRequest, i: int) -> str:
    return f"call_{request.assistant_turns}_{i}"


def _anthropic_call_id(request: WireRequest, i: int) -> str:
    return f"toolu_{request.assistant_turns}_{i}"


def _openai_usage(reply: Reply) -> dict[str, Any]:
    prompt = reply.usage[0] + reply.cache[0]
    return {
        "prompt_tokens": prompt,
        "completion_tokens": reply.usage[1],
        "total_tokens": prompt + reply.usage[1],
        "prompt_tokens_details": {"cached_tokens": reply.cache[0]},
    }


def _anthropic_usage(reply: Reply, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": reply.usage[0],
        "output_tokens": output_tokens,
        "cache_read_input_tokens": reply.cache[0],
        "cache_creation_input_tokens": reply.cache[1],
    }


def openai_completion(request: WireRequest, reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.refusal is not None:
        message["refusal"] = reply.refusal
    if reply.thinking is not None:
        message["reasoning_content"] = reply.thinking
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": _openai_call_id(request, i),
                "type": "function",
                "function": {"name": c.name, "arguments": _arguments_text(c.arguments)},
            }
            for i, c in enumerate(reply.tool_calls)
        ]
    if reply.fault == "malformed":
        message = None  # type: ignore[assignment]  # a null message: the wrong shape on purpose
    choices = [{"index": 0, "message": message, "finish_reason": _stop_reason("openai", reply)}]
    return {
        "id": f"chatcmpl-{request.assistant_turns}",
        "object": "chat.completion",
        "created": 0,
        "model": request.body.get("model", ""),
        "choices": [] if reply.fault == "no_choices" else choices,
        "usage": _openai_usage(reply),
    }


def _openai_deltas(request: WireRequest, reply: Reply) -> Iterator[dict[str, Any]]:
    yield {"role": "assistant", "content": ""}
    for piece in _pieces(reply.thinking or ""):
        yield {"reasoning_content": piece}
    for piece in _pieces(reply.text):
        yield {"content": piece}
    for piece in _pieces(reply.refusal or ""):
        yield {"refusal": piece}
    for i, call in enumerate(reply.tool_calls):
        yield {
            "tool_calls": [
                {
                    "index": i,
                    "id": _openai_call_id(request, i),
                    "type": "function",
                    "function": {"name": call.name, "arguments": ""},
                }
            ]
        }
        for piece in _pieces(_arguments_text(call.arguments)):
            yield {"tool_calls": [{"index": i, "function": {"arguments": piece}}]}


def openai_stream(request: WireRequest, reply: Reply) -> Iterator[str]:
    """The SSE `data:` payloads of a streamed chat completion, ending with [DONE]."""
    options = request.body.get("stream_options") or {}
    with_usage = bool(options.get("include_usage"))
    base = {
        "id": f"chatcmpl-{request.assistant_turns}",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": request.body.get("model", ""),
    }
    extra = {"usage": None} if with_usage else {}
    for delta in _openai_deltas(request, reply):
        if reply.fault == "malformed":
            delta = json.dumps(delta)  # type: ignore[assignment]  # a string where an object belongs
        choices = [] if reply.fault == "no_choices" else [{"index": 0, "delta": delta, "finish_reason": None}]
        yield json.dumps({**base, "choices": choices, **extra})
    if reply.fault == "truncated":
        return
    if reply.fault == "no_choices":
        yield "[DONE]"
        return
    if not reply.no_finish:
        finish = {"index": 0, "delta": {}, "finish_reason": _stop_reason("openai", reply)}
        yield json.dumps({**base, "choices": [finish], **extra})
    if with_usage:
        yield json.dumps({**base, "choices": [], "usage": _openai_usage(reply)})
    yield "[DONE]"


def _anthropic_input(arguments: dict[str, Any] | str) -> Any:
    if isinstance(arguments, dict):
        return arguments
    try:
        return json.loads(arguments)
    except json.JSONDecodeError:
        return arguments  # malformed on purpose: passed through for the client to cope with


def _anthropic_blocks(request: WireRequest, reply: Reply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.thinking is not None:
        blocks.append(
            {"type": "thinking", "thinking": reply.thinking, "signature": _signature(reply.thinking)}
        )
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    for i, call in enumerate(reply.tool_calls):
        blocks.append(
            {
                "type": "tool_use",
                "id": _anthropic_call_id(request, i),
                "name": call.name,
                "input": call.arguments,
            }
        )
    return blocks


def _anthropic_skeleton(request: WireRequest, reply: Reply) -> dict[str, Any]:
    return {
        "id": f"msg_{request.assistant_turns}",
        "type": "message",
        "role": "assistant",
        "model": request.body.get("model", ""),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
    }


def anthropic_message(request: WireRequest, reply: Reply) -> dict[str, Any]:
    blocks = _anthropic_blocks(request, reply)
    for block in blocks:
        if block["type"] == "tool_use":
            block["input"] = _anthropic_input(block["input"])
    empty = reply.fault == "no_choices"
    if reply.fault == "malformed":
        blocks = [{k: v for k, v in block.items() if k != "type"} for block in blocks]
    return {
        **_anthropic_skeleton(request, reply),
        "content": [] if empty else blocks,
        "stop_reason": None if empty else _stop_reason("anthropic", reply),
        "usage": _anthropic_usage(reply, reply.usage[1]),
    }


def _anthropic_block_events(index: int, block: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    kind = block["type"]
    if kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"])]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    elif kind == "text":
        start = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"])]
    else:
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        deltas = [
            {"type": "input_json_delta", "partial_json": p} for p in _pieces(_arguments_text(block["input"]))
        ]
    yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
    for delta in deltas:
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": index}


def anthropic_stream(request: WireRequest, reply: Reply) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event name, data) pairs of a streamed message, in the order the API sends them."""
    start = {**_anthropic_skeleton(request, reply), "usage": _anthropic_usage(reply, 1)}
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    blocks = [] if reply.fault == "no_choices" else _anthropic_blocks(request, reply)
    for index, block in enumerate(blocks):
        for name, data in _anthropic_block_events(index, block):
            if reply.fault == "malformed" and name == "content_block_start":
                data = {**data, "content_block": None}
            yield name, data
    if reply.fault == "truncated":
        return
    stop = None if reply.fault == "no_choices" else _stop_reason("anthropic", reply)
    delta = {"stop_reason": stop, "stop_sequence": None}
    yield (
        "message_delta",
        {"type": "message_delta", "delta": delta, "usage": {"output_tokens": reply.usage[1]}},
    )
    yield "message_stop", {"type": "message_stop"}


def _chunk(payload: str) -> bytes:
    data = payload.encode()
    return b"%x\r\n%s\r\n" % (len(data), data)


def _sse_events(request: WireRequest, reply: Reply) -> list[str]:
    if reply.fault == "error_in_200":
        error = json.dumps(_error_body(request.api, 529, "the upstream is overloaded"))
        return [f"event: error\ndata: {error}\n\n" if request.api == "anthropic" else f"data: {error}\n\n"]
    if request.api == "anthropic":
        pairs = [(name, json.dumps(data)) for name, data in anthropic_stream(request, reply)]
    else:
        pairs = [("", data) for data in openai_stream(request, reply)]
    if reply.fault == "too_deep":
        pairs[0] = (pairs[0][0], _deepened(pairs[0][1]))
    return [(f"event: {name}\n" if name else "") + f"data: {data}\n\n" for name, data in pairs]


def sse_body(request: WireRequest, reply: Reply) -> bytes:
    """The whole streamed body, chunked-encoded (one chunk per SSE event) and terminated."""
    return b"".join(_chunk(e) for e in _sse_events(request, reply)) + b"0\r\n\r\n"


def _json_body(request: WireRequest, reply: Reply) -> bytes:
    if reply.fault == "error_in_200":
        return json.dumps(_error_body(request.api, 529, "the upstream is overloaded")).encode()
    make = anthropic_message if request.api == "anthropic" else openai_completion
    text = json.dumps(make(request, reply))
    whole = (_deepened(text) if reply.fault == "too_deep" else text).encode()
    return whole[: len(whole) // 2] if reply.fault == "truncated" else whole


def answer_bytes(request: WireRequest, reply: Reply) -> tuple[dict[str, str], bytes]:
    """The headers and body of a 200 answer, broken as the reply's `fault` says."""
    fault = reply.fault
    if fault == "other_format":
        other: Api = "openai" if request.api == "anthropic" else "anthropic"
        request, reply = replace(request, api=other), replace(reply, fault=None)
    if fault == "not_json":
        return {"Content-Type": "text/html", "Content-Length": str(len(NOT_JSON_BODY))}, NOT_JSON_BODY
    if request.stream:
        headers = {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"}
        body = sse_body(request, reply) if fault != "empty_body" else b"0\r\n\r\n"
    else:
        headers = {"Content-Type": "application/json"}
        body = _json_body(request, reply) if fault != "empty_body" else b""
        headers["Content-Length"] = str(len(body))
    if fault == "not_utf8":  # one byte for another, so the chunk sizes stay right
        body = body.replace(b'"assistant"', b'"assist\xffnt"', 1)
    if fault == "bad_gzip":
        headers["Content-Encoding"] = "gzip"
    return headers, body


# ---------------------------------------------------------------- HTTP


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive
    disable_nagle_algorithm = True  # TESTING.md 1: no 40 ms Nagle/delayed-ACK stalls
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read .requests
        return

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection)

    def finish(self) -> None:
        super().finish()
        self.server.untrack(self.connection)

    def do_GET(self) -> None:
        self._send(200, {"Content-Type": "text/plain"}, b"wire server ok\n")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        if path not in (OPENAI_PATH, ANTHROPIC_PATH):
            self._send_json(404, {"error": {"message": f"no route {path}", "type": "not_found_error"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError as e:
            self._send_json(
                400, {"error": {"message": f"body is not JSON: {e}", "type": "invalid_request_error"}}
            )
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        view = _anthropic_view if path == ANTHROPIC_PATH else _openai_view
        request = view(path, headers, body)
        self.server.record(request)
        self._answer(request)

    def _answer(self, request: WireRequest) -> None:
        self.server.enter()
        try:
            self._reply(request)
        finally:
            self.server.leave()

    def _reply(self, request: WireRequest) -> None:
        try:
            reply = self.server.responder(request)
        except Exception:  # a broken responder is a test bug: show it in the response
            self._send_json(500, _error_body(request.api, 500, "responder failed: " + traceback.format_exc()))
            return
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.status != 200:
            body = reply.error_body or _error_body(request.api, reply.status)
            self._send_json(reply.status, body, reply.headers)
        elif reply.fault == "drip":
            self._drip(request, reply)
        elif reply.raw is not None:
            self._send(200, {"Content-Type": "application/json", **reply.headers}, reply.raw)
        else:
            headers, payload = answer_bytes(request, reply)
            self._write(200, {**headers, **reply.headers}, payload)

    def _drip(self, request: WireRequest, reply: Reply) -> None:
        """Start the answer, then keep it going without ever finishing it."""
        headers, body = answer_bytes(request, replace(reply, fault=None))
        ends = time.monotonic() + DRIP_LIMIT_S
        try:
            if request.stream:
                first = _sse_events(request, replace(reply, fault=None))[0]
                self._write(200, headers, _chunk(first))
                while time.monotonic() < ends:
                    time.sleep(DRIP_EVERY_S)
                    self.wfile.write(_chunk(": ping\n\n"))
            else:
                self._write(200, headers, b"")
                for byte in body[:-1]:
                    time.sleep(DRIP_EVERY_S)
                    self.wfile.write(bytes([byte]))
        except OSError:
            pass  # the client gave up: what a drip is for
        self.close_connection = True

    def _send_json(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._send(status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(body).encode())

    def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self._write(status, {**headers, "Content-Length": str(len(body))}, body)

    def _write(self, status: int, headers: dict[str, str], body: bytes) -> None:
        """Status line, headers and body in ONE write (TESTING.md 1)."""
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "Status"
        if self.close_connection:
            headers = {**headers, "Connection": "close"}
        head = (
            f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
        )
        self.wfile.write(head.encode("latin-1") + body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # the listen backlog: socketserver's 5 drops the SYNs of a burst of new connections (a batch
    # opening 50 at once), and the client's SYN retry then waits a whole second
    request_queue_size = 1024

    def __init__(self, address: tuple[str, int], responder: Responder) -> None:
        super().__init__(address, _Handler)
        self.responder = responder
        self.requests: list[WireRequest] = []
        self.lock = threading.Lock()
        self.connections: set[socket.socket] = set()
        self.connections_opened = 0
        self.in_flight = 0  # requests being answered right now
        self.max_in_flight = 0  # the most answered at once: concurrency as the server saw it

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client that hung up (a timeout test, a stopped server) is not an error worth a traceback
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)

    def enter(self) -> None:
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def leave(self) -> None:
        with self.lock:
            self.in_flight -= 1

    def record(self, request: WireRequest) -> None:
        with self.lock:
            self.requests.append(request)

    def track(self, conn: socket.socket) -> None:
        with self.lock:
            self.connections.add(conn)
            self.connections_opened += 1

    def untrack(self, conn: socket.socket) -> None:
        with self.lock:
            self.connections.discard(conn)

    def close_connections(self) -> None:
        """Unblock handler threads idling on keep-alive connections."""
        with self.lock:
            conns = list(self.connections)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class WireServer:
    """The scripted server, started on construction; a context manager that stops it."""

    def __init__(self, responder: Responder, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = _Server((host, port), responder)
        # a short poll interval: stop() waits for the serve loop to notice (0.5 s by default)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), name="wire-server", daemon=True
        )
        self._thread.start()
        self._stopped = False

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    def base_url(self, api: str) -> str:
        """The base URL the SDK of wire format `api` is given."""
        return self.anthropic_base_url if api == "anthropic" else self.openai_base_url

    @property
    def requests(self) -> list[WireRequest]:
        """A snapshot of the requests received so far, in arrival order."""
        with self._server.lock:
            return list(self._server.requests)

    @property
    def connections_opened(self) -> int:
        """How many TCP connections clients opened: 1 for a run that kept its connection alive."""
        with self._server.lock:
            return self._server.connections_opened

    @property
    def max_in_flight(self) -> int:
        """The most requests the server was answering at the same time (a reply's `delay_s`
        included), i.e. the concurrency of the run's model calls as seen from the wire."""
        with self._server.lock:
            return self._server.max_in_flight

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._server.shutdown()
        self._server.close_connections()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> WireServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Serve a scripted model over the OpenAI and Anthropic wire formats."
    )
    parser.add_argument(
        "--script", type=Path, required=True, help="JSON: {agents: {key: [reply, ...]}, match: {...}}"
    )
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    server = WireServer(load_script(args.script), args.host, args.port)
    print(server.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
