"""`flowrun examples/research.yaml --question …` as a subprocess, with the real anthropic and
openai SDKs talking over HTTP to the scripted wire server, streamed and not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli
from support.env import KEYS, WIRES, model_env
from support.paths import REPO
from support.wire_server import Reply, Script, ToolCallSpec, WireServer

MATCH = {
    "orchestrator": "You are the orchestrator",
    "searcher": "You are a search specialist",
    "writer": "You are the writer",
}
NOTES = "# Sorting notes\n" + "Python's sort is stable (Timsort). " * 40


def research_script() -> Script:
    return Script(
        {
            "orchestrator": [
                Reply(
                    tool_calls=[
                        ToolCallSpec(
                            "searcher", {"task": "Find how sorting works", "output_dir": "workspace/search"}
                        ),
                        ToolCallSpec("list_directory", {"path": "."}),
                    ]
                ),
                Reply(
                    tool_calls=[
                        ToolCallSpec(
                            "writer",
                            {"task": "Write the report", "context_files": ["workspace/search/notes.md"]},
                        )
                    ]
                ),
                Reply(
                    tool_calls=[
                        ToolCallSpec("read_file", {"path": "report.md", "start_line": 1, "end_line": 5})
                    ]
                ),
                Reply(text="The report is complete."),
            ],
            "searcher": [
                Reply(tool_calls=[ToolCallSpec("web_search", {"query": "sorting how to key functions"})]),
                Reply(
                    tool_calls=[
                        ToolCallSpec("write_file", {"path": "workspace/search/notes.md", "content": NOTES})
                    ]
                ),
                Reply(text="Found the Sorting HOWTO; notes in workspace/search/notes.md."),
            ],
            "writer": [
                Reply(tool_calls=[ToolCallSpec("read_file", {"path": "workspace/search/notes.md"})]),
                Reply(
                    tool_calls=[
                        ToolCallSpec(
                            "write_file", {"path": "report.md", "content": "# Report\n\nSorting is stable.\n"}
                        )
                    ]
                ),
                Reply(text="Report written to report.md."),
            ],
        },
        MATCH,
    )


def run_research(
    tmp_path: Path, server: WireServer, provider: str, stream: bool, http: str = "aiohttp"
) -> tuple[int, str, Path]:
    env = {"FLOWRUN_RETRY_BASE_S": "0.01", "FLOWRUN_HTTP": http}
    args = [str(REPO / "examples" / "research.yaml"), "--question", "How does Python sort?"]
    args += ["--runs-dir", str(tmp_path / "runs"), "--run-id", "r1", "--stream" if stream else "--no-stream"]
    env |= model_env(server, provider)
    if provider == "openai":
        args += ["--model", "openai:gpt-test"]
    proc = run_cli(args, cwd=tmp_path, env=env)
    return proc.returncode, proc.stdout + proc.stderr, tmp_path / "runs" / "r1"


@pytest.mark.parametrize("http", ["aiohttp", "httpx"])  # httpx: an install without the extra
@pytest.mark.parametrize("provider", WIRES)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
def test_research_end_to_end(tmp_path: Path, provider: str, stream: bool, http: str) -> None:
    with WireServer(research_script()) as server:
        code, out, run_dir = run_research(tmp_path, server, provider, stream, http)
        requests = server.requests
    assert code == 0, out
    assert "Traceback" not in out
    # the run folder
    assert (run_dir / "question.txt").read_text() == "How does Python sort?\n"
    assert (run_dir / "report.md").read_text().startswith("# Report")
    assert (run_dir / "workspace" / "search" / "notes.md").read_text() == NOTES
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    usage = json.loads((run_dir / "usage.json").read_text())
    assert {line["agent"] for line in usage["by_agent_model"]} == {"orchestrator", "searcher", "writer"}
    assert "output: " in out and "report.md" in out
    # what the server received
    assert {r.api for r in requests} == {provider}
    assert all(r.stream is stream for r in requests)
    first = requests[0]
    assert "You are the orchestrator" in first.system and "report.md" in first.system
    assert {"searcher", "writer", "analyzer", "read_file"} <= set(first.tool_names)
    searcher_tool = next(t for t in first.tools if (t.get("name") or t["function"]["name"]) == "searcher")
    schema = searcher_tool.get("input_schema") or searcher_tool["function"]["parameters"]
    assert schema["required"] == ["task"]
    # tool results come back under the ids of the calls they answer
    for request in requests:
        asked = _call_ids(request.messages)
        for call_id, _, _ in request.tool_results:
            assert call_id in asked
    # the orchestrator got the searcher's summary and file list, not the notes themselves
    second = next(r for r in requests if "You are the orchestrator" in r.system and r.assistant_turns == 1)
    summary = next(text for _, text, _ in second.tool_results if "Output files" in text)
    assert "workspace/search/notes.md" in summary and "Timsort" not in summary
    if provider == "anthropic":
        assert any(b.get("cache_control") for b in first.body["system"])
        assert first.headers.get("x-api-key") == KEYS["anthropic"]


def _call_ids(messages: list[dict]) -> set[str]:
    ids = set()
    for message in messages:
        for call in message.get("tool_calls") or []:
            ids.add(call["id"])
        content = message.get("content")
        if isinstance(content, list):
            ids.update(b["id"] for b in content if isinstance(b, dict) and b.get("type") == "tool_use")
    return ids


def test_missing_key_names_the_env_var(tmp_path: Path) -> None:
    proc = run_cli([str(REPO / "examples" / "research.yaml"), "--question", "q", "--runs-dir", str(tmp_path)])
    assert proc.returncode != 0
    assert "ANTHROPIC_API_KEY" in proc.stderr and "--dry-run" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not any(tmp_path.iterdir())  # nothing started, nothing half-written


def test_server_error_every_time_keeps_run_folder(tmp_path: Path) -> None:
    from support.wire_server import always

    with WireServer(always(500)) as server:
        code, out, run_dir = run_research(tmp_path, server, "anthropic", stream=False)
        attempts = len(server.requests)
    assert code == 1
    assert "Traceback" not in out
    assert "orchestrator" in out and "500" in out
    assert attempts == 5  # 1 + max_retries (4)
    assert json.loads((run_dir / "run.json").read_text())["status"] == "failed"
    assert (run_dir / "question.txt").exists()
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert events[-1]["type"] == "run_end" and events[-1]["status"] == "failed"


def test_rate_limited_then_success(tmp_path: Path) -> None:
    from support.wire_server import FailFirst

    with WireServer(FailFirst(1, 429, {"retry-after": "0"}, then=research_script())) as server:
        code, out, run_dir = run_research(tmp_path, server, "openai", stream=True)
    assert code == 0, out
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert any(e["type"] == "model_retry" for e in events)


@pytest.mark.fresh_too
def test_fake_key_never_lands_in_the_run_folder(tmp_path: Path) -> None:
    with WireServer(research_script()) as server:
        code, out, run_dir = run_research(tmp_path, server, "anthropic", stream=True)
    assert code == 0, out
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert KEYS["anthropic"] not in path.read_text(errors="replace"), path
    assert KEYS["anthropic"] not in out
