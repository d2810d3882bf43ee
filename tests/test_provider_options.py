"""Per-model request options through the real SDKs against the scripted wire server:
ANTHROPIC_AUTH_TOKEN alone, `extra_body` / `extra_headers`, thinking switched off (`thinking:
false`, presets' `thinking_off`, --no-thinking) and `tool_history: text` for proxies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli
from support.paths import REPO
from support.project import write_files
from support.wire_server import Reply, Script, ToolCallSpec, WireServer
from test_e2e_research import research_script

AGENT = "version: 1\nname: solo\nprompt: You are solo.\ntools: [read_file]\n"


def solo_script() -> Script:
    return Script(
        {
            "solo": [
                Reply(tool_calls=[ToolCallSpec("read_file", {"path": "question.txt"})]),
                Reply(text="done"),
            ]
        },
        {"solo": "You are solo"},
    )


def run_solo(tmp: Path, model: str, args: tuple[str, ...] = (), env: dict[str, str] | None = None) -> Any:
    workflow = f"""\
        version: 1
        kind: workflow
        name: solo
        inputs: {{question: {{}}}}
        models:
          m: {model}
        default_model: m
        entry: solo
        workspace: {{files: {{question.txt: "{{{{ question }}}}"}}}}
        """
    write_files(tmp, {"agents.d/solo.yaml": AGENT, "wf.yaml": workflow})
    return run_cli(["wf.yaml", "--question", "q", "-q", *args], cwd=tmp, env=env)


def test_anthropic_auth_token_alone_is_enough(tmp_path: Path) -> None:
    with WireServer(research_script()) as server:
        env = {"ANTHROPIC_AUTH_TOKEN": "bearer-token-12345", "ANTHROPIC_BASE_URL": server.anthropic_base_url}
        args = [str(REPO / "examples" / "research.yaml"), "--question", "How does Python sort?", "-q"]
        proc = run_cli(args, cwd=tmp_path, env=env)
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert all(r.headers.get("authorization") == "Bearer bearer-token-12345" for r in requests)
    assert not any("x-api-key" in r.headers for r in requests)


def test_without_key_or_token_the_error_names_both(tmp_path: Path) -> None:
    proc = run_cli([str(REPO / "examples" / "research.yaml"), "--question", "q", "--runs-dir", str(tmp_path)])
    assert proc.returncode == 1
    assert "ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)" in proc.stderr


WIRES = [("openai", True), ("openai", False), ("anthropic", True), ("anthropic", False)]


@pytest.mark.parametrize("api, stream", WIRES)
def test_extra_body_and_headers_reach_the_server(tmp_path: Path, api: str, stream: bool) -> None:
    with WireServer(solo_script()) as server:
        base = server.base_url(api)
        provider = "openai-compatible" if api == "openai" else "anthropic"
        model = (
            f'{{provider: {provider}, base_url: "{base}", model: m, api_key_env: K, '
            f"stream: {str(stream).lower()}, "
            "extra_body: {chat_template_kwargs: {enable_thinking: false}, top_k: 20}, "
            "extra_headers: {X-Trace: abc}}"
        )
        proc = run_solo(tmp_path, model, env={"K": "secret-key-000111"})
        requests = server.requests
    assert proc.returncode == 0, proc.stderr
    assert len(requests) == 2
    for request in requests:
        assert bool(request.body.get("stream")) is stream
        assert request.body["chat_template_kwargs"] == {"enable_thinking": False}
        assert request.body["top_k"] == 20 and request.headers["x-trace"] == "abc"


def test_thinking_body_only_when_thinking_is_switched_off_or_on(tmp_path: Path) -> None:
    with WireServer(solo_script()) as server:
        model = f'{{preset: vllm, base_url: "{server.openai_base_url}", model: qwen3}}'
        assert run_solo(tmp_path, model, ("--run-id", "a")).returncode == 0
        assert run_solo(tmp_path, model, ("--run-id", "b", "--no-thinking")).returncode == 0
        off = model.replace("model: qwen3", "model: qwen3, thinking: false")
        assert run_solo(tmp_path, off, ("--run-id", "c")).returncode == 0
        on = model.replace("model: qwen3", "model: qwen3, thinking: true")
        assert run_solo(tmp_path, on, ("--run-id", "d")).returncode == 0
        assert run_solo(tmp_path, on, ("--run-id", "e", "--no-thinking")).returncode == 0
        requests = server.requests
    kwargs = [r.body.get("chat_template_kwargs") for r in requests]
    off_body, on_body = {"enable_thinking": False}, {"enable_thinking": True}
    assert kwargs == [None] * 2 + [off_body] * 4 + [on_body] * 2 + [off_body] * 2
    assert json.loads((tmp_path / "runs" / "b" / "run.json").read_text())["options"]["no_thinking"] is True


def test_no_thinking_turns_anthropic_thinking_off(tmp_path: Path) -> None:
    script = Script({"solo": [Reply(text="done", thinking="hmm")]}, {"solo": "You are solo"})
    with WireServer(script) as server:
        model = (
            f'{{provider: anthropic, base_url: "{server.anthropic_base_url}", model: claude, '
            "thinking: {budget_tokens: 1024}}"
        )
        env = {"ANTHROPIC_API_KEY": "test-key-4455667"}
        assert run_solo(tmp_path, model, ("--run-id", "a"), env).returncode == 0
        assert run_solo(tmp_path, model, ("--run-id", "b", "--no-thinking"), env).returncode == 0
        requests = server.requests
    assert requests[0].body["thinking"]["type"] == "enabled"
    assert "thinking" not in requests[1].body


@pytest.mark.parametrize("api, stream", WIRES)
def test_tool_history_as_text(tmp_path: Path, api: str, stream: bool) -> None:
    with WireServer(solo_script()) as server:
        base = server.base_url(api)
        provider = "openai-compatible" if api == "openai" else "anthropic"
        model = (
            f'{{provider: {provider}, base_url: "{base}", model: m, api_key_env: K, tool_history: text, '
            f"stream: {str(stream).lower()}}}"
        )
        proc = run_solo(tmp_path, model, env={"K": "secret-key-000111"})
        requests = server.requests
    assert proc.returncode == 0, proc.stderr
    second = requests[1]
    assert bool(second.body.get("stream")) is stream
    assert second.tool_names == ["read_file"]  # tools are still offered natively
    raw = json.dumps(second.messages)
    assert "tool_use" not in raw and "tool_result" not in raw and '"tool_calls"' not in raw
    assert all(m["role"] in ("user", "assistant", "system") for m in second.messages)
    assert '[called tool read_file with {\\"path\\": \\"question.txt\\"}]' in raw
    assert "[result of read_file]" in raw and second.tool_results == []
