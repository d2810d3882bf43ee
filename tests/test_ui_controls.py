"""The web UI as a tool, used as a person would in a headless Chromium (the real `flowrun ui`,
the real runs, found by role and accessible name as a screen reader finds them): a bar opens its
step in Details (the request's system prompt, the tool result), j/k and zoom; Stop and Resume a
live run; Replay with edits names the first changed step, and Run from there goes on live; Re-run
and Compare; the team graph of the research roster with each agent's state, and the start
form's cost preview; the Memory region's files, their text and the run's writes (in the report
too); a framed page is refused; a mistyped run id and a missing token are pages
of their own; the runs list at 390 px; an idle stretch cut from the timeline's axis. Every tab
fails its test on a console error (tests/support/browser.py)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect
from support.browser import (
    WAIT_MS,
    Gate,
    finished_project,
    finished_run,
    finished_script,
    project,
    region,
    shoot,
    start_run,
    wait_for_file,
    wait_status,
)
from support.cli import run_cli
from support.env import model_env
from support.paths import REPO
from support.project import model, wire_script, workflow, write_project
from support.wire_server import Reply, ToolCallSpec, WireServer, calls

pytestmark = pytest.mark.xdist_group("browser")

ROSTER = ("orchestrator", "searcher", "analyzer", "writer")


def events(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


# ---------------------------------------------------------------- details, keys, zoom


def test_a_bar_opens_its_step_in_details(tmp_path: Path, page: Any, api_server: Any) -> None:
    run_dir = finished_run(tmp_path)
    url = api_server(tmp_path / "runs")
    page.goto(f"{url}/runs/done")
    wait_status(page, "completed")
    timeline, details = region(page, "Timeline"), region(page, "Details")
    # the worker's first model call: the request as it was sent, and the call it asked for
    timeline.get_by_role("button", name=re.compile(r"^step 1 · write_file, worker")).click()
    expect(details.get_by_role("heading", level=3)).to_have_text(re.compile(r"worker · step 1 · write_file"))
    expect(details.locator(".system-prompt")).to_contain_text("You are the worker.")
    expect(details.locator(".messages")).to_contain_text("Write the notes.")  # its task
    expect(details).to_contain_text("tokens")
    # the tool call: its arguments and its result as the model read it
    timeline.get_by_role("button", name=re.compile(r"^write_file, worker")).click()
    (result,) = [
        e["result"] for e in events(run_dir) if e["type"] == "tool_result" and e["tool"] == "write_file"
    ]
    expect(details.locator(".result-text")).to_have_text(result["text"])
    expect(details.locator("dl.args")).to_contain_text("notes.md")
    shoot(page, "details-of-a-tool-call")
    # j and k walk the bars in time; the one selected is the one in the tab order
    page.keyboard.press("j")
    expect(details.get_by_role("heading", level=3)).to_have_text(re.compile(r"worker · step 2 · answer"))
    page.keyboard.press("k")
    expect(details.get_by_role("heading", level=3)).to_have_text(re.compile(r"write_file · worker"))
    expect(timeline.locator(".bar-g[tabindex='0']")).to_have_count(1)
    # a node of the tree selects the same way
    region(page, "Agents and tool calls").get_by_role("button", name="orchestrator, completed").click()
    expect(details.get_by_role("heading", level=3)).to_have_text(re.compile(r"^orchestrator"))
    expect(details).to_contain_text("Do the job.")
    # zoom: twice as wide, then the whole run again
    svg = timeline.locator("svg.timeline")
    fit = float(svg.get_attribute("width") or 0)
    timeline.get_by_role("button", name="Zoom in").click()
    expect(svg).to_have_attribute("width", re.compile(r"\d"))
    page.wait_for_function(
        f"Number(document.querySelector('svg.timeline').getAttribute('width')) > {fit * 1.9}"
    )
    timeline.get_by_role("button", name="Fit").click()
    page.wait_for_function(
        f"Number(document.querySelector('svg.timeline').getAttribute('width')) <= {fit + 1}"
    )


def test_an_idle_stretch_is_cut_from_the_axis_and_labelled(
    tmp_path: Path, page: Any, api_server: Any
) -> None:
    """A question answered after seven minutes, around two seconds of work: the seven minutes
    become one labelled break, and the seconds of work keep the axis (timeline.js's timeAxis,
    drawn from a summary's spans)."""
    (tmp_path / "runs").mkdir()
    url = api_server(tmp_path / "runs")
    page.goto(f"{url}/")
    found = page.evaluate(
        """async () => {
            const { timeAxis } = await import("/ui/static/timeline.js");
            const { RunModel } = await import("/ui/static/model.js");
            const t = 1000;
            const asked = { call_id: "c1", agent_id: "a", lane: 0, start: t + 1, end: t + 421 };
            const spans = [
                { kind: "model", lane: 0, start: t, end: t + 1, step: 1, outcome: "ok" },
                { ...asked, kind: "tool", tool: "ask_user", outcome: "success" },
                { ...asked, kind: "wait", outcome: "answered" },
                { kind: "model", lane: 0, start: t + 421, end: t + 422, step: 2, outcome: "ok" },
            ];
            const inv = { index: 0, agent: "boss", agent_id: "a", calls: { c1: { agents: [] } }, items: [] };
            const run = { status: "completed", started: t, spans, invocations: [inv], tree: [{ agent: 0 }] };
            const axis = timeAxis(new RunModel(run), t, t + 422, 800);
            const gaps = axis.segments.filter((s) => s.gap).map((g) => [g.t1 - g.t0, g.x1 - g.x0, g.why]);
            return { gaps, step1: axis.x(t + 1) - axis.x(t) };
        }"""
    )
    ((length, width, why),) = found["gaps"]
    assert length == 420 and width < 100 and why == "waiting for a person"
    assert found["step1"] > 300  # one second of work: hundreds of pixels, not 2


# ---------------------------------------------------------------- run controls


def talk_project(tmp_path: Path) -> Path:
    return project(tmp_path, {"talker": ["list_directory"]}, name="talk")


def team_node(page: Any, agent: str, words: str) -> Any:
    """An agent of the Team region whose name begins with `words` (its state and steps)."""
    return region(page, "Team").get_by_role("button", name=re.compile(rf"^{agent}: {re.escape(words)}"))


def talk_script() -> Any:
    step = calls(ToolCallSpec("list_directory", {"path": "."}))
    return wire_script({"talker": [step, step, Reply("Talked.")]})


def test_stop_then_resume_a_live_run(tmp_path: Path, page: Any, api_server: Any) -> None:
    wf = talk_project(tmp_path)
    gate = Gate(talk_script())
    with WireServer(gate) as server:
        try:
            url = api_server(tmp_path / "runs", model_env(server, "openai"), (wf,))
            started = httpx.post(f"{url}/v1/runs", json={"workflow": "talk"}, timeout=60)
            assert started.status_code == 201, started.text
            run_id = started.json()["id"]
            gate.release(1)  # the first model call answers; the second is held, in flight
            gate.wait_arrived(2)
            page.goto(f"{url}/runs/{run_id}")
            wait_status(page, "running")
            expect(page.get_by_role("button", name="Resume")).to_be_hidden()
            expect(team_node(page, "talker", "running · 1 step")).to_be_visible()  # live, in the team
            page.get_by_role("button", name="Stop").click()
            wait_status(page, "cancelled")  # the stopped state, by one name
            expect(team_node(page, "talker", "cancelled")).to_be_visible()
            assert httpx.get(f"{url}/v1/runs/{run_id}", timeout=60).json()["resumable"] is True
            listed = run_cli(["runs", "--runs-dir", str(tmp_path / "runs")]).stdout
            assert re.search(rf"{re.escape(run_id)}\s+\S+\s+cancelled", listed), listed
            expect(region(page, "Timeline").locator("rect.bar-model.outcome-interrupted")).to_have_count(1)
            shoot(page, "stopped-run")
            gate.open()
            page.get_by_role("button", name="Resume").click()
            wait_status(page, "completed")
            expect(team_node(page, "talker", "completed · 3 steps")).to_be_visible()
            asked = [r.assistant_turns for r in server.requests]
        finally:
            gate.open()
    # each recorded answer used again; the call the Stop cut off sent again
    assert sorted(asked) == [0, 1, 1, 2], asked
    run_events = events(tmp_path / "runs" / run_id)
    assert [e["status"] for e in run_events if e["type"] == "run_end"] == ["cancelled", "completed"]


def test_replay_with_edits_names_the_first_changed_step_and_runs_from_there(
    tmp_path: Path, page: Any, api_server: Any
) -> None:
    run_dir = finished_run(tmp_path)
    recorded = (run_dir / "events.jsonl").read_bytes()
    wf = finished_project(tmp_path)
    with WireServer(finished_script()) as server:
        url = api_server(tmp_path / "runs", model_env(server, "openai"), (wf,))
        held: list[Any] = []  # the team's answer, held until the panel is open (a slow server)
        page.route("**/v1/runs/done/team", lambda route: held.append(route))
        page.goto(f"{url}/runs/done")
        wait_status(page, "completed")
        page.get_by_role("button", name="Replay with edits").click()
        edits = page.get_by_role("region", name="Replay with edits")
        expect(edits).to_contain_text("loading the run's workflow")
        while not held:  # (the page asks for the team after its first draw)
            page.wait_for_timeout(50)
        held[0].continue_()
        edits.get_by_label("Agent whose prompt to change").select_option("worker")
        prompt = edits.get_by_role("textbox", name="Prompt")
        expect(prompt).to_have_value(re.compile(r"You are the worker\."))
        prompt.fill("You are the worker. Keep notes short.")
        edits.get_by_role("button", name="Replay offline").click()
        changed = edits.locator(".first-changed")
        expect(changed).to_have_text("worker · step 1", timeout=WAIT_MS)
        expect(edits).to_contain_text("system prompt differs")
        assert not server.requests  # offline: no model was asked
        shoot(page, "replay-with-edits")
        edits.get_by_role("button", name="Show this step").click()
        expect(region(page, "Details").get_by_role("heading", level=3)).to_have_text(
            re.compile(r"worker · step 1")
        )
        # for real from there: the recording up to the worker's first step, then live
        edits.get_by_role("button", name="Run from there").click()
        page.wait_for_url(re.compile(r"/runs/(?!done$)"), timeout=WAIT_MS)
        wait_status(page, "completed")
        asked = [(r.system, r.assistant_turns) for r in server.requests]
    assert [turns for _, turns in asked] == [0, 1, 1], asked  # worker 1 and 2, orchestrator 2
    assert "Keep notes short." in asked[0][0]
    assert (run_dir / "events.jsonl").read_bytes() == recorded  # the recording is only read
    assert not (tmp_path / "runs" / "done-replay").exists()


def test_rerun_then_compare_the_two_runs(tmp_path: Path, page: Any, api_server: Any) -> None:
    finished_run(tmp_path)
    wf = finished_project(tmp_path)
    with WireServer(finished_script()) as server:
        url = api_server(tmp_path / "runs", model_env(server, "openai"), (wf,))
        page.goto(f"{url}/runs/done")
        wait_status(page, "completed")
        page.get_by_role("button", name="Re-run").click()
        page.wait_for_url(re.compile(r"/runs/(?!done$)"), timeout=WAIT_MS)
        wait_status(page, "completed")
        again = page.url.rsplit("/", 1)[1]
    assert json.loads((tmp_path / "runs" / again / "run.json").read_text())["inputs"] == {}
    # the runs list: tick both, Compare
    page.goto(f"{url}/")
    page.get_by_role("checkbox", name="select done to compare").check()
    page.get_by_role("checkbox", name=f"select {again} to compare").check()
    page.get_by_role("button", name="Compare").click()
    page.wait_for_url(re.compile(r"/compare\?a="), timeout=WAIT_MS)
    for run_id in ("done", again):
        expect(page.get_by_role("region", name=f"run {run_id}")).to_contain_text("completed")
    agents = page.get_by_role("region", name="Per agent")
    expect(agents.get_by_role("row", name=re.compile(r"^worker"))).to_be_visible()
    expect(page.locator(".first-difference")).to_have_text("Every model step answered the same.")
    shoot(page, "compare")


def test_an_evals_variants_are_compared_case_by_case(tmp_path: Path, page: Any, api_server: Any) -> None:
    """`flowrun eval` with two variants writes evals/NAME-TIME beside the runs folder: the
    compare page lists it, its page pairs each case's runs across the variants, and Compare
    opens two of them side by side with the first step whose answers differ."""
    from test_eval import Scripted, evaluate
    from test_eval import project as eval_project

    with WireServer(Scripted()) as server:
        evalset = eval_project(tmp_path, server, "openai")
        variants = ["--variant", "base=--model m", "--variant", "next=--model m2"]
        code, out, _ = evaluate(evalset, "openai", *variants)
    assert code == 0, out
    url = api_server(tmp_path / "runs")
    page.goto(f"{url}/compare")
    page.get_by_role("link", name=re.compile(r"^qa-basics-")).click()
    page.wait_for_url(re.compile(r"/evals/qa-basics-"), timeout=WAIT_MS)
    name = page.url.rsplit("/", 1)[1]
    for outside in ("..", "."):  # an id names a variant's run, never a folder above it
        assert httpx.get(f"{url}/v1/runs/{name}:base:{outside}", timeout=60).status_code == 404
    expect(page.get_by_label("Variant A")).to_have_value("base")
    expect(page.get_by_label("Variant B")).to_have_value("next")
    expect(page.locator("tr.run-row")).to_have_count(2)  # capital.r1 and sum.r1
    shoot(page, "eval-variants")
    page.get_by_role("link", name="Compare capital.r1").click()
    page.wait_for_url(re.compile(r"/compare\?a="), timeout=WAIT_MS)
    sides = page.locator("section.compare-side")
    expect(sides).to_have_count(2)
    expect(sides.nth(0)).to_contain_text(":base:capital.r1")
    expect(sides.nth(1)).to_contain_text(":next:capital.r1")
    expect(sides.nth(0)).to_contain_text("completed")
    agents = page.get_by_role("region", name="Per agent")
    expect(agents.get_by_role("row", name=re.compile(r"^answerer"))).to_be_visible()
    # the two models wrote other answers: the first step differs
    expect(page.locator(".first-difference")).to_contain_text("First differing step")
    # a mistyped eval is a page of its own
    page.goto(f"{url}/evals/no-such-eval")
    expect(page.get_by_role("alert")).to_contain_text("No eval no-such-eval")


def test_a_denied_budget_leaves_no_waiting_behind(tmp_path: Path, page: Any, api_server: Any) -> None:
    wf = project(tmp_path, {"boss": ["list_directory"]}, limits={"max_total_steps": 2, "on_budget": "ask"})
    step = calls(ToolCallSpec("list_directory", {"path": "."}))
    with WireServer(wire_script({"boss": [step, step, step, Reply("Done.")]})) as server:
        first = run_cli([str(wf), "--run-id", "b", "-q"], cwd=tmp_path, env=model_env(server, "openai"))
        assert first.returncode == 75, first.stderr
        url = api_server(tmp_path / "runs", model_env(server, "openai"))
        page.goto(f"{url}/runs/b")
        decision = page.get_by_role("group", name=re.compile(r"decision: budget"))
        expect(decision).to_contain_text("max_total_steps")
        decision.get_by_label("Reason").fill("enough")
        decision.get_by_role("button", name="Deny").click()
        wait_status(page, "budget_exceeded")
    expect(region(page, "Decisions taken")).to_contain_text("refused more budget")
    tree = region(page, "Agents and tool calls")
    expect(tree.locator(".status-waiting")).to_have_count(0)
    expect(tree.get_by_role("button", name="boss, budget_exceeded")).to_be_visible()
    expect(region(page, "Timeline").locator(".bar-g[data-outcome='waiting']")).to_have_count(0)
    expect(region(page, "Timeline").locator(".bar-g[data-kind='wait'][data-outcome='denied']")).to_have_count(
        1
    )


def test_a_budget_granted_on_the_page_shows_the_amount(tmp_path: Path, page: Any, api_server: Any) -> None:
    wf = project(tmp_path, {"boss": ["list_directory"]}, limits={"max_total_steps": 2, "on_budget": "ask"})
    step = calls(ToolCallSpec("list_directory", {"path": "."}))
    with WireServer(wire_script({"boss": [step, step, step, Reply("Done.")]})) as server:
        first = run_cli([str(wf), "--run-id", "g", "-q"], cwd=tmp_path, env=model_env(server, "openai"))
        assert first.returncode == 75, first.stderr
        url = api_server(tmp_path / "runs", model_env(server, "openai"))
        page.goto(f"{url}/runs/g")
        decision = page.get_by_role("group", name=re.compile(r"decision: budget"))
        decision.get_by_label("Grant").fill("2")
        decision.get_by_label("Reason").fill("two more")
        decision.get_by_role("button", name="Allow").click()
        wait_status(page, "completed")
        asked = sorted(r.assistant_turns for r in server.requests)
    assert asked == [0, 1, 2, 3], asked  # nothing asked again after the grant
    taken = region(page, "Decisions taken").get_by_role("row").nth(1)
    expect(taken).to_contain_text("granted 2 more max_total_steps")
    expect(taken).to_contain_text("two more")
    expect(taken).to_contain_text("ui")
    (decided,) = [e for e in events(tmp_path / "runs" / "g") if e["type"] == "decision"]
    assert decided["grant"] == 2 and decided["by"] == "ui" and decided["reason"] == "two more"


# ---------------------------------------------------------------- the team


def test_the_team_graph_shows_the_research_roster_with_each_state(
    tmp_path: Path, page: Any, api_server: Any
) -> None:
    research = REPO / "examples" / "research.yaml"
    runs = tmp_path / "runs"
    done = run_cli(
        [
            str(research),
            "--question",
            "How do sorts work?",
            "--dry-run",
            "--run-id",
            "r",
            "--runs-dir",
            str(runs),
            "-q",
        ],
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    url = api_server(runs, None, (research,))
    page.goto(f"{url}/runs/r")
    wait_status(page, "completed")
    team = region(page, "Team")
    for agent in ROSTER:
        node = team.get_by_role("button", name=re.compile(rf"^{agent}: completed · \d+ steps?"))
        expect(node).to_be_visible()
    expect(team.locator("path.call-edge")).to_have_count(3)  # the orchestrator may call the others
    team.get_by_role("button", name=re.compile(r"^searcher:")).click()
    expect(region(page, "Details").get_by_role("heading", level=3)).to_have_text(re.compile(r"^searcher"))
    shoot(page, "team")
    # the start form: the same team before a run, beside the cost preview
    page.goto(f"{url}/new")
    form_team = region(page, "Team")
    for agent in ROSTER:
        expect(form_team.get_by_role("img", name=re.compile(rf"^{agent}:"))).to_be_visible()
    cost = region(page, "Cost preview")
    expect(cost.get_by_role("row", name=re.compile(r"^orchestrator"))).to_be_visible()
    expect(cost).to_contain_text("The run at most")
    expect(cost).to_contain_text("No earlier run of it")  # (a dry run is no forecast)


# ---------------------------------------------------------------- memory

NOTE = '- the build needs `make gen` first\n- <img src=x onerror="window.__xss = 3"> stays text\n'


def memory_project(tmp_path: Path) -> Path:
    """boss keeps a memory (`memory: project`) and may ask worker, who keeps none."""
    spec = workflow(model("openai"), entry="boss", task="Do the job.")
    return write_project(tmp_path, spec, {"boss": {"memory": "project", "tools": ["worker"]}, "worker": []})


def memory_script() -> Any:
    """boss writes /memories/notes.md with the memory tool, then asks worker."""
    write = calls(
        ToolCallSpec("memory", {"command": "create", "path": "/memories/notes.md", "file_text": NOTE})
    )
    return wire_script(
        {
            "boss": [write, calls(ToolCallSpec("worker", {"task": "Check."})), Reply("Done.")],
            "worker": [Reply("ok")],
        }
    )


def test_the_memory_region_shows_each_agents_files_their_text_and_the_runs_writes(
    tmp_path: Path, tabs: Any, api_server: Any
) -> None:
    """boss keeps a memory (`memory: project`) and writes a file with the memory tool, then asks
    worker, who keeps none: the run page's Memory region lists boss's file (path, size, when
    modified) with its text a button away and the write this run made; worker says it has no
    memory. `flowrun show --html` draws the same region from the file."""
    wf = memory_project(tmp_path)
    with WireServer(memory_script()) as server:
        done = run_cli([str(wf), "--run-id", "mem", "-q"], cwd=tmp_path, env=model_env(server, "openai"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / ".flowrun" / "memory" / "boss" / "notes.md").read_text() == NOTE
    report = tmp_path / "report.html"
    shown = run_cli(["show", "runs/mem", "--html", str(report)], cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    url = api_server(tmp_path / "runs")
    live, offline = tabs(), tabs()
    live.goto(f"{url}/runs/mem")
    wait_status(live, "completed")
    offline.goto(report.as_uri())
    for page in (live, offline):
        memory = region(page, "Memory")
        boss, worker = region(memory, "boss"), region(memory, "worker")
        expect(boss).to_contain_text("memory boss · project · written by the agent")
        row = boss.get_by_role("row", name=re.compile(r"^\/memories\/notes\.md"))
        expect(row).to_contain_text(f"{len(NOTE.encode())} bytes")
        expect(row.locator("time")).to_have_attribute("datetime", re.compile(r"^\d{4}-"))
        text = boss.get_by_role("region", name="/memories/notes.md")
        expect(text).to_be_hidden()
        boss.get_by_role("button", name="Show /memories/notes.md").click()
        expect(text.locator("pre")).to_have_text(NOTE)
        assert page.evaluate("window.__xss") is None  # the file's markup is text
        writes = boss.get_by_role("list").get_by_role("listitem")
        expect(writes).to_have_count(1)
        expect(writes).to_contain_text("create /memories/notes.md by boss")
        expect(writes.locator(".status")).to_have_text("success")
        expect(worker).to_contain_text("no memory: it declares no memory:")
        expect(worker.get_by_role("table")).to_have_count(0)
        boss.get_by_role("button", name="Hide /memories/notes.md").click()
        expect(text).to_be_hidden()
    shoot(live, "memory")


def test_the_memory_region_follows_a_live_runs_write(tmp_path: Path, page: Any, api_server: Any) -> None:
    """The page of a running run asks for its memories again when the run writes one."""
    wf = memory_project(tmp_path)
    gate = Gate(memory_script())
    with WireServer(gate) as server:
        proc = start_run(wf, "live", model_env(server, "openai"))
        try:
            gate.wait_arrived(1)  # boss's first model call is in flight, held
            wait_for_file(tmp_path / "runs" / "live" / "run.json", proc)
            url = api_server(tmp_path / "runs")
            page.goto(f"{url}/runs/live")
            wait_status(page, "running")
            boss = region(region(page, "Memory"), "boss")
            expect(boss).to_contain_text("no files")
            expect(boss).to_contain_text("this run wrote nothing here")
            gate.release(1)  # boss writes its file; its next model call is held
            gate.wait_arrived(2)
            expect(boss.get_by_role("row", name=re.compile(r"^\/memories\/notes\.md"))).to_be_visible()
            expect(boss.get_by_role("listitem")).to_contain_text("create /memories/notes.md by boss")
            expect(boss.get_by_role("listitem").locator(".status")).to_have_text("success")
            gate.open()
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err
            wait_status(page, "completed")
        finally:
            gate.open()


# ---------------------------------------------------------------- sound pages


def test_a_framed_page_is_refused(tmp_path: Path, browser: Any, api_server: Any) -> None:
    finished_run(tmp_path)
    url = api_server(tmp_path / "runs")
    for path in ("/", "/runs/done", "/v1/runs/done", "/ui/static/app.js"):
        answer = httpx.get(url + path, timeout=60)
        assert answer.headers["x-frame-options"] == "DENY", path
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"], path
    # a page of another site that frames the run page: the frame stays empty (that page's own
    # console says why: it is not one of ours)
    context = browser.new_context()
    try:
        other = context.new_page()
        other.set_content(f'<iframe src="{url}/runs/done" width="900" height="600"></iframe>')
        frame = other.frame_locator("iframe")
        other.wait_for_load_state("load")
        expect(frame.get_by_role("button", name="Re-run")).to_have_count(0)
        expect(frame.locator("main")).to_have_count(0)
    finally:
        context.close()


def test_a_missing_run_and_a_missing_token_are_pages_of_their_own(
    tmp_path: Path, tabs: Any, api_server: Any
) -> None:
    finished_run(tmp_path)
    url = api_server(tmp_path / "runs")
    page = tabs(strict=True)
    page.goto(f"{url}/runs/no-such-run")
    expect(page.get_by_role("alert")).to_contain_text("No run no-such-run")
    expect(page.locator("svg.timeline")).to_have_count(0)
    expect(page.get_by_role("region", name="Timeline")).to_have_count(0)
    page.get_by_role("link", name="See all runs").click()
    expect(page.locator("tr.run-row")).to_have_count(1)
    page.goto(f"{url}/batches/nope")
    expect(page.get_by_role("alert")).to_contain_text("No batch nope")

    token = "a-token-long-enough-for-the-tests-0123456789"
    guarded = api_server(tmp_path / "runs", {"FLOWRUN_HTTP_TOKEN": token})
    fresh = tabs(strict=True)  # a new tab: no token yet
    fresh.goto(f"{guarded}/runs/done")
    expect(fresh.get_by_role("alert")).to_contain_text("This server needs its token")
    expect(fresh.locator("svg.timeline")).to_have_count(0)
    fresh.get_by_label("Token").fill("not-the-token")
    fresh.get_by_role("button", name="Use this token").click()
    expect(fresh.get_by_role("alert")).to_contain_text("This token is not the server's")
    fresh.get_by_label("Token").fill(token)
    fresh.get_by_role("button", name="Use this token").click()
    wait_status(fresh, "completed")
    # the address `flowrun ui` prints carries it in its fragment
    third = tabs(strict=True)
    third.goto(f"{guarded}/#token={token}")
    expect(third.locator("tr.run-row")).to_have_count(1)
    assert "token" not in third.url


def old_runs(runs: Path, n: int, started: float) -> None:
    """`n` completed runs of `research` with long ids and long inputs, begun at `started`."""
    for i in range(n):
        folder = runs / f"a-run-with-a-rather-long-name-{i:03d}"
        folder.mkdir()
        meta = {"run_id": folder.name, "workflow": "research", "status": "completed", "updated": started + i}
        (folder / "run.json").write_text(json.dumps(meta | {"inputs": {"question": "why " * 60}}))
        start = {"seq": 1, "t": started + i, "type": "run_start", "workflow": "research", "inputs": {}}
        end = {"seq": 2, "t": started + i + 30, "type": "run_end", "status": "completed"}
        (folder / "events.jsonl").write_text(json.dumps(start) + "\n" + json.dumps(end) + "\n")


def test_a_saved_view_is_a_link_and_times_read_relative(tmp_path: Path, tabs: Any, api_server: Any) -> None:
    """The runs list's filters live in the address: the link of a filtered list opens the same
    list; each start reads relative (the absolute time on hover); the favicon is served."""
    finished_run(tmp_path)  # begun now
    runs = tmp_path / "runs"
    old_runs(runs, 3, time.time() - 40 * 86400)
    url = api_server(runs)
    page = tabs(strict=True)
    page.goto(f"{url}/")
    expect(page.locator("tr.run-row")).to_have_count(4)
    page.get_by_label("Started").select_option(label="last 24 hours")
    expect(page.locator("tr.run-row")).to_have_count(1)
    page.get_by_label("Status").select_option("completed")
    page.wait_for_url(re.compile(r"\?.*since=24h"))
    page.wait_for_url(re.compile(r"status=completed"))
    saved = page.url
    again = tabs(strict=True)
    again.goto(saved)
    expect(again.locator("tr.run-row")).to_have_count(1)
    expect(again.get_by_role("link", name="done", exact=True)).to_be_visible()
    expect(again.get_by_label("Started")).to_have_value("24h")
    started = again.locator("tr.run-row time").first
    expect(started).to_have_text(re.compile(r"just now|ago"))
    expect(started).to_have_attribute("title", re.compile(r"\d{4}-\d\d-\d\d|\d:\d\d"))
    # the older runs read in days
    again.goto(f"{url}/?q=a-run-with")
    expect(again.locator("tr.run-row")).to_have_count(3)
    expect(again.locator("tr.run-row time").first).to_have_text("40 d ago")
    icon = again.locator("link[rel='icon']").get_attribute("href")
    answer = httpx.get(url + str(icon), timeout=60)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("image/svg+xml")


def test_the_pages_fit_a_phone_and_use_a_wide_screen(tmp_path: Path, tabs: Any, api_server: Any) -> None:
    finished_run(tmp_path)
    runs = tmp_path / "runs"
    old_runs(runs, 12, 1_790_000_000.0)  # long inputs, long ids
    url = api_server(runs)
    phone = tabs(width=390, height=844, strict=True)
    phone.goto(f"{url}/")
    expect(phone.locator("tr.run-row")).to_have_count(13)
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    shoot(phone, "runs-list-390")
    phone.goto(f"{url}/runs/done")
    wait_status(phone, "completed")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    timeline = region(phone, "Timeline").bounding_box()
    details = region(phone, "Details").bounding_box()
    assert (
        timeline is not None and details is not None and details["y"] > timeline["y"] + timeline["height"] - 1
    )
    wide = tabs(width=1600, height=1000, strict=True)
    wide.goto(f"{url}/runs/done")
    wait_status(wide, "completed")
    used = wide.evaluate("document.querySelector('.run-view').getBoundingClientRect().width")
    assert used > 1500, used
    # the timeline and Details side by side
    timeline = region(wide, "Timeline").bounding_box()
    details = region(wide, "Details").bounding_box()
    assert (
        timeline is not None and details is not None and details["x"] > timeline["x"] + timeline["width"] - 1
    )
