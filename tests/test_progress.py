"""The progress subscriber (plain lines and the rich Live panel) and the run log, fed with the
real events of a `flowrun --dry-run` subprocess (typed, as the runtime emits them)."""

from __future__ import annotations

import dataclasses
import json
import threading
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from support.cli import run_cli
from support.paths import REPO
from support.runs import folders

from flowrun.cli.views.progress import Progress, event_line, make_progress
from flowrun.events import (
    EVENT_TYPES,
    ErrorEvent,
    Event,
    ModelResponseEvent,
    ToolCallEvent,
    ToolResultEvent,
    parse_event,
)
from flowrun.manifest.model_config import model_config
from flowrun.redaction import Redactor
from flowrun.runtime.durable.run_log import LOG_NAME, RunLog, describe_event
from flowrun.runtime.models.usage import cost_of
from flowrun.types import ModelResponse, ToolResult

PRICED = model_config("test", provider="test", model="test", price={"input": 3.0, "output": 15.0})
SECRET = "sk-very-secret-0123"


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> list[Event]:
    """The dry run's events, priced as if its model had PRICED's prices."""
    runs_dir = tmp_path_factory.mktemp("progress")
    args = ["examples/research.yaml", "--question", "what is x", "--dry-run", "--runs-dir", str(runs_dir)]
    # the --set makes the dry run's edit_file call fail, so the run has a tool error to show
    proc = run_cli([*args, "--set", "tools.edit_file.dry_run.start_line=99"], cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run_dir,) = folders(runs_dir)
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    parsed = [parse_event(json.loads(line)) for line in lines]
    for event in parsed:
        if isinstance(event, ModelResponseEvent):
            event.cost_usd = cost_of(event.response.usage, PRICED)
    return parsed


def redact(text: str) -> str:
    redactor = Redactor()
    redactor.secrets.add(SECRET)
    return redactor.text(text)


def progress_for(verbosity: int, console: Console | None = None) -> Progress:
    progress = make_progress(verbosity, redact, console)
    assert progress is not None
    return progress


def feed(progress: Progress, events: list[Event] | list[dict[str, Any]]) -> None:
    """What the event log does: hand every typed event to the subscriber."""
    for event in events:
        progress(parse_event(event) if isinstance(event, dict) else event)


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


def count(events: list[Event], kind: str) -> int:
    return sum(e.type == kind for e in events)


# ------------------------------------------------------------------ plain lines


def test_plain_lines_at_normal_verbosity(events: list[Event]) -> None:
    console = plain_console()
    progress = progress_for(0, console)
    assert not progress.use_live
    feed(progress, events)
    lines = output(console).splitlines()
    assert lines[0].startswith("▶ orchestrator started (test): Research this question")
    assert "■ searcher completed after 7 step(s)" in lines
    assert lines[-1] == "■ orchestrator completed after 10 step(s)"
    assert sum("→" in line for line in lines) == count(events, "tool_call")
    assert "  orchestrator → grep({'pattern': 'dry'})" in lines
    # errors show at normal verbosity (the dry run's edit_file call names a line the file lacks)
    assert any(line.startswith("  orchestrator ← edit_file: error") for line in lines)
    # successes and model steps only when verbose
    assert not any("← read_file" in line or "model step" in line for line in lines)
    assert progress.live is None and progress.closed  # run_end closes it


def test_plain_lines_when_verbose(events: list[Event]) -> None:
    console = plain_console()
    feed(progress_for(1, console), events)
    lines = output(console).splitlines()
    assert sum("model step" in line for line in lines) == count(events, "model_response")
    first = next(e for e in events if isinstance(e, ModelResponseEvent))
    shown = f"  orchestrator model step 1: {first.response.usage.input_tokens} in / 20 out"
    assert shown in "\n".join(lines)
    assert sum("←" in line for line in lines) == count(events, "tool_result")


def test_verbose_shows_what_the_agents_say_and_whole_arguments(events: list[Event]) -> None:
    """-v: each answer's text under its model step, each call's arguments whole (as JSON), in
    the plain lines and above the live panel (wrapped there, not cut)."""
    answers = [e for e in events if isinstance(e, ModelResponseEvent) and e.response.text]
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    longest = max(calls, key=lambda e: len(json.dumps(e.arguments)))
    whole = json.dumps(longest.arguments, ensure_ascii=False)
    assert len(whole) > 100  # more than the 60 characters of the normal line
    for console in (
        plain_console(),
        Console(file=StringIO(), force_terminal=True, color_system=None, width=80),
    ):
        feed(progress_for(1, console), events)
        text = output(console)
        for answer in answers:
            said = f"  {answer.agent}: {answer.response.text.splitlines()[0]}"
            assert said in text or said[:80] in text
        if not console.is_terminal:
            assert f"  {longest.agent} → {longest.tool} {whole}" in text.splitlines()
        else:  # wrapped at 80 columns: every character is there
            assert whole.replace(" ", "") in text.replace("\n", "").replace(" ", "")
    quiet = plain_console()
    feed(progress_for(0, quiet), events)
    assert not any(f"  {a.agent}: " in output(quiet) for a in answers)


def test_verbose_answers_are_redacted_and_cut() -> None:
    console = plain_console()
    response = {"text": f"key {SECRET}\n" + "y" * 3000, "usage": {"input_tokens": 1, "output_tokens": 1}}
    event = {"seq": 1, "t": 1.0, "type": "model_response", "agent": "a", "agent_id": "a", "step": 1}
    feed(progress_for(1, console), [event | {"response": response}])
    text = output(console)
    assert "  a: key [REDACTED]\n      yyy" in text and SECRET not in text
    assert text.rstrip().endswith("… (cut: `flowrun show RUN --messages` shows all)")


def test_a_model_failure_is_shown_once() -> None:
    console = plain_console()
    failure = "agent 'a': model 'm' failed: HTTP 401"
    feed(
        progress_for(0, console),
        [
            {"seq": 1, "t": 1.0, "type": "error", "agent": "a", "agent_id": "a", "where": "model"}
            | {"message": failure},
            {"seq": 2, "t": 2.0, "type": "error", "where": "run", "message": failure},
            {"seq": 3, "t": 3.0, "type": "error", "where": "run", "message": "another failure"},
        ],
    )
    lines = output(console).splitlines()
    # the run's own errors are the command's last line (`error: ...`), not progress lines
    assert lines == ["! error in the model of a: agent 'a': model 'm' failed: HTTP 401"]


def test_quiet_makes_no_display() -> None:
    assert make_progress(-1, redact) is None


def test_default_console_is_plain_stderr_when_not_a_tty(
    events: list[Event], capsys: pytest.CaptureFixture[str]
) -> None:
    progress = progress_for(0)
    assert not progress.use_live
    feed(progress, events[:3])
    err = capsys.readouterr().err
    assert err.startswith("▶ orchestrator started")


def test_errors_and_retries_are_shown(capsys: pytest.CaptureFixture[str]) -> None:
    console = plain_console()
    feed(
        progress_for(0, console),
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
            {"seq": 2, "t": 2.0, "type": "error", "where": "model", "message": f"bad key {SECRET}"},
            {"seq": 3, "t": 3.0, "type": "budget_exceeded", "limit": "max_total_steps", "message": "x"},
            {"seq": 4, "t": 4.0, "type": "tool_call", "agent": "a", "agent_id": "a", "call_id": "c"}
            | {"tool": "execute_shell", "arguments": {"command": "x" * 40 + SECRET}},
        ],
    )
    lines = output(console).splitlines()
    # redacted before it is cut, so no part of the secret is left at the cut
    assert lines[3].startswith("  a → execute_shell({'command': 'xxx") and "sk-ver" not in lines[3]
    assert lines[0] == "! model m failed (429): retry 2 in 1.5 s"
    assert (
        lines[1].startswith("! error in the model:") and "[REDACTED]" in lines[1] and SECRET not in lines[1]
    )
    assert lines[2] == "! the run's limit max_total_steps was reached: x"


# ------------------------------------------------------------------ the Live panel


def upto_visit_url(events: list[Event]) -> list[Event]:
    cut = next(
        i for i, e in enumerate(events) if e.type == "tool_call" and getattr(e, "tool", "") == "visit_url"
    )
    return events[: cut + 1]


def test_live_panel_shows_agents_tools_tokens_and_cost(events: list[Event]) -> None:
    console = live_console()
    progress = progress_for(0, console)
    assert progress.use_live
    head = upto_visit_url(events)
    try:
        feed(progress, head)
        assert progress.live is not None and progress.live.is_started
        panel = rendered(progress)
        rows = panel.splitlines()
        orchestrator = next(r for r in rows if r.startswith("orchestrator"))
        searcher = next(r for r in rows if r.startswith("  searcher"))  # nested one level
        assert "running searcher(" in orchestrator
        assert "running visit_url({'url': 'file://" in searcher
        assert searcher.split()[1] == "3"  # the searcher's third model step
        responses = [e for e in head if isinstance(e, ModelResponseEvent)]
        tokens = sum(e.response.usage.total for e in responses)
        searcher_tokens = sum(e.response.usage.total for e in responses if e.agent == "searcher")
        cost = sum(e.cost_usd or 0.0 for e in responses)
        assert searcher.split()[-1] == f"{searcher_tokens:,}"
        assert f"{tokens:,} tokens" in panel and f"${cost:.4f}" in panel and cost > 0
        assert "2 working, 0 done" in panel
    finally:
        feed(progress, events[len(head) :])
    # run_end stopped the display; milestones were printed above it, tool calls were not
    assert progress.live is None and progress.closed
    text = output(console)
    assert "▶ orchestrator started" in text and "■ searcher completed after 7 step(s)" in text
    assert "edit_file: error" in text  # errors print above the panel
    assert "→ grep(" not in text
    assert progress.finished == count(events, "agent_end") and progress.agents == {}


def test_live_panel_without_prices_says_so(events: list[Event]) -> None:
    progress = Progress(0, live_console(), live=False, redact=redact)
    head = [e for e in events if e.type != "agent_prompt"][:3]
    assert [e.type for e in head] == ["run_start", "agent_start", "model_request"]
    for event in head:
        progress(event)  # no usage accounted: nothing is priced
    panel = rendered(progress)
    assert "waiting for test" in panel and "cost n/a" in panel and "1 working, 0 done" in panel
    progress(events[-1])


def test_live_redacts_secrets(events: list[Event]) -> None:
    console = live_console()
    progress = progress_for(1, console)
    start = next(e for e in events if e.type == "agent_start")
    call = {"seq": 9, "t": 9.0, "type": "tool_call", "agent": "orchestrator", "agent_id": start.agent_key}
    call.update(call_id="c1", tool="execute_shell", arguments={"command": f"curl -H {SECRET}"})
    feed(progress, [start, parse_event(call)])
    panel = rendered(progress)
    progress.close()
    assert "[REDACTED]" in panel and SECRET not in panel
    text = output(console)
    assert "execute_shell" in text and SECRET not in text


def test_close_stops_the_display(events: list[Event]) -> None:
    progress = progress_for(0, live_console())
    feed(progress, events[:5])
    live = progress.live
    assert live is not None and live.is_started
    progress.close()
    assert not live.is_started and progress.closed
    progress(events[5])  # a late event from another thread is ignored
    assert progress.live is None
    progress.close()  # twice is fine


def test_subscriber_is_thread_safe() -> None:
    """Worker threads emit while the panel renders: no lost updates, no exceptions."""
    progress = progress_for(0, live_console())
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(30):
                agent_id = f"w{n}/a{i}"
                base = {"agent": f"a{i}", "agent_id": agent_id, "t": 0.0, "seq": 0}
                result = {"status": "success", "text": ""}
                feed(
                    progress,
                    [
                        {**base, "type": "agent_start", "parent": None, "model": "m", "task": "t"},
                        {**base, "type": "tool_call", "call_id": "c", "tool": "nap", "arguments": {}},
                        {**base, "type": "tool_result", "call_id": "c", "tool": "nap", "result": result},
                        {**base, "type": "agent_end", "status": "completed", "steps": 1},
                    ],
                )
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    while any(t.is_alive() for t in threads):
        rendered(progress)
    for thread in threads:
        thread.join()
    progress.close()
    assert errors == []
    assert progress.finished == 120 and progress.agents == {}


# ------------------------------------------------------------------ run log


def test_run_log_levels_redaction_and_close(tmp_path: Path, events: list[Event]) -> None:
    error = parse_event({"seq": 7, "type": "error", "where": "model", "message": f"bad key {SECRET}"})
    (tmp_path / "run").mkdir()  # (made by the run folder's lock, before the log opens)
    log = RunLog(tmp_path / "run", 0, redact)
    for event in [*events[:6], error, events[-1]]:
        log.on_event(event)
    log.close()
    log.on_event(events[0])  # after close: nothing more is written
    text = (tmp_path / "run" / LOG_NAME).read_text()
    lines = text.splitlines()
    assert lines[0].endswith("| INFO    | #1 run_start")  # milestones at INFO, per-event lines not
    assert any("| ERROR   | #7 error bad key [REDACTED]" in line for line in lines)
    assert lines[-1].endswith(f"| INFO    | #{len(events)} run_end completed")
    assert SECRET not in text and "model_request" not in text


def test_run_log_traces_events_when_verbose(tmp_path: Path, events: list[Event]) -> None:
    log = RunLog(tmp_path, 1, redact)
    try:
        for event in events:
            log.on_event(event)
    finally:
        log.close()
    lines = (tmp_path / LOG_NAME).read_text().splitlines()
    assert len(lines) == len(events)
    assert sum("| DEBUG   |" in line for line in lines) > len(events) // 2
    assert lines[0].endswith("#1 run_start")
    assert any("tool_result orchestrator/searcher@" in line and "visit_url[" in line for line in lines)
    assert any("error INVALID_PARAM - " in line for line in lines)
    assert lines[-1].endswith(f"#{len(events)} run_end completed")


def test_run_log_level_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, events: list[Event]
) -> None:
    monkeypatch.setenv("FLOWRUN_LOG", "debug")
    log = RunLog(tmp_path, 0, redact)
    request = next(e for e in events if e.type == "model_request")
    log.on_event(request)
    log.close()
    assert f"| DEBUG   | #{request.seq} model_request" in (tmp_path / LOG_NAME).read_text()


def test_run_log_warns_of_failed_tool_calls_and_logs_a_model_failure_once(
    tmp_path: Path, events: list[Event]
) -> None:
    failure = f"agent 'a': model 'm' failed: HTTP 401 {SECRET}"
    errors = [
        parse_event({"seq": 90, "type": "error", "agent_id": "a", "where": "model", "message": failure}),
        parse_event({"seq": 91, "type": "error", "where": "run", "message": failure}),
    ]
    log = RunLog(tmp_path, 0, redact)
    for event in [*events, *errors]:
        log.on_event(event)
    log.close()
    lines = (tmp_path / LOG_NAME).read_text().splitlines()
    failed = [e for e in events if isinstance(e, ToolResultEvent) and e.result.status == "error"]
    warned = [line for line in lines if "| WARNING | " in line and " tool_result " in line]
    assert len(warned) == len(failed) >= 1
    error = failed[0].result.error
    assert error is not None and warned[0].endswith(f"error INVALID_PARAM - {error.message[:200]}")
    assert sum("model 'm' failed" in line for line in lines) == 1
    assert any("| ERROR   | #90 error a agent 'a'" in line and "[REDACTED]" in line for line in lines)


def test_describe_event() -> None:
    response = {"usage": {"input_tokens": 10, "output_tokens": 2}}
    event = {"seq": 4, "type": "model_response", "agent_id": "a/b@c", "agent": "b", "step": 2}
    event |= {"response": response, "latency_ms": 5.5}
    assert describe_event(parse_event(event)) == "#4 model_response a/b@c step 2 10 in / 2 out, 5.5 ms"
    message = {"seq": 5, "type": "error", "where": "run", "message": "line one\nline two"}
    assert describe_event(parse_event(message)) == "#5 error line one line two"


def test_verbose_run_prints_answers_and_arguments(tmp_path: Path) -> None:
    """Through the command line: `-v` prints what each agent says and whole arguments."""
    args = ["examples/instructor_worker.yaml", "--task", "x", "--dry-run", "-v"]
    proc = run_cli([*args, "--runs-dir", str(tmp_path)], cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert "  worker: Dry run of worker: called 9 tool(s); wiring checked." in lines
    assert '  instructor → worker {"task": "dry run by instructor: wiring checked"}' in lines


# ------------------------------------------------------------------ every event in words


def sample(kind: str) -> object:
    """A value of a field's declared type (its annotation, as a string)."""
    base = kind.replace(" | None", "").strip()
    values: dict[str, object] = {
        "str": "word",
        "int": 2,
        "float": 1.5,
        "bool": False,
        "ModelResponse": ModelResponse(text="an answer"),
        "ToolResult": ToolResult(status="error", text="it failed"),
        "OptionsRecord": {"dry_run": True},
        "UsageRecord": {"total_tokens": 3},
    }
    if base in values:
        return values[base]
    if base.startswith(("dict", "Mapping")):
        return {"key": "value"}
    if base.startswith("list"):
        return ["one"]
    raise AssertionError(f"no sample for {kind}")


def every_event() -> list[Event]:
    made = []
    for name, cls in EVENT_TYPES.items():
        fields = {f.name: sample(str(f.type)) for f in dataclasses.fields(cls) if f.name not in ("seq", "t")}
        made.append(cls(seq=1, t=1.0, **fields))
        assert made[-1].type == name
    return made


@pytest.mark.parametrize("verbosity", [0, 1])
def test_every_event_is_said_in_words(verbosity: int) -> None:
    """No progress line is an event's raw fields: every event either says nothing at this
    verbosity or a sentence (`Event.describe`); a run-level error only once, by the command."""
    for event in every_event():
        line = event_line(event, verbosity, redact)
        fields = {k: v for k, v in event.to_dict().items() if k != "type"}
        if line is None:
            continue
        assert str(fields) not in line and f"{event.type}:" not in line, line
        if not isinstance(event, ToolCallEvent):  # (a call shows its arguments, as the model sent them)
            assert "{'" not in line, line
        if event.level():
            assert line.endswith(event.describe()[-20:]) or "…" in line, line
    assert event_line(ErrorEvent(where="run", message="x"), verbosity) is None
