"""Issue 11, item 2, through the CLI and the real SDKs: a 200 that is not a usable answer (a
stream cut before its final event, no choices, a body that is not JSON, an empty answer) is a
retryable provider error in both wire formats, streamed and not: retried, then the run fails
`failed` (exit 1) with one line naming the model and the fault; one good answer after a bad
one and the run completes."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli
from hardening_helpers import check_log, no_traceback, status_of
from wire_server import FAULTS, FaultFirst, Reply, Script, ToolCallSpec, WireServer

CASES = [*FAULTS, "empty"]
EXPECTED = {
    ("truncated", False): "the response body is not valid JSON",
    ("truncated", True): "the stream ended after",
    ("no_choices", False): {"openai": "the answer has no choices", "anthropic": "the answer is empty"},
    ("no_choices", True): {"openai": "without its final chunk", "anthropic": "the answer is empty"},
    ("not_json", False): "the response body is not JSON: '<html>",
    ("not_json", True): "the stream carried no events",
    ("empty", False): "the answer is empty: no text and no tool call",
    ("empty", True): "the answer is empty: no text and no tool call",
}


def project(tmp: Path, api: str, base_url: str) -> Path:
    key = "OPENAI_API_KEY" if api == "openai" else "ANTHROPIC_API_KEY"
    (tmp / "agents.d").mkdir(parents=True, exist_ok=True)
    (tmp / "wf.yaml").write_text(
        "version: 1\nkind: workflow\nname: answers\n"
        f"models:\n  m: {{provider: {api}, model: test-model, api_key_env: {key}, base_url: '{base_url}', "
        "max_retries: 2}\n"
        "default_model: m\nentry: w\noutput: report.md\n"
    )
    (tmp / "agents.d" / "w.yaml").write_text(
        "version: 1\nkind: agent\nname: w\nprompt: You are the answer checker.\ntools: [write_file]\n"
    )
    return tmp


def run(tmp: Path, api: str, server: WireServer, stream: bool) -> tuple[int, str, Path]:
    base = server.openai_base_url if api == "openai" else server.anthropic_base_url
    project(tmp, api, base)
    env = {"OPENAI_API_KEY": "test-key-openai-123", "ANTHROPIC_API_KEY": "test-key-anthropic-123"}
    env["FLOWRUN_RETRY_BASE_S"] = "0.01"
    flag = "--stream" if stream else "--no-stream"
    proc = run_cli(["wf.yaml", "--run-id", "r", flag, "-q"], cwd=tmp, env=env)
    no_traceback(proc)
    return proc.returncode, proc.stdout + proc.stderr, tmp / "runs" / "r"


def broken(fault: str) -> Script:
    if fault == "empty":
        return Script({"answer checker": [Reply(text="")] * 10})
    return Script({"answer checker": [Reply(text="lost", fault=fault)] * 10})  # type: ignore[arg-type]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("api", ["openai", "anthropic"])
@pytest.mark.parametrize("fault", CASES)
def test_an_unusable_answer_is_retried_then_fails_naming_model_and_fault(
    tmp_path: Path, fault: str, api: str, stream: bool
) -> None:
    with WireServer(broken(fault)) as server:
        code, out, run_dir = run(tmp_path, api, server, stream)
        asked = len(server.requests)
    assert code == 1, out
    expected = EXPECTED[(fault, stream)]
    expected = expected[api] if isinstance(expected, dict) else expected
    line = next(line for line in out.splitlines() if line.startswith("error:"))
    assert f"model 'm' ({api}:test-model) failed after 2 retries: unusable answer: " in line, line
    assert expected in line, line
    assert "report.md was not written" in out
    assert asked == 3  # the first try and two retries
    assert status_of(run_dir) == "failed"
    events = check_log(run_dir)
    retries = [e for e in events if e["type"] == "model_retry"]
    assert [e["retry"] for e in retries] == [1, 2] and all("unusable answer" in e["reason"] for e in retries)
    assert any(e["type"] == "error" and e["where"] == "model" and expected in e["message"] for e in events)
    assert not any(e["type"] == "model_response" for e in events)  # nothing unusable reached the agent


@pytest.mark.parametrize(
    ("fault", "api", "stream"),
    [
        ("truncated", "openai", True),
        ("no_choices", "anthropic", False),
        ("not_json", "anthropic", True),
        ("truncated", "anthropic", False),
        ("not_json", "openai", False),
    ],
)
def test_one_good_answer_after_a_bad_one_completes_the_run(
    tmp_path: Path, fault: str, api: str, stream: bool
) -> None:
    good = Script(
        {
            "answer checker": [
                Reply(tool_calls=[ToolCallSpec("write_file", {"path": "report.md", "content": "ok\n"})]),
                Reply(text="written"),
            ]
        }
    )
    with WireServer(FaultFirst(1, fault, then=good)) as server:  # type: ignore[arg-type]
        code, out, run_dir = run(tmp_path, api, server, stream)
        asked = len(server.requests)
    assert code == 0, out
    assert asked == 3
    assert (run_dir / "report.md").read_text() == "ok\n"
    events = check_log(run_dir)
    assert [e["retry"] for e in events if e["type"] == "model_retry"] == [1]
