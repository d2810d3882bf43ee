"""The scripted wire server itself, spoken to with plain stdlib HTTP (no SDK): both formats,
streamed and not, keep-alive, the request view, the responders and the script mode."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.wire_server import FailFirst, Reply, Script, ToolCallSpec, WireRequest, WireServer, always

THREE_CALLS = [
    ToolCallSpec("read_file", {"path": "a.txt"}),
    ToolCallSpec("read_file", {"path": "b.txt", "start_line": 3}),
    ToolCallSpec("list_dir", {"path": "."}),
]


def post(server: WireServer, path: str, body: dict[str, Any], conn: http.client.HTTPConnection | None = None):
    """(status, headers, body bytes) of one POST; `conn` reuses a keep-alive connection."""
    own = conn is None
    conn = conn or http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=10)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        if own:
            conn.close()


def sse_events(raw: bytes) -> list[tuple[str | None, str]]:
    """(event name, data) of each SSE event in a body."""
    events = []
    for chunk in raw.decode().split("\n\n"):
        if not chunk.strip():
            continue
        name, data = None, []
        for line in chunk.split("\n"):
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data.append(line.removeprefix("data: "))
        events.append((name, "\n".join(data)))
    return events


def openai_body(**extra: Any) -> dict[str, Any]:
    return {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "You are the researcher."},
            {"role": "user", "content": "go"},
        ],
        **extra,
    }


def anthropic_body(**extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-test",
        "max_tokens": 100,
        "system": [{"type": "text", "text": "You are the researcher."}],
        "messages": [{"role": "user", "content": "go"}],
        **extra,
    }


@pytest.fixture
def three_calls_server():
    with WireServer(Script({"researcher": [Reply(text="reading", tool_calls=THREE_CALLS)]})) as server:
        yield server


def test_openai_plain_response_has_three_calls_and_usage(three_calls_server: WireServer) -> None:
    status, headers, raw = post(three_calls_server, "/v1/chat/completions", openai_body())
    assert status == 200 and headers["content-type"] == "application/json"
    body = json.loads(raw)
    message = body["choices"][0]["message"]
    assert message["content"] == "reading"
    assert [c["id"] for c in message["tool_calls"]] == ["call_0_0", "call_0_1", "call_0_2"]
    assert [json.loads(c["function"]["arguments"]) for c in message["tool_calls"]] == [
        c.arguments for c in THREE_CALLS
    ]
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    assert body["usage"]["prompt_tokens"] == 10 and body["usage"]["completion_tokens"] == 5


def test_openai_stream_fragments_calls_by_index(three_calls_server: WireServer) -> None:
    body = openai_body(stream=True, stream_options={"include_usage": True})
    status, headers, raw = post(three_calls_server, "/v1/chat/completions", body)
    assert status == 200 and headers["transfer-encoding"] == "chunked"
    events = sse_events(raw)
    assert events[-1] == (None, "[DONE]")
    chunks = [json.loads(data) for _, data in events[:-1]]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 5
    assert all(c["usage"] is None for c in chunks[:-1])
    fragments: dict[int, list[dict[str, Any]]] = {}
    for chunk in chunks[:-1]:
        for choice in chunk["choices"]:
            for tc in choice["delta"].get("tool_calls", []):
                fragments.setdefault(tc["index"], []).append(tc)
    assert sorted(fragments) == [0, 1, 2]
    for index, parts in fragments.items():
        assert parts[0]["id"] == f"call_0_{index}" and parts[0]["function"]["name"] == THREE_CALLS[index].name
        assert all("id" not in p for p in parts[1:])
        assert len(parts) >= 3  # the arguments arrive in several pieces
        joined = "".join(p["function"]["arguments"] for p in parts)
        assert json.loads(joined) == THREE_CALLS[index].arguments
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks[:-1]) == "reading"


def test_openai_stream_without_include_usage_sends_no_usage(three_calls_server: WireServer) -> None:
    _, _, raw = post(three_calls_server, "/v1/chat/completions", openai_body(stream=True))
    chunks = [json.loads(d) for _, d in sse_events(raw)[:-1]]
    assert all("usage" not in c for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_anthropic_plain_message(three_calls_server: WireServer) -> None:
    status, _, raw = post(three_calls_server, "/v1/messages", anthropic_body())
    body = json.loads(raw)
    assert status == 200 and body["type"] == "message" and body["stop_reason"] == "tool_use"
    assert [b["type"] for b in body["content"]] == ["text", "tool_use", "tool_use", "tool_use"]
    assert [b["input"] for b in body["content"][1:]] == [c.arguments for c in THREE_CALLS]
    assert [b["id"] for b in body["content"][1:]] == ["toolu_0_0", "toolu_0_1", "toolu_0_2"]


def test_anthropic_stream_names_every_event_and_fragments_input() -> None:
    reply = Reply(text="hello there", thinking="let me think", tool_calls=THREE_CALLS, usage=(7, 42))
    with WireServer(Script({"researcher": [reply]})) as server:
        _, headers, raw = post(server, "/v1/messages", anthropic_body(stream=True))
    assert headers["content-type"] == "text/event-stream"
    events = sse_events(raw)
    assert all(name is not None for name, _ in events)
    assert all(json.loads(data)["type"] == name for name, data in events)
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    start = json.loads(events[0][1])["message"]
    assert start["content"] == [] and start["usage"]["input_tokens"] == 7
    blocks: dict[int, dict[str, Any]] = {}
    for name, data in events:
        event = json.loads(data)
        if name == "content_block_start":
            blocks[event["index"]] = {"start": event["content_block"], "deltas": []}
        elif name == "content_block_delta":
            blocks[event["index"]]["deltas"].append(event["delta"])
    assert [b["start"]["type"] for b in blocks.values()] == [
        "thinking",
        "text",
        "tool_use",
        "tool_use",
        "tool_use",
    ]
    thinking = blocks[0]["deltas"]
    assert "".join(d.get("thinking", "") for d in thinking) == "let me think"
    assert thinking[-1]["type"] == "signature_delta" and thinking[-1]["signature"].startswith("sig_")
    for i, call in enumerate(THREE_CALLS):
        block = blocks[i + 2]
        assert block["start"]["input"] == {} and block["start"]["id"] == f"toolu_0_{i}"
        assert len(block["deltas"]) >= 3
        assert json.loads("".join(d["partial_json"] for d in block["deltas"])) == call.arguments
    delta = json.loads(events[-2][1])
    assert delta["delta"]["stop_reason"] == "tool_use" and delta["usage"]["output_tokens"] == 42


@pytest.mark.parametrize("stream", [False, True])
def test_malformed_arguments_pass_through_verbatim(stream: bool) -> None:
    broken = '{"path": "a.txt", '
    script = Script({"researcher": [Reply(tool_calls=[ToolCallSpec("read_file", broken)])]})
    with WireServer(script) as server:
        _, _, raw_o = post(server, "/v1/chat/completions", openai_body(stream=stream))
        _, _, raw_a = post(server, "/v1/messages", anthropic_body(stream=stream))
    if stream:
        openai_args = "".join(
            tc["function"].get("arguments", "")
            for _, d in sse_events(raw_o)[:-1]
            for ch in json.loads(d)["choices"]
            for tc in ch["delta"].get("tool_calls", [])
        )
        anthropic_args = "".join(
            json.loads(d)["delta"]["partial_json"]
            for name, d in sse_events(raw_a)
            if name == "content_block_delta"
        )
    else:
        openai_args = json.loads(raw_o)["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
        anthropic_args = json.loads(raw_a)["content"][0]["input"]
    assert openai_args == broken and anthropic_args == broken


def test_request_view_openai() -> None:
    with WireServer(Script({"researcher": []})) as server:
        body = openai_body()
        body["messages"] += [
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]},
            {"role": "tool", "tool_call_id": "c1", "content": "file text"},
            {"role": "user", "content": [{"type": "text", "text": "and now?"}]},
        ]
        body["tools"] = [{"type": "function", "function": {"name": "read_file", "parameters": {}}}]
        post(server, "/v1/chat/completions", body)
        (seen,) = server.requests
    assert (seen.api, seen.path, seen.stream) == ("openai", "/v1/chat/completions", False)
    assert seen.system == "You are the researcher."
    assert seen.tool_names == ["read_file"] and seen.assistant_turns == 1
    assert seen.tool_results == [("c1", "file text", False)]
    assert seen.last_user_text == "and now?"
    assert seen.headers["content-type"] == "application/json"


def test_request_view_anthropic() -> None:
    with WireServer(Script({"researcher": []})) as server:
        body = anthropic_body(stream=True, tools=[{"name": "grep", "input_schema": {}}])
        body["messages"] += [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "grep", "input": {}}]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "no match", "is_error": True},
                    {"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "ok"}]},
                ],
            },
        ]
        post(server, "/v1/messages", body)
        (seen,) = server.requests
    assert (seen.api, seen.stream, seen.system) == ("anthropic", True, "You are the researcher.")
    assert seen.tool_names == ["grep"] and seen.assistant_turns == 1
    assert seen.tool_results == [("t1", "no match", True), ("t2", "ok", False)]
    assert seen.last_user_text == "go"  # the last user turn holding text, not only tool results


def test_keep_alive_serves_many_requests_on_one_connection(three_calls_server: WireServer) -> None:
    conn = http.client.HTTPConnection(three_calls_server.url.removeprefix("http://"), timeout=10)
    local_ports = set()
    try:
        for stream in (False, True, False, True):
            for path, body in (("/v1/messages", anthropic_body), ("/v1/chat/completions", openai_body)):
                status, headers, raw = post(three_calls_server, path, body(stream=stream), conn)
                assert status == 200 and raw and "connection" not in headers
                assert conn.sock is not None  # http.client drops the socket when told to close
                local_ports.add(conn.sock.getsockname()[1])
    finally:
        conn.close()
    assert len(local_ports) == 1  # one connection carried all eight exchanges
    assert len(three_calls_server.requests) == 8


def test_script_turns_matching_and_past_the_end() -> None:
    script = Script(
        {"searcher": [Reply(text="s0"), Reply(text="s1")], "writer": [Reply(text="w0")]},
        match={"searcher": "You search", "writer": "You write"},
    )

    def ask(system: str, turns: int) -> Reply:
        messages = [{"role": "assistant", "content": "x"}] * turns
        view = WireRequest("openai", "/", {}, {}, False, system, [], [], turns, [], "", messages)
        return script(view)

    assert ask("You search the web", 0).text == "s0"
    assert ask("You search the web", 1).text == "s1"
    assert ask("You search the web", 2).text == "done"
    assert ask("You write reports", 0).text == "w0"
    unmatched = ask("You review", 0)
    assert unmatched.status == 400 and "You search" in json.dumps(unmatched.error_body)


def test_script_longest_match_wins() -> None:
    script = Script({"writer": [Reply(text="w")], "rewriter": [Reply(text="r")]})
    view = WireRequest("openai", "/", {}, {}, False, "the rewriter", [], [], 0, [], "", [])
    assert script(view).text == "r"


def test_fail_first_then_delegates_and_errors_use_each_format() -> None:
    responder = FailFirst(2, 429, {"retry-after": "1"}, then=Script({"researcher": [Reply(text="finally")]}))
    with WireServer(responder) as server:
        s1, h1, b1 = post(server, "/v1/messages", anthropic_body())
        s2, _, b2 = post(server, "/v1/chat/completions", openai_body())
        s3, _, b3 = post(server, "/v1/chat/completions", openai_body())
    assert (s1, s2, s3) == (429, 429, 200)
    assert h1["retry-after"] == "1"
    assert json.loads(b1)["error"]["type"] == "rate_limit_error" and json.loads(b1)["type"] == "error"
    assert "message" in json.loads(b2)["error"]
    assert json.loads(b3)["choices"][0]["message"]["content"] == "finally"


def test_always_and_custom_error_body_and_unknown_route() -> None:
    with WireServer(always(503)) as server:
        status, _, raw = post(server, "/v1/messages", anthropic_body())
        assert status == 503 and json.loads(raw)["error"]["type"] == "api_error"
        status, _, raw = post(server, "/v2/other", {})
        assert status == 404
    custom = Reply(status=400, error_body={"error": {"message": "context too long"}})
    with WireServer(Script({"researcher": [custom]})) as server:
        status, _, raw = post(server, "/v1/chat/completions", openai_body())
    assert status == 400 and json.loads(raw) == {"error": {"message": "context too long"}}


def test_broken_responder_becomes_a_500_with_the_traceback() -> None:
    def broken(request: WireRequest) -> Reply:
        raise RuntimeError("script bug")

    with WireServer(broken) as server:
        status, _, raw = post(server, "/v1/chat/completions", openai_body())
    assert status == 500 and "script bug" in json.loads(raw)["error"]["message"]


def test_runs_as_a_script(tmp_path: Path) -> None:
    script = {"agents": {"researcher": [{"text": "from file", "usage": [3, 4]}]}}
    (tmp_path / "script.json").write_text(json.dumps(script))
    server_py = Path(__file__).parent / "support" / "wire_server.py"
    proc = subprocess.Popen(
        [sys.executable, str(server_py), "--script", str(tmp_path / "script.json"), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        conn = http.client.HTTPConnection(url.removeprefix("http://"), timeout=10)
        try:
            conn.request("POST", "/v1/chat/completions", json.dumps(openai_body()))
            body = json.loads(conn.getresponse().read())
        finally:
            conn.close()
        assert body["choices"][0]["message"]["content"] == "from file"
        assert body["usage"]["completion_tokens"] == 4
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stdout.close()
