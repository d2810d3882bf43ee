"""The web UI's pages in a real headless Chromium (Playwright driving the system's `chromium`,
Debian's package): a live run's timeline gains bars while it runs, parallel sub-agents side by
side; a sub-agent's conversation shows its tool call; Allow on a pending approval completes the
run; the runs list filters 2,000 generated runs; `flowrun show RUN --html` opens with no network
and draws the same timeline. A model answer holding <script> or <img onerror> stays text.

The runs are real: the CLI runs a workflow whose model is the scripted wire server (the real
openai SDK over HTTP on 127.0.0.1), and a Gate holds each model request until the test lets it
through, so the page is seen mid-run. The pages talk to `flowrun ui` (the runs API of `serve
http`, started as a process on a free port). Screenshots of the run page and the timeline go to
test-output/ui/ (ignored by git)."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from support.browser import (
    WAIT_MS,
    Gate,
    bars,
    expect_console,
    finished_run,
    project,
    region,
    shoot,
    start_run,
    wait_bars,
    wait_for_file,
    wait_status,
)
from support.cli import run_cli
from support.env import model_env
from support.paths import REPO
from support.project import wire_script
from support.wire_server import Reply, Responder, ToolCallSpec, WireRequest, WireServer, calls

pytestmark = pytest.mark.xdist_group("browser")


# ---------------------------------------------------------------- the live timeline


def test_a_live_runs_timeline_gains_bars_while_it_runs(tmp_path: Path, page: Any, api_server: Any) -> None:
    wf = project(tmp_path, {"orchestrator": ["worker"], "worker": ["list_directory"]})
    replies = wire_script(
        {
            "orchestrator": [
                calls(
                    ToolCallSpec("worker", {"task": "Look at a."}),
                    ToolCallSpec("worker", {"task": "Look at b."}),
                ),
                Reply("All done."),
            ],
            "worker": [calls(ToolCallSpec("list_directory", {"path": "."})), Reply("Looked.")],
        }
    )
    gate = Gate(replies)
    with WireServer(gate) as server:
        proc = start_run(wf, "live", model_env(server, "openai"))
        try:
            run_dir = tmp_path / "runs" / "live"
            gate.wait_arrived(1)  # the orchestrator's first model call is in flight, held
            wait_for_file(run_dir / "run.json", proc)
            url = api_server(tmp_path / "runs", model_env(server, "openai"))
            page.goto(f"{url}/runs/live")
            page.wait_for_selector("svg.timeline rect.bar-model.outcome-running", timeout=WAIT_MS)
            first = bars(page)
            assert first == 1

            gate.release(1)  # the orchestrator answers: two workers start at once, each held
            gate.wait_arrived(3)
            page.wait_for_function(
                "document.querySelectorAll('svg.timeline g.lane').length >= 3 && "
                "document.querySelectorAll('svg.timeline rect.bar-model.outcome-running').length >= 2",
                timeout=WAIT_MS,
            )
            assert bars(page) > first
            # the two workers' model calls run at the same time: their bars overlap on the axis
            spans = page.eval_on_selector_all(
                "svg.timeline rect.bar-model.outcome-running",
                "rs => rs.map(r => [Number(r.getAttribute('x')), Number(r.getAttribute('x')) + "
                "Number(r.getAttribute('width')), r.closest('g.lane').dataset.agentId])",
            )
            (a0, a1, lane_a), (b0, b1, lane_b) = spans[:2]
            assert lane_a != lane_b and "worker@" in lane_a and "worker@" in lane_b
            assert max(a0, b0) < min(a1, b1), spans
            shoot(page, "live-run-midway")

            gate.open()
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err
        finally:
            gate.open()
            if proc.returncode is None:
                proc.kill()
                proc.communicate()
    wait_status(page, "completed")
    # orchestrator: 2 model calls + 2 worker calls; each worker: 2 model calls + 1 tool call
    wait_bars(page, 10)
    assert page.locator("svg.timeline rect.bar-tool.outcome-success").count() == 4
    shoot(page, "live-run-completed")
    shoot(page.locator("svg.timeline"), "live-run-timeline")


# ---------------------------------------------------------------- conversations, escaping, the report


def open_conversations(page: Any) -> None:
    """The Conversations panel starts folded (the page fits a screen): open it."""
    panel = page.locator("details.panel-conversations")
    panel.wait_for(timeout=WAIT_MS)
    if panel.get_attribute("open") is None:
        panel.locator("summary").click()


def check_conversation_and_escaping(page: Any) -> None:
    open_conversations(page)
    worker = page.locator("section.segment[data-agent='worker']")
    worker.wait_for(timeout=WAIT_MS)
    call = worker.locator(".call[data-tool='write_file']")
    assert call.count() == 1
    assert "notes.md" in call.locator(".call-args").inner_text()
    assert "success" in call.locator(".call-result").text_content()
    # the sub-agent's conversation sits under the orchestrator's call that ran it
    assert (
        page.locator(
            "section.segment[data-agent='orchestrator'] .call[data-tool='worker'] section.segment"
        ).count()
        == 1
    )
    # the markup of the answers is shown as text, and nothing of it ran
    assert "<script>window.__xss = 1</script>" in worker.text_content()
    assert page.evaluate("window.__xss") is None
    assert page.locator("main img, main script").count() == 0


def test_the_conversation_of_a_sub_agent_shows_its_tool_call(
    tmp_path: Path, page: Any, api_server: Any
) -> None:
    run_dir = finished_run(tmp_path)
    url = api_server(tmp_path / "runs")
    page.goto(f"{url}/runs/done")
    wait_status(page, "completed")
    check_conversation_and_escaping(page)
    # the output file the worker reported is rendered as Markdown, its raw HTML as text
    page.wait_for_selector(".output[data-path='notes.md'] .markdown h1", timeout=WAIT_MS)
    assert "<img src=x onerror=alert(1)>" in page.locator(".output[data-path='notes.md']").inner_text()
    assert page.evaluate("window.__xss") is None
    shoot(page, "run-page")
    # a lane's name on the timeline shows that instance in Details, which leads to its conversation
    from playwright.sync_api import expect

    segment = page.locator("section.segment[data-agent='worker']")
    page.evaluate("window.scrollTo(0, 0)")
    expect(segment).not_to_be_in_viewport()
    region(page, "Timeline").get_by_role("button", name="worker", exact=False).first.click()
    details = region(page, "Details")
    expect(details.get_by_role("heading", level=3)).to_contain_text("worker")
    details.get_by_role("button", name="Show its conversation").click()
    expect(segment).to_be_in_viewport(timeout=WAIT_MS)
    assert (run_dir / "notes.md").exists()


def test_a_replay_beside_the_run_is_compared_step_by_step(tmp_path: Path, page: Any, api_server: Any) -> None:
    run_dir = finished_run(tmp_path)
    replayed = run_cli(["replay", str(run_dir), "-q"], cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert (tmp_path / "runs" / "done-replay" / "events.jsonl").exists()
    url = api_server(tmp_path / "runs")
    page.goto(f"{url}/runs/done")
    diff = page.locator(".panel-replay .replay-diff")
    diff.wait_for(timeout=WAIT_MS)
    assert "the replay done-replay took the same steps" in diff.text_content()
    assert diff.locator("tr.same").count() == 4 and diff.locator("tr.differs").count() == 0
    # a replay that went elsewhere: its first differing step is named and marked
    log = tmp_path / "runs" / "done-replay" / "events.jsonl"
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    for line in lines:
        if line["type"] == "model_response" and line["agent"] == "worker" and line["step"] == 2:
            line["response"]["text"] = "Something else."
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    page.reload()
    page.locator(".panel-replay tr.differs").wait_for(timeout=WAIT_MS)
    assert "first differs at orchestrator/worker@" in page.locator(".panel-replay").text_content()


def test_the_start_form_starts_a_run_of_a_served_workflow(tmp_path: Path, page: Any, api_server: Any) -> None:
    wf = project(
        tmp_path,
        {"lead": []},
        inputs={
            "topic": {"type": "string", "description": "What to write about."},
            "rounds": {"type": "integer", "default": 2},
        },
        task="Write about {{ topic }} in {{ rounds }} rounds.",
    )
    replies = wire_script({"lead": [Reply("Written.")]})
    with WireServer(replies) as server:
        url = api_server(tmp_path / "runs", model_env(server, "openai"), (wf,))
        page.goto(f"{url}/new")
        page.wait_for_selector("form.start-form textarea#input-topic", timeout=WAIT_MS)
        assert page.input_value("#input-rounds") == "2"
        page.fill("#input-topic", "tides")
        page.fill("#input-rounds", "3")
        page.click("button.start-btn")
        page.wait_for_url("**/runs/**", timeout=WAIT_MS)
        wait_status(page, "completed")
        first = page.url.rsplit("/", 1)[1]
        # Re-run with changed inputs: the start form again, filled with this run's inputs
        page.get_by_role("link", name="Re-run with changed inputs").click()
        topic = page.get_by_role("textbox", name="topic")
        expect(topic).to_have_value("tides")
        expect(page.get_by_role("spinbutton", name="rounds")).to_have_value("3")
        topic.fill("waves")
        page.get_by_role("button", name="Start", exact=True).click()
        page.wait_for_url(re.compile(rf"/runs/(?!{re.escape(first)}$)"), timeout=WAIT_MS)
        wait_status(page, "completed")
        second = page.url.rsplit("/", 1)[1]
        asked = [r.last_user_text for r in server.requests]
    assert asked == ["Write about tides in 3 rounds.", "Write about waves in 3 rounds."]
    runs = tmp_path / "runs"  # (beside the runs index)
    assert json.loads((runs / first / "run.json").read_text())["inputs"] == {"topic": "tides", "rounds": 3}
    assert json.loads((runs / second / "run.json").read_text())["inputs"] == {"topic": "waves", "rounds": 3}


def test_the_batch_page_shows_progress_and_cost_over_time(tmp_path: Path, page: Any, api_server: Any) -> None:
    wf = project(
        tmp_path, {"lead": []}, inputs={"topic": {"type": "string"}}, task="Write about {{ topic }}."
    )
    (tmp_path / "items.jsonl").write_text("".join(json.dumps({"topic": t}) + "\n" for t in ("a", "b", "c")))
    replies = wire_script({"lead": [Reply("Written.", usage=(1000, 100))]})
    with WireServer(replies) as server:
        out = tmp_path / "batches" / "b1"
        done = run_cli(
            ["batch", str(wf), "items.jsonl", "--out", str(out), "--processes", "1"],
            cwd=tmp_path,
            env=model_env(server, "openai"),
        )
        assert done.returncode == 0, done.stdout + done.stderr
    (tmp_path / "runs").mkdir()
    url = api_server(tmp_path / "runs")
    page.goto(f"{url}/batches")
    page.click("ul.batches a")
    page.wait_for_selector(".batch-facts[data-done='3'][data-total='3']", timeout=WAIT_MS)
    assert page.locator("svg.progress rect.status-completed").count() == 1
    assert page.locator("table.batch-items tbody tr").count() == 3
    curve = page.get_attribute("svg.chart-line path.line", "d")
    assert curve is not None and curve.count("L") == 3  # one step per item that ended
    assert "$0.0" in page.locator(".batch-facts").text_content()  # 3 x (1000 x $3 + 100 x $15) / 1M
    shoot(page, "batch")
    # each item links to its run, read as BATCH:ITEM
    item = page.locator("table.batch-items tbody tr").first.get_attribute("data-id")
    page.get_by_role("link", name=str(item), exact=True).click()
    page.wait_for_url(re.compile(rf"/runs/b1(:|%3A){item}$"), timeout=WAIT_MS)
    wait_status(page, "completed")
    expect(region(page, "Timeline").get_by_role("button", name=re.compile(r"^step 1"))).to_have_count(1)
    # and the runs list lists the batch's runs beside the runs folder's (none)
    page.goto(f"{url}/")
    expect(page.locator("tr.run-row")).to_have_count(3)
    expect(page.get_by_role("link", name=f"b1:{item}")).to_be_visible()


def test_show_html_opens_offline_and_shows_the_timeline(tmp_path: Path, page: Any, tabs: Any) -> None:
    run_dir = finished_run(tmp_path)
    target = tmp_path / "report.html"
    shown = run_cli(["show", str(run_dir), "--html", str(target)], cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert f"wrote {target}" in shown.stdout
    asked: list[str] = []

    def refuse_network(route: Any) -> None:
        asked.append(route.request.url)
        if route.request.url == target.as_uri():
            route.continue_()
        else:
            route.abort()

    page.route("**/*", refuse_network)
    page.goto(target.as_uri())
    wait_bars(page, 6)  # orchestrator 2 model + 1 tool, worker 2 model + 1 tool
    assert page.locator("svg.timeline g.lane").count() == 2
    check_conversation_and_escaping(page)
    assert page.locator(".panel-charts svg.chart").count() >= 2
    assert asked == [target.as_uri()], asked  # nothing but the file itself
    shoot(page, "report")

    # under its own Content-Security-Policy (the page above ignored it), its script still runs:
    # the policy names the inline script by its hash
    tab = tabs(strict=True)
    tab.goto(target.as_uri())
    tab.wait_for_selector("svg.timeline rect.bar >> nth=5", timeout=WAIT_MS)
    open_conversations(tab)
    tab.locator("section.segment").nth(1).wait_for(timeout=WAIT_MS)
    assert tab.locator("section.segment").count() == 2
    # the details of a step come from the file too: the worker's request as it was sent
    region(tab, "Timeline").get_by_role("button", name="step 1 · write_file", exact=False).click()
    details = region(tab, "Details")
    details.get_by_text("You are the worker.").wait_for(timeout=WAIT_MS)


def test_show_html_redacts_secrets_and_refuses_other_views(tmp_path: Path) -> None:
    run_dir = finished_run(tmp_path)
    secret = "sk-very-secret-value-1234567"
    log = run_dir / "events.jsonl"
    lines = log.read_text().splitlines()
    # a line the log kept unredacted (written by hand: the runtime redacts what it logs)
    extra = {"seq": 10_000, "t": 1.0, "type": "user_message", "agent": "worker", "agent_id": "x", "step": 1}
    log.write_text("\n".join([*lines, json.dumps(extra | {"text": f"key {secret}"})]) + "\n")
    target = tmp_path / "r.html"
    shown = run_cli(["show", str(run_dir), "--html", str(target)], cwd=tmp_path, env={"MY_API_KEY": secret})
    assert shown.returncode == 0, shown.stderr
    html = target.read_text()
    assert secret not in html and "[REDACTED]" in html
    both = run_cli(["show", str(run_dir), "--html", str(target), "--messages"], cwd=tmp_path)
    assert both.returncode == 2 and "--html writes the whole run" in both.stderr
    assert "Traceback" not in both.stderr


# ---------------------------------------------------------------- decisions


def test_allow_on_a_pending_approval_completes_the_run(tmp_path: Path, page: Any, api_server: Any) -> None:
    wf = project(tmp_path, {"orchestrator": ["worker"], "worker": [{"write_file": {"approve": "ask"}}]})
    replies = wire_script(
        {
            "orchestrator": [calls(ToolCallSpec("worker", {"task": "Write it."})), Reply("All done.")],
            "worker": [
                calls(ToolCallSpec("write_file", {"path": "out.txt", "content": "approved\n"})),
                Reply("Wrote it."),
            ],
        }
    )
    with WireServer(replies) as server:
        first = run_cli([str(wf), "--run-id", "wait", "-q"], cwd=tmp_path, env=model_env(server, "openai"))
        assert first.returncode == 75, first.stdout + first.stderr  # no terminal: the run waits
        run_dir = tmp_path / "runs" / "wait"
        url = api_server(tmp_path / "runs", model_env(server, "openai"))
        page.goto(f"{url}/runs/wait")
        wait_status(page, "waiting")
        decision = page.locator(".decision[data-kind='approval']")
        decision.wait_for(timeout=WAIT_MS)
        assert "write_file" in decision.inner_text() and "out.txt" in decision.inner_text()
        page.wait_for_selector("svg.timeline rect.bar-tool.outcome-waiting", timeout=WAIT_MS)
        shoot(page, "waiting-for-a-decision")
        # the arguments as a person reads them: the content's line break is a line break
        assert "approved\n" in decision.locator("dl.args").inner_text() and "\\n" not in decision.inner_text()
        decision.get_by_label("Reason").fill("the note is fine")
        decision.get_by_role("button", name="Allow").click()
        wait_status(page, "completed")
        assert page.locator(".decision").count() == 0
        wait_bars(page, 6)  # each agent: 2 model calls and 1 tool call
        asked = len(server.requests)
        # the decision stays on the page: what, who, when and why
        taken_row = region(page, "Decisions taken").get_by_role("row").nth(1)
        taken_row.wait_for(timeout=WAIT_MS)
        said = taken_row.inner_text()
        assert "write_file" in said and "allowed" in said and "ui" in said and "the note is fine" in said
        assert "ago" in said or "just now" in said
        # and the call's details say it too
        region(page, "Timeline").get_by_role("button", name=re.compile(r"^write_file, ")).click()
        details = region(page, "Details")
        details.get_by_text("the note is fine").wait_for(timeout=WAIT_MS)
    assert asked == 4  # each model step once: the resume asked nothing again
    assert (run_dir / "out.txt").read_text() == "approved\n"
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    (taken,) = [e for e in events if e["type"] == "decision"]
    assert taken["allowed"] is True and taken["by"] == "ui" and taken["reason"] == "the note is fine"


def test_an_answer_typed_on_the_page_reaches_the_agent(tmp_path: Path, page: Any, api_server: Any) -> None:
    wf = project(tmp_path, {"boss": ["ask_user"]})
    replies = wire_script(
        {"boss": [calls(ToolCallSpec("ask_user", {"question": "Which <b>colour</b>?"})), Reply("Done.")]}
    )
    with WireServer(replies) as server:
        first = run_cli([str(wf), "--run-id", "q", "-q"], cwd=tmp_path, env=model_env(server, "openai"))
        assert first.returncode == 75, first.stdout + first.stderr
        url = api_server(tmp_path / "runs", model_env(server, "openai"))
        page.goto(f"{url}/runs/q")
        decision = page.locator(".decision[data-kind='question']")
        decision.wait_for(timeout=WAIT_MS)
        assert "Which <b>colour</b>?" in decision.text_content()
        decision.get_by_label("Your answer").fill("Blue, please.")
        decision.get_by_role("button", name="Answer").click()
        wait_status(page, "completed")
        (after,) = [r for r in server.requests if r.assistant_turns == 1]
    assert after.tool_results[0][1] == "Blue, please."
    events = [
        json.loads(line) for line in (tmp_path / "runs" / "q" / "events.jsonl").read_text().splitlines()
    ]
    (taken,) = [e for e in events if e["type"] == "decision"]
    assert taken["answer"] == "Blue, please." and taken["by"] == "ui"


class Rewritten:
    """The script, but a worker told to write "twice" writes that instead, under the same call
    id: a model asked live after its prompt changed."""

    def __init__(self, inner: Responder) -> None:
        self.inner = inner

    def __call__(self, request: WireRequest) -> Reply:
        if "twice" in request.system and request.assistant_turns == 0:
            return calls(ToolCallSpec("write_file", {"path": "out.txt", "content": "twice\n"}))
        return self.inner(request)


def refusal_after_allow(page: Any, decision: Any, words: str, shot: str) -> str:
    """Allow on `decision`, and the one line the page shows once the server refused it."""
    expect_console(page, "the server responded with a status of 400 (Bad Request)")  # the refusal
    decision.locator("button.allow-btn").click()
    said = decision.locator(".decision-status")
    page.wait_for_function(
        "([el, w]) => el.textContent.includes(w)", arg=[said.element_handle(), words], timeout=WAIT_MS
    )
    shoot(page, shot)
    line = str(said.text_content())
    assert "\n" not in line and words in line, line
    return line


def test_allow_on_a_stale_decision_is_refused_in_one_line(tmp_path: Path, page: Any, api_server: Any) -> None:
    """The page shows a pending approval. Meanwhile the worker's prompt changes and the run is
    resumed: it asks another write under the same call id, a request of attempt 1. Allow on the
    page, which still shows the first, sends its ref (#0) and is refused in one line: it is never
    applied to the second. Reloaded, the page shows the second; `flowrun approve --deny` takes it,
    and Allow on the page is refused again: already decided, by whom. Nothing else is recorded."""
    wf = project(tmp_path, {"worker": [{"write_file": {"approve": "ask"}}]})
    write = calls(ToolCallSpec("write_file", {"path": "out.txt", "content": "approved\n"}))
    replies = Rewritten(wire_script({"worker": [write, Reply("Not written.")]}))
    with WireServer(replies) as server:
        env = model_env(server, "openai")
        first = run_cli([str(wf), "--run-id", "stale", "-q"], cwd=tmp_path, env=env)
        assert first.returncode == 75, first.stdout + first.stderr
        run_dir = tmp_path / "runs" / "stale"
        url = api_server(tmp_path / "runs", env)
        page.goto(f"{url}/runs/stale")
        decision = page.locator(".decision[data-kind='approval']")
        decision.wait_for(timeout=WAIT_MS)
        assert "approved" in decision.inner_text()
        # the page has stopped following the waiting run (else it would follow the resume below
        # and show its request: the page would not be stale)
        page.locator(".run-view[data-following='false']").wait_for(timeout=WAIT_MS)

        worker = tmp_path / "agents.d" / "worker.yaml"
        worker.write_text(
            worker.read_text().replace("You are the worker.", "You are the worker. Write it twice.")
        )
        again = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path, env=env)
        assert again.returncode == 75, again.stdout + again.stderr
        line = refusal_after_allow(
            page, decision, "belongs to an earlier attempt", "a-decision-of-an-earlier-attempt"
        )
        assert line.startswith("worker/call_0_0#0 in ") and "it waits for worker/call_0_0#1 (approve" in line
        assert "content='twice\\n'" in line

        page.reload()
        decision = page.locator(".decision[data-kind='approval']")
        decision.wait_for(timeout=WAIT_MS)
        assert "twice" in decision.inner_text()
        page.locator(".run-view[data-following='false']").wait_for(timeout=WAIT_MS)  # (as above)
        denied = run_cli(["approve", str(run_dir), "--deny", "--no-continue"], cwd=tmp_path, env=env)
        assert denied.returncode == 0, denied.stdout + denied.stderr
        line = refusal_after_allow(
            page, decision, "already decided: denied by cli", "a-decision-taken-meanwhile"
        )
        assert "worker/call_0_0#1 in " in line
    log = [json.loads(text) for text in (run_dir / "events.jsonl").read_text().splitlines()]
    taken = [(e["allowed"], e["by"], e["attempt"]) for e in log if e["type"] == "decision"]
    assert taken == [(False, "cli", 1)]
    assert not (run_dir / "out.txt").exists()


# ---------------------------------------------------------------- the runs list


STATUSES = ["completed", "failed", "waiting", "cancelled"]
WORKFLOWS = ["research", "review", "triage"]


def generate_runs(runs_dir: Path, n: int) -> None:
    """`n` run folders as the runtime leaves them (run.json, usage.json, a short events.jsonl)."""
    start = 1_790_000_000.0
    for i in range(n):
        folder = runs_dir / f"run-{i:05d}"
        folder.mkdir(parents=True)
        status, workflow = STATUSES[i % 4], WORKFLOWS[i % 3]
        t = start + i * 60
        meta = {
            "run_id": folder.name,
            "workflow": workflow,
            "status": status,
            "inputs": {"topic": f"topic {i}"},
        }
        (folder / "run.json").write_text(
            json.dumps(meta | {"options": {"dry_run": False}, "updated": t + 30})
        )
        usage = {
            "total_tokens": 100 + i,
            "total_cost_usd": i / 1000,
            "by_agent_model": [
                {
                    "agent": "a",
                    "model": "m",
                    "calls": 1,
                    "usage": {"input_tokens": 90 + i, "output_tokens": 10},
                }
            ],
        }
        (folder / "usage.json").write_text(json.dumps(usage))
        start_line = {"seq": 1, "t": t, "type": "run_start", "workflow": workflow, "inputs": meta["inputs"]}
        end_line = {"seq": 2, "t": t + 30, "type": "run_end", "status": status}
        (folder / "events.jsonl").write_text(json.dumps(start_line) + "\n" + json.dumps(end_line) + "\n")


def test_the_runs_list_filters_2000_generated_runs(tmp_path: Path, page: Any, api_server: Any) -> None:
    generate_runs(tmp_path / "runs", 2000)
    url = api_server(tmp_path / "runs")
    page.goto(f"{url}/")
    page.wait_for_selector(".runs-total[data-total='2000']", timeout=WAIT_MS)
    assert page.locator("tr.run-row").count() == 50
    assert page.locator("tr.run-row").first.get_attribute("data-id") == "run-01999"  # newest first

    began = time.perf_counter()
    page.select_option("select.filter-status", "failed")
    page.wait_for_selector(".runs-total[data-total='500']", timeout=WAIT_MS)
    took = time.perf_counter() - began
    statuses = page.eval_on_selector_all("tr.run-row", "rs => rs.map(r => r.dataset.status)")
    assert set(statuses) == {"failed"} and len(statuses) == 50

    page.fill("input.filter-workflow", "triage")  # failed: i % 4 == 1; triage: i % 3 == 2
    page.wait_for_selector(".runs-total[data-total='167']", timeout=WAIT_MS)
    page.fill("input.filter-q", "run-01001")
    page.wait_for_selector(".runs-total[data-total='1']", timeout=WAIT_MS)
    assert page.locator("tr.run-row").first.get_attribute("data-id") == "run-01001"
    assert "status=failed" in page.url and "workflow=triage" in page.url  # the filters are in the address

    page.fill("input.filter-q", "")
    page.select_option("select.filter-status", "")
    page.fill("input.filter-workflow", "")
    page.wait_for_selector(".runs-total[data-total='2000']", timeout=WAIT_MS)
    page.click("button.next")
    page.wait_for_selector("tr.run-row[data-id='run-01949']", timeout=WAIT_MS)
    print(
        f"\nthe runs list filtered 2,000 runs by status in {took:.3f} s (bench/ui_runs_list.py measures it)"
    )


MARKDOWN = """# Title with <b>tags</b>

A paragraph with `code <i>`, **bold**, *italic*, snake_case_name and a [link](https://example.org).
A [bad link](javascript:alert(1)) and <script>window.__xss = 3</script>.

- one
- two

| a | b |
|---|---|
| 1 | 2 |

```python
print("<not html>")
```
"""


def test_the_markdown_renderer_keeps_html_as_text_and_links_safe(
    tmp_path: Path, page: Any, api_server: Any, browser: Any
) -> None:
    (tmp_path / "runs").mkdir()
    url = api_server(tmp_path / "runs")
    page.goto(f"{url}/")
    rendered = page.evaluate(
        """async (text) => {
            const { renderMarkdown } = await import("/ui/static/markdown.js");
            const root = renderMarkdown(text);
            document.body.appendChild(root);
            const tags = [...root.querySelectorAll("*")].map((n) => n.tagName.toLowerCase());
            const links = [...root.querySelectorAll("a")].map((a) => a.getAttribute("href"));
            return { tags, links, text: root.textContent, h1: root.querySelector("h1").textContent };
        }""",
        MARKDOWN,
    )
    tags = set(rendered["tags"])
    assert {"h1", "p", "code", "strong", "em", "a", "ul", "li", "table", "th", "td", "pre"} <= tags
    assert not tags & {"b", "i", "script", "img"}
    assert rendered["h1"] == "Title with <b>tags</b>"
    assert rendered["links"] == ["https://example.org"]  # javascript: stays text
    assert "snake_case_name" in rendered["text"] and "<script>window.__xss = 3</script>" in rendered["text"]
    assert 'print("<not html>")' in rendered["text"]
    assert page.evaluate("window.__xss") is None

    # the pages run under their own Content-Security-Policy too (the page above ignored it)
    strict = browser.new_context()
    try:
        tab = strict.new_page()
        tab.goto(f"{url}/")
        tab.wait_for_selector(".runs-total[data-total='0']", timeout=WAIT_MS)
    finally:
        strict.close()


def test_the_runs_list_follows_a_run_that_ends(tmp_path: Path, page: Any, api_server: Any) -> None:
    generate_runs(tmp_path / "runs", 3)
    meta_path = tmp_path / "runs" / "run-00002" / "run.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps(meta | {"status": "running"}))
    lock = meta_path.parent / "run.lock"  # a live process (this one) holds it: it is running
    lock.write_text(str(os.getpid()))
    url = api_server(tmp_path / "runs")
    page.goto(f"{url}/")
    page.wait_for_selector("tr.run-row[data-id='run-00002'][data-status='running']", timeout=WAIT_MS)
    meta_path.write_text(json.dumps(meta | {"status": "completed", "updated": meta["updated"] + 1}))
    lock.unlink()  # as a run releases it
    page.wait_for_selector("tr.run-row[data-id='run-00002'][data-status='completed']", timeout=WAIT_MS)
    statuses = page.locator("tr.run-row").evaluate_all("rows => rows.map(r => r.dataset.status)")
    assert len(statuses) == 3 and "running" not in statuses  # the row changed in place


def test_the_pages_never_write_markup_from_text() -> None:
    """No module of the pages builds markup from strings: text only ever becomes text nodes."""
    static = REPO / "engine" / "flowrun" / "serve" / "ui" / "static"
    sinks = ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function")
    found = [
        f"{path.name}: {sink}"
        for path in sorted(static.glob("*.js"))
        for sink in sinks
        if sink in path.read_text()
    ]
    assert found == []


def test_flowrun_ui_refuses_an_open_address_without_a_token(tmp_path: Path) -> None:
    proc = run_cli(["ui", "--host", "0.0.0.0", "--port", "0"], cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: --host 0.0.0.0 would serve these workflows"), proc.stderr


# ---------------------------------------------------------------- one summary


def test_a_killed_runs_page_says_what_every_view_says(tmp_path: Path, page: Any, api_server: Any) -> None:
    """A run SIGKILLed in the middle of a tool call: the page's state, tokens and cost are the
    server's summary (GET /v1/runs/ID), which `flowrun runs` and `flowrun.list_runs` agree with
    (tests/test_run_states.py checks every view over every end state)."""
    import signal

    import httpx
    from test_run_states import stop_in_the_shell, write_project

    import flowrun

    write_project(tmp_path)
    stop_in_the_shell(tmp_path, "killed", signal.SIGKILL)
    runs = tmp_path / "runs"
    (entry,) = flowrun.list_runs(runs)
    assert entry.status == "interrupted" and entry.total_tokens > 0 and entry.cost_usd
    url = api_server(runs)
    page.goto(f"{url}/runs/killed")
    wait_status(page, "interrupted")
    detail = httpx.get(f"{url}/v1/runs/killed", timeout=60).json()
    assert page.locator(".total-tokens").get_attribute("data-value") == str(detail["total_tokens"])
    assert float(page.locator(".total-cost").get_attribute("data-value")) == detail["cost_usd"]
    assert (detail["status"], detail["total_tokens"], detail["cost_usd"]) == (
        entry.status,
        entry.total_tokens,
        entry.cost_usd,
    )
    listed = run_cli(["runs", "--runs-dir", str(runs)]).stdout.splitlines()[1].split()
    assert listed[2] == "interrupted" and listed[6] == f"{entry.total_tokens:,}", listed
    # the tool call cut by the kill is drawn ended, as interrupted
    page.wait_for_selector("svg.timeline rect.bar-tool.outcome-interrupted", timeout=WAIT_MS)
    # and the tree says the same of it (the server's word for a call with no result)
    cut = region(page, "Agents and tool calls").get_by_role("button", name=re.compile(r" call, interrupted$"))
    expect(cut).to_have_count(1)
    shoot(page, "killed-run")
