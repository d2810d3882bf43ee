"""The progress subscriber (plain lines and the rich Live panel) and the run log (loguru), fed
with the real events of a `flowrun --dry-run` subprocess."""

from __future__ import annotations

import json
import threading
from io import StringIO
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import REPO, run_cli
from loguru import logger
from rich.console import Console

from flowrun.providers.base import ModelConfig
from flowrun.runtime.events import Redactor
from flowrun.runtime.progress import Progress, attach_progress, detach_progress
from flowrun.runtime.run_log import LOG_NAME, describe_event, log_event, setup_run_logging
from flowrun.runtime.usage import UsageBook
from flowrun.types import Usage

PRICED = ModelConfig(name="test", provider="test", model="test", price_input=3.0, price_output=15.0)
SECRET = "sk-very-secret-0123"


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    runs_dir = tmp_path_factory.mktemp("progress")
    proc = run_cli(
        ["examples/research.yaml", "--question", "what is x", "--dry-run", "--runs-dir", str(runs_dir)],
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir,) = runs_dir.iterdir()
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def fake_run() -> SimpleNamespace:
    redactor = Redactor()
    redactor.secrets.add(SECRET)
    return SimpleNamespace(subscribers=[], usage=UsageBook(), redactor=redactor, events=None)


def feed(run: SimpleNamespace, events: list[dict[str, Any]]) -> None:
    """What Run does: account usage, then emit to every subscriber."""
    for event in events:
        if event["type"] == "model_response":
            run.usage.add(event["agent"], PRICED, Usage(**event["response"]["usage"]))
        for subscriber in run.subscribers:
            subscriber(event)


def plain_console() -> Console:
    return Console(file=StringIO(), force_terminal=False, width=100)


def live_console() -> Console:
    return Console(file=StringIO(), force_terminal=True, color_system=None, width=110)


def output(console: Console) -> str:
    return console.file.getvalue()  # type: ignore[attr-defined]


def rendered(progress: Progress) -> str:
    console = plain_console()
    console.print(progress.render())
    return output(console)


def count(events: list[dict[str, Any]], kind: str) -> int:
    return sum(e["type"] == kind for e in events)


# ------------------------------------------------------------------ plain lines


def test_plain_lines_at_normal_verbosity(events: list[dict[str, Any]]) -> None:
    run, console = fake_run(), plain_console()
    attach_progress(run, 0, console=console)
    (progress,) = run.subscribers
    assert isinstance(progress, Progress) and not progress.use_live
    feed(run, events)
    lines = output(console).splitlines()
    assert lines[0].startswith("▶ orchestrator started (test): Research this question")
    assert "■ searcher completed after 7 step(s)" in lines
    assert lines[-1] == "■ orchestrator completed after 10 step(s)"
    assert sum("→" in line for line in lines) == count(events, "tool_call")
    assert "  orchestrator → grep({'pattern': 'dry'})" in lines
    # errors show at normal verbosity (the dry run's edit_file call lacks its edit arguments)
    assert any(line.startswith("  orchestrator ← edit_file: error") for line in lines)
    # successes and model steps only when verbose
    assert not any("← read_file" in line or "model step" in line for line in lines)
    assert progress.live is None and progress.closed  # run_end closes it


def test_plain_lines_when_verbose(events: list[dict[str, Any]]) -> None:
    run, console = fake_run(), plain_console()
    attach_progress(run, 1, console=console)
    feed(run, events)
    lines = output(console).splitlines()
    assert sum("model step" in line for line in lines) == count(events, "model_response")
    assert "  orchestrator model step 1: 554 in / 20 out" in "\n".join(lines)
    assert sum("←" in line for line in lines) == count(events, "tool_result")


def test_quiet_attaches_nothing(events: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> None:
    run = fake_run()
    attach_progress(run, -1)
    assert run.subscribers == []
    feed(run, events)
    assert capsys.readouterr().err == ""


def test_default_console_is_plain_stderr_when_not_a_tty(
    events: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    run = fake_run()
    attach_progress(run, 0)
    assert not run.subscribers[0].use_live
    feed(run, events[:3])
    err = capsys.readouterr().err
    assert err.startswith("▶ orchestrator started")


def test_errors_and_retries_are_shown(capsys: pytest.CaptureFixture[str]) -> None:
    run, console = fake_run(), plain_console()
    attach_progress(run, 0, console=console)
    feed(
        run,
        [
            {
                "seq": 1,
                "t": 1.0,
                "type": "model_retry",
                "model": "m",
                "retry": 2,
                "delay_s": 1.5,
                "reason": "429",
            },
            {"seq": 2, "t": 2.0, "type": "error", "where": "run", "message": f"bad key {SECRET}"},
            {"seq": 3, "t": 3.0, "type": "budget_exceeded", "limit": "max_total_steps", "message": "x"},
            {"seq": 4, "t": 4.0, "type": "tool_call", "agent": "a", "agent_id": "a", "call_id": "c"}
            | {"tool": "execute_shell", "arguments": {"command": "x" * 40 + SECRET}},
        ],
    )
    lines = output(console).splitlines()
    # redacted before it is cut, so no part of the secret is left at the cut
    assert lines[3].startswith("  a → execute_shell({'command': 'xxx") and "sk-ver" not in lines[3]
    assert lines[0] == "! model m retry 2 in 1.5 s: 429"
    assert lines[1].startswith("! error:") and "[REDACTED]" in lines[1] and SECRET not in lines[1]
    assert lines[2].startswith("! budget_exceeded:") and "max_total_steps" in lines[2]


# ------------------------------------------------------------------ the Live panel


def upto_visit_url(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    cut = next(i for i, e in enumerate(events) if e["type"] == "tool_call" and e["tool"] == "visit_url")
    return events[: cut + 1]


def test_live_panel_shows_agents_tools_tokens_and_cost(events: list[dict[str, Any]]) -> None:
    run, console = fake_run(), live_console()
    attach_progress(run, 0, console=console)
    progress: Progress = run.subscribers[0]
    assert progress.use_live
    head = upto_visit_url(events)
    try:
        feed(run, head)
        assert progress.live is not None and progress.live.is_started
        panel = rendered(progress)
        rows = panel.splitlines()
        orchestrator = next(r for r in rows if r.startswith("orchestrator"))
        searcher = next(r for r in rows if r.startswith("  searcher"))  # nested one level
        assert "running searcher(" in orchestrator
        assert "running visit_url({'url': 'file://" in searcher
        assert searcher.split()[1] == "3"  # the searcher's third model step
        tokens = sum(sum(e["response"]["usage"].values()) for e in head if e["type"] == "model_response")
        searcher_tokens = sum(
            sum(e["response"]["usage"].values())
            for e in head
            if e["type"] == "model_response" and e["agent"] == "searcher"
        )
        assert searcher.split()[-1] == f"{searcher_tokens:,}"
        assert f"{tokens:,} tokens" in panel and f"${run.usage.total_cost:.4f}" in panel
        assert "2 working, 0 done" in panel
    finally:
        feed(run, events[len(head) :])
    # run_end stopped the display; milestones were printed above it, tool calls were not
    assert progress.live is None and progress.closed
    text = output(console)
    assert "▶ orchestrator started" in text and "■ searcher completed after 7 step(s)" in text
    assert "edit_file: error" in text  # errors print above the panel
    assert "→ grep(" not in text
    assert progress.finished == count(events, "agent_end") and progress.agents == {}


def test_live_panel_without_prices_says_so(events: list[dict[str, Any]]) -> None:
    run = fake_run()
    progress = Progress(run, 0, live_console(), live=False)
    assert [e["type"] for e in events[:3]] == ["run_start", "agent_start", "model_request"]
    for event in events[:3]:
        progress(event)  # no usage accounted: nothing is priced
    panel = rendered(progress)
    assert "waiting for test" in panel and "cost n/a" in panel and "1 working, 0 done" in panel
    progress(events[-1])


def test_live_redacts_secrets(events: list[dict[str, Any]]) -> None:
    run, console = fake_run(), live_console()
    attach_progress(run, 1, console=console)
    start = next(e for e in events if e["type"] == "agent_start")
    call = {"seq": 9, "t": 9.0, "type": "tool_call", "agent": start["agent"], "agent_id": start["agent_id"]}
    call.update(call_id="c1", tool="execute_shell", arguments={"command": f"curl -H {SECRET}"})
    feed(run, [start, call])
    panel = rendered(run.subscribers[0])
    detach_progress(run)
    assert "[REDACTED]" in panel and SECRET not in panel
    text = output(console)
    assert "execute_shell" in text and SECRET not in text


def test_detach_stops_the_display_and_unsubscribes(events: list[dict[str, Any]]) -> None:
    run, console = fake_run(), live_console()
    attach_progress(run, 0, console=console)
    progress: Progress = run.subscribers[0]
    run.events = SimpleNamespace(subscribers=list(run.subscribers))  # what execute.prepare does
    feed(run, events[:5])
    live = progress.live
    assert live is not None and live.is_started
    detach_progress(run)
    assert not live.is_started and progress.closed
    assert run.subscribers == [] and run.events.subscribers == []
    progress(events[5])  # a late event from another thread is ignored
    assert progress.live is None
    detach_progress(run)  # twice is fine


def test_subscriber_is_thread_safe() -> None:
    """Worker threads emit while the panel renders: no lost updates, no exceptions."""
    run = fake_run()
    attach_progress(run, 0, console=live_console())
    progress: Progress = run.subscribers[0]
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(30):
                agent_id = f"w{n}/a{i}"
                base = {"agent": f"a{i}", "agent_id": agent_id, "t": 0.0, "seq": 0}
                progress({**base, "type": "agent_start", "parent": None, "model": "m", "task": "t"})
                progress({**base, "type": "tool_call", "call_id": "c", "tool": "nap", "arguments": {}})
                progress(
                    {
                        **base,
                        "type": "tool_result",
                        "call_id": "c",
                        "tool": "nap",
                        "result": {"status": "success"},
                    }
                )
                progress({**base, "type": "agent_end", "status": "completed", "steps": 1})
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        rendered(progress)
    for thread in threads:
        thread.join()
    detach_progress(run)
    assert errors == []
    assert progress.finished == 120 and progress.agents == {}


# ------------------------------------------------------------------ run log


def test_run_log_levels_redaction_and_removal(tmp_path: Path) -> None:
    remove = setup_run_logging(tmp_path / "run", 0, redact=Redactor().text)
    remove()
    redactor = Redactor()
    redactor.secrets.add(SECRET)
    remove = setup_run_logging(tmp_path / "run", 0, redact=redactor.text)
    logger.info("provider configured with {}", SECRET)
    logger.debug("debug detail")
    try:
        raise ValueError(f"bad token {SECRET}")
    except ValueError:
        logger.exception("call failed")
    remove()
    logger.info("after removal")
    remove()  # idempotent
    text = (tmp_path / "run" / LOG_NAME).read_text()
    assert "provider configured with [REDACTED]" in text
    assert "| INFO    | " in text
    assert "ValueError: bad token [REDACTED]" in text  # the traceback is redacted too
    assert SECRET not in text
    assert "debug detail" not in text and "after removal" not in text


def test_run_log_traces_events_when_verbose(tmp_path: Path, events: list[dict[str, Any]]) -> None:
    remove = setup_run_logging(tmp_path, 1)
    try:
        for event in events:
            log_event(event)
    finally:
        remove()
    lines = (tmp_path / LOG_NAME).read_text().splitlines()
    assert len(lines) == len(events)
    assert all("| DEBUG   |" in line for line in lines)
    assert lines[0].endswith("#1 run_start")
    assert any("tool_result orchestrator/searcher@" in line and "visit_url[" in line for line in lines)
    assert any(line.endswith("error INVALID_PARAM") for line in lines)
    assert lines[-1].endswith(f"#{len(events)} run_end completed")


def test_describe_event() -> None:
    response = {"usage": {"input_tokens": 10, "output_tokens": 2}}
    event = {"seq": 4, "type": "model_response", "agent_id": "a/b@c", "step": 2, "response": response}
    assert (
        describe_event({**event, "latency_ms": 5.5}) == "#4 model_response a/b@c step 2 10 in / 2 out, 5.5 ms"
    )
    message = {"seq": 5, "type": "error", "where": "run", "message": "line one\nline two"}
    assert describe_event(message) == "#5 error line one line two"
