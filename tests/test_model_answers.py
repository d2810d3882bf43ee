"""Issue 11, item 2, through the CLI and the real SDKs: a 200 that is not a usable answer (a
stream cut before its final event, no choices, a body that is not JSON or not UTF-8, JSON of
the wrong shape, an error object, no body, a body that does not unzip, the other wire format,
JSON nested past the parser's recursion, an empty answer) is a retryable provider error in both
wire formats, streamed and not: retried, then the run fails `failed` (exit 1) with one line
naming the model and the fault; a good answer after the bad ones and the run completes. A
property test sends the providers answers of any shape: each ends in an answer or a
ProviderError, never another exception."""

from __future__ import annotations

import asyncio
import json
import math
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.cli import run_cli
from support.project import model, workflow, write_project
from support.providers import provider_config
from support.runs import check_log, no_traceback, status_of
from support.wire_server import (
    FAULTS,
    SLOW_FAULTS,
    InTurn,
    Reply,
    Script,
    ToolCallSpec,
    WireRequest,
    WireServer,
)

from flowrun.errors import ProviderError
from flowrun.providers.anthropic_provider import AnthropicProvider
from flowrun.providers.base import ModelRequest
from flowrun.providers.openai_provider import OpenAIProvider
from flowrun.types import Message, ModelResponse, ToolCall, ToolSpec

CASES = [*(f for f in FAULTS if f not in SLOW_FAULTS), "empty"]
COMBOS = [("openai", False), ("openai", True), ("anthropic", False), ("anthropic", True)]
COMBO_IDS = [f"{api}-{'stream' if stream else 'plain'}" for api, stream in COMBOS]
# what the error line and each model_retry reason say, per fault and (api, stream) where it differs
EXPECTED: dict[str, str | dict[tuple[str, bool], str]] = {
    "truncated": {
        ("openai", False): "unusable answer: the response body is not valid JSON",
        ("anthropic", False): "unusable answer: the response body is not valid JSON",
        ("openai", True): "unusable answer: the stream ended after 3 events without its final chunk",
        ("anthropic", True): "unusable answer: the stream ended after 5 events without its final message_",
    },
    "no_choices": {
        ("openai", False): "unusable answer: the answer has no choices",
        ("openai", True): "unusable answer: the stream ended after 3 events without its final chunk",
        ("anthropic", False): "unusable answer: the answer is empty",
        ("anthropic", True): "unusable answer: the answer is empty",
    },
    "not_json": {
        ("openai", False): "unusable answer: the response body is not JSON: '<html>",
        ("anthropic", False): "unusable answer: the response body is not JSON: '<html>",
        ("openai", True): "unusable answer: the stream carried no events",
        ("anthropic", True): "unusable answer: the stream carried no events",
    },
    "malformed": "unusable answer: the answer is malformed",
    "not_utf8": "unusable answer: the response body is not UTF-8 (byte 0xff at offset",
    "error_in_200": {
        ("openai", False): "unusable answer: the response is an error: the upstream is overloaded",
        ("anthropic", False): "unusable answer: the response is an error: the upstream is overloaded",
        ("openai", True): "stream error: the upstream is overloaded",
        ("anthropic", True): "HTTP 529: the upstream is overloaded",
    },
    "empty_body": {
        ("openai", False): "unusable answer: the response body is not valid JSON",
        ("anthropic", False): "unusable answer: the response body is not valid JSON",
        ("openai", True): "unusable answer: the stream carried no events",
        ("anthropic", True): "unusable answer: the stream carried no events",
    },
    "bad_gzip": "unusable answer: the response body cannot be decoded",
    "other_format": {
        ("openai", False): "unusable answer: the answer is in Anthropic's Messages format",
        ("openai", True): "unusable answer: the stream is in Anthropic's Messages format",
        ("anthropic", False): "unusable answer: the answer is in OpenAI's Chat Completions format",
        ("anthropic", True): "unusable answer: the stream carried no events",
    },
    "too_deep": "unusable answer: the response body nests JSON too deep to read",
    "empty": "unusable answer: the answer is empty: no text and no tool call",
}


def expected(case: str, api: str, stream: bool) -> str:
    said = EXPECTED[case]
    return said if isinstance(said, str) else said[(api, stream)]


def bad(case: str) -> Reply:
    return Reply(text="") if case == "empty" else Reply(text="lost", fault=case)  # type: ignore[arg-type]


def project(tmp: Path, api: str, base_url: str, retries: int, timeout_s: float = 300) -> Path:
    key = "OPENAI_API_KEY" if api == "openai" else "ANTHROPIC_API_KEY"
    settings = {"api_key_env": key, "base_url": base_url, "max_retries": retries, "timeout_s": timeout_s}
    spec = workflow(model(api, model="test-model", **settings), name="answers", entry="w", output="report.md")
    write_project(tmp, spec, {"w": {"prompt": "You are the answer checker.", "tools": ["write_file"]}})
    return tmp


def run(
    tmp: Path, api: str, server: WireServer, stream: bool, retries: int, timeout_s: float = 300
) -> tuple[int, str, Path]:
    base = server.base_url(api)
    project(tmp, api, base, retries, timeout_s)
    env = {"OPENAI_API_KEY": "test-key-openai-123", "ANTHROPIC_API_KEY": "test-key-anthropic-123"}
    env["FLOWRUN_RETRY_BASE_S"] = "0.001"  # ten retries in well under a second
    flag = "--stream" if stream else "--no-stream"
    proc = run_cli(["wf.yaml", "--run-id", "r", flag, "-q"], cwd=tmp, env=env)
    no_traceback(proc)
    return proc.returncode, proc.stdout + proc.stderr, tmp / "runs" / "r"


@pytest.mark.parametrize(("api", "stream"), COMBOS, ids=COMBO_IDS)
def test_every_unusable_answer_is_retried_then_the_run_fails_naming_model_and_fault(
    tmp_path: Path, api: str, stream: bool
) -> None:
    """Every kind of bad answer in turn, one per retry; each run ends on another one."""
    shift = 3 * COMBOS.index((api, stream))
    cases = CASES[shift:] + CASES[:shift]
    with WireServer(InTurn([bad(c) for c in cases])) as server:
        code, out, run_dir = run(tmp_path, api, server, stream, retries=len(cases) - 1)
        asked = len(server.requests)
    assert code == 1, out
    assert asked == len(cases)  # the first try and every retry, nothing more
    line = next(line for line in out.splitlines() if line.startswith("error:"))
    assert f"model 'm' ({api}:test-model) failed after {len(cases) - 1} retries: " in line, line
    assert expected(cases[-1], api, stream) in line, line
    assert "report.md was not written" in out
    assert status_of(run_dir) == "failed"
    events = check_log(run_dir)
    reasons = [e["reason"] for e in events if e["type"] == "model_retry"]
    assert len(reasons) == len(cases) - 1
    for case, reason in zip(cases, reasons, strict=False):
        assert expected(case, api, stream) in reason, (case, reason)
    last = expected(cases[-1], api, stream).split(": ", 1)[1]
    assert any(e["type"] == "error" and e["where"] == "model" and last in e["message"] for e in events)
    assert not any(e["type"] == "model_response" for e in events)  # nothing unusable reached the agent


@pytest.mark.parametrize(("api", "stream"), COMBOS, ids=COMBO_IDS)
def test_a_good_answer_after_every_bad_one_completes_the_run(tmp_path: Path, api: str, stream: bool) -> None:
    good = Script(
        {
            "answer checker": [
                Reply(tool_calls=[ToolCallSpec("write_file", {"path": "report.md", "content": "ok\n"})]),
                Reply(text="written"),
            ]
        }
    )
    with WireServer(InTurn([bad(c) for c in CASES], then=good)) as server:
        code, out, run_dir = run(tmp_path, api, server, stream, retries=len(CASES))
        asked = len(server.requests)
    assert code == 0, out
    assert asked == len(CASES) + 2
    assert (run_dir / "report.md").read_text() == "ok\n"
    events = check_log(run_dir)
    assert [e["retry"] for e in events if e["type"] == "model_retry"] == list(range(1, len(CASES) + 1))
    assert [e["response"]["text"] for e in events if e["type"] == "model_response"][-1] == "written"


@pytest.mark.parametrize(("api", "stream"), COMBOS, ids=COMBO_IDS)
def test_arguments_nested_too_deep_or_with_nan_go_back_to_the_model(
    tmp_path: Path, api: str, stream: bool
) -> None:
    """Tool arguments nested thousands of levels deep (which had broken the stack: an internal
    error, exit 70), 100 levels deep, holding NaN or Infinity (not JSON) or a number of 5,000
    digits (more than Python converts) are refused to the model, which goes on; the log stays
    strict JSON."""
    deep = '{"path": "report.md", "content": "x", "n": ' + "[" * 100 + "]" * 100 + "}"
    calls = [
        deep,
        '{"path": "report.md", "content": "x", "n": NaN}',
        '{"path": "report.md", "content": "x", "n": -Infinity}',
    ]
    if (api, stream) != ("anthropic", False):  # (that body's input is an object: no text carries it)
        calls.insert(0, '{"path": "report.md", "content": ' + "[" * 5000 + "]" * 5000 + "}")
        calls.append('{"path": "report.md", "content": "x", "n": ' + "7" * 5000 + "}")
    replies = [Reply(tool_calls=[ToolCallSpec("write_file", c)]) for c in calls]
    script = Script(
        {
            "answer checker": [
                *replies,
                Reply(tool_calls=[ToolCallSpec("write_file", {"path": "report.md", "content": "ok"})]),
                Reply(text="done"),
            ]
        }
    )
    with WireServer(script) as server:
        code, out, run_dir = run(tmp_path, api, server, stream, retries=0)
    assert code == 0, out
    results = [e["result"] for e in check_log(run_dir) if e["type"] == "tool_result"]
    said = [r["text"] for r in results[:-1]]
    assert all(r["error"]["code"] == "INVALID_PARAM" for r in results[:-1]), said
    deep_calls = 2 if (api, stream) != ("anthropic", False) else 1
    assert sum("nested more than 64 levels deep" in t for t in said) == deep_calls, said
    assert sum("a number has more than 4300 digits" in t for t in said) == deep_calls - 1, said
    assert any("NaN is not a JSON value" in t for t in said) and any(
        "-Infinity is not a JSON value" in t for t in said
    )
    assert (run_dir / "report.md").read_text() == "ok"


@pytest.mark.parametrize(("api", "stream"), COMBOS, ids=COMBO_IDS)
def test_lone_surrogates_in_an_answer_never_stop_the_run(tmp_path: Path, api: str, stream: bool) -> None:
    """An answer whose JSON holds a lone surrogate escape (\\ud800: no character UTF-8 can
    encode) in its text, a tool's name or a tool call's arguments: the call is refused to the
    model, the text is kept with U+FFFD in its place (in the log, the history sent back and
    the output file), and the run goes on to complete. It had ended in an internal error
    (exit 70) when the next request was built."""
    script = Script(
        {
            "answer checker": [
                Reply(
                    text="thinking \ud800 aloud",
                    tool_calls=[
                        ToolCallSpec("write_file", {"path": "a\ud800.md", "content": "x"}),
                        ToolCallSpec("write\udfff_file", {"path": "b.md", "content": "y"}),
                    ],
                ),
                Reply(tool_calls=[ToolCallSpec("write_file", {"path": "report.md", "content": "\udc80"})]),
                Reply(text="done \ud800"),
            ]
        }
    )
    with WireServer(script) as server:
        code, out, run_dir = run(tmp_path, api, server, stream, retries=0)
        sent = [json.dumps(r.body, ensure_ascii=False) for r in server.requests]
    assert code == 0, out
    events = check_log(run_dir)
    results = {e["tool"]: e["result"] for e in events if e["type"] == "tool_result"}
    said = sorted(r["text"] for r in results.values())
    assert all(r["status"] == "error" for r in results.values()) and len(said) == 2, said
    assert "there is no tool named 'write\ufffd_file'" in said[1], said  # (unknown: said cleaned)
    writes = [e["result"]["text"] for e in events if e["type"] == "tool_result" and e["tool"] == "write_file"]
    assert len(writes) == 2 and all("not valid Unicode" in t for t in writes), writes
    texts = [e["response"]["text"] for e in events if e["type"] == "model_response"]
    assert texts[0] == "thinking \ufffd aloud" and texts[-1] == "done \ufffd", texts
    assert "thinking \ufffd aloud" in sent[1] and "write\ufffd_file" in sent[1], sent[1]
    assert not list(run_dir.glob("a*.md"))  # the refused call wrote nothing
    assert status_of(run_dir) == "completed"
    for view in ([], ["--messages"]):  # the refused call's arguments are shown as their escape
        shown = run_cli(["show", str(run_dir), *view], cwd=tmp_path)
        no_traceback(shown)
        assert shown.returncode == 0 and "a\\ud800.md" in shown.stdout, shown.stdout + shown.stderr


@pytest.mark.parametrize(
    ("api", "stream"), [("openai", False), ("anthropic", True)], ids=["openai-plain", "anthropic-stream"]
)
def test_an_answer_that_never_completes_times_out_as_a_whole(tmp_path: Path, api: str, stream: bool) -> None:
    """A stream kept alive with pings (a body sent a byte at a time): every read is quick,
    so only a deadline on the whole answer (timeout_s) ends the call; then it is retried."""
    with WireServer(InTurn([Reply(text="slow", fault="drip")] * 2)) as server:
        started = time.monotonic()
        code, out, run_dir = run(tmp_path, api, server, stream, retries=1, timeout_s=2)
        took = time.monotonic() - started
        asked = len(server.requests)
    assert code == 1, out
    assert asked == 2 and took < 60
    line = next(line for line in out.splitlines() if line.startswith("error:"))
    assert (
        f"model 'm' ({api}:test-model) failed after 1 retry: timeout: no complete answer within timeout_s=2"
        in line
    )
    assert status_of(run_dir) == "failed"
    events = check_log(run_dir)
    assert [e["reason"] for e in events if e["type"] == "model_retry"] == [
        "timeout: no complete answer within timeout_s=2"
    ]


@pytest.mark.parametrize(("api", "stop"), [("openai", "length"), ("anthropic", "max_tokens")])
def test_an_empty_answer_cut_by_max_tokens_says_to_raise_it(tmp_path: Path, api: str, stop: str) -> None:
    with WireServer(InTurn([Reply(text="", stop_reason=stop)] * 2)) as server:
        code, out, run_dir = run(tmp_path, api, server, False, retries=1)
    assert code == 1, out
    assert f"the answer is empty: no text and no tool call (stop reason {stop})" in out
    assert "hint: the model used up max_tokens=" in out and "raise the model's max_tokens" in out
    assert status_of(run_dir) == "failed"
    check_log(run_dir)


# ---------------------------------------------------------------- answers of any shape


def good_bodies(api: str, stream: bool) -> list[Any]:
    """A good answer with a text and a tool call, as JSON values: the whole body, or each
    streamed event's data (Anthropic: (event name, data))."""
    request = WireRequest(api, "", {}, {"model": "m"}, stream, "", [], [], 0, [], "", [])
    reply = Reply(text="hello", tool_calls=[ToolCallSpec("look", {"q": "x"})], thinking="hm")
    if api == "openai" and stream:
        from support.wire_server import openai_stream

        return [json.loads(d) for d in openai_stream(request, reply) if d != "[DONE]"]
    if api == "anthropic" and stream:
        from support.wire_server import anthropic_stream

        return [list(pair) for pair in anthropic_stream(request, reply)]
    from support.wire_server import anthropic_message, openai_completion

    return [(openai_completion if api == "openai" else anthropic_message)(request, reply)]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            yield from paths(inner, (*prefix, i))


def mutate(value: Any, path: tuple[Any, ...], op: str, new: Any) -> Any:
    """`value` with the node at `path` replaced by `new`, or deleted."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy: Any = dict(value) if isinstance(value, dict) else list(value)
    if not rest and op == "delete":
        del copy[head]
    else:
        copy[head] = mutate(copy[head], rest, op, new)
    return copy


@st.composite
def broken_answers(draw: st.DrawFn) -> tuple[str, bool, bytes]:
    api = draw(st.sampled_from(["openai", "anthropic"]))
    stream = draw(st.booleans())
    bodies: Any = good_bodies(api, stream)
    for _ in range(draw(st.integers(1, 4))):
        inner = list(paths(bodies))[1:]
        if not inner:
            break
        path = draw(st.sampled_from(inner))
        bodies = mutate(bodies, path, draw(st.sampled_from(["delete", "replace"])), draw(json_values))
    if not stream:
        return api, stream, json.dumps(bodies[0] if bodies else None).encode()
    if api == "openai":
        events = [f"data: {json.dumps(b)}\n\n" for b in bodies] + ["data: [DONE]\n\n"]
    else:
        events = [
            f"event: {b[0] if isinstance(b, list) and b and isinstance(b[0], str) else 'x'}\n"
            f"data: {json.dumps(b[1] if isinstance(b, list) and len(b) > 1 else b)}\n\n"
            for b in bodies
        ]
    return api, stream, "".join(events).replace("\r", "").encode()


@pytest.fixture(scope="module")
def raw_server() -> Iterator[tuple[WireServer, list[Reply]]]:
    answer: list[Reply] = [Reply(text="unset")]
    with WireServer(lambda request: answer[0]) as server:
        yield server, answer


def well_typed(response: ModelResponse) -> None:
    assert isinstance(response.text, str) and isinstance(response.model, str)
    assert response.stop_reason is None or isinstance(response.stop_reason, str)
    assert response.text.strip() or response.tool_calls
    for call in response.tool_calls:
        assert isinstance(call, ToolCall) and isinstance(call.name, str) and isinstance(call.id, str)
        assert isinstance(call.arguments, dict)


# token counts of infinity (Python's json reads `Infinity`): int() raised OverflowError out of the
# provider, which the property had found only now and then
INFINITE_USAGE = {
    "anthropic": json.dumps(
        {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "stop_reason": "end_turn",
            "content": [{"type": "text", "text": "hi"}],
            "usage": {"input_tokens": 1, "output_tokens": math.inf},
        }
    ).encode(),
    "openai": json.dumps(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": math.inf, "completion_tokens": 1, "total_tokens": 2},
        }
    ).encode(),
}


@settings(
    max_examples=int(os.environ.get("FLOWRUN_PROPERTY_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(answer=broken_answers())
@example(answer=("anthropic", False, INFINITE_USAGE["anthropic"]))
@example(answer=("openai", False, INFINITE_USAGE["openai"]))
def test_an_answer_of_any_shape_is_an_answer_or_a_provider_error(
    raw_server: tuple[WireServer, list[Reply]],
    answer: tuple[str, bool, bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, slot = raw_server
    api, stream, body = answer
    kind = "text/event-stream" if stream else "application/json"
    slot[0] = Reply(raw=body, headers={"Content-Type": kind})
    monkeypatch.setenv("OPENAI_API_KEY", "test-key-openai-123")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-anthropic-123")
    base = server.base_url(api)
    config = provider_config(
        provider=api, base_url=base, stream=stream, max_retries=0, api_key_env=f"{api.upper()}_API_KEY"
    )
    provider = (OpenAIProvider if api == "openai" else AnthropicProvider)(config)
    look = ToolSpec("look", "Look.", {"type": "object", "properties": {"q": {"type": "string"}}})
    request = ModelRequest("a", "You look.", [Message(role="user", content="hi")], [look])
    try:
        response = asyncio.run(provider.complete(request))
    except ProviderError as e:
        assert "\n" not in str(e).split(" (hint")[0]
        return
    well_typed(response)
