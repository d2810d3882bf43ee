"""One options object from the command line to run.json: every command that starts runs (`run`,
the WORKFLOW.yaml shorthand, `chat`, `record`, `batch`, `serve mcp`) and the Python API record
the same `options` for the same flags; a resume runs with the recorded options (and may change
only some); a batch's worker processes run with the options of the in-process batch; a
misspelt option name is refused with a hint."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.cli import flowrun_cmd, run_cli
from support.env import WIRES, clean_env, model_env
from support.paths import REPO
from support.project import write_files
from support.runs import events
from support.runs import folders as run_folders
from support.wire_server import WireServer
from test_e2e_research import research_script

import flowrun

RESEARCH = REPO / "examples" / "research.yaml"
WORKFLOW = """version: 1
kind: workflow
name: summarize
inputs:
  topic: {description: What to summarize.}
models: {m: {provider: test, model: t}}
default_model: m
entry: writer
output: report.md
"""
WRITER = "version: 1\nkind: agent\nname: writer\nprompt: Write the report.\ntools: [write_file, read_file]\n"

# the flags every command that starts runs has, and the options they make
COMMON = ["--dry-run", "--model", "openai:gpt-test", "--model", "writer=m", "--sandbox", "off", "--yes"]
DEFAULTS = flowrun.RunOptions().to_dict()
EXPECTED = {
    **DEFAULTS,
    "model": "openai:gpt-test",
    "agent_models": {"writer": "m"},
    "dry_run": True,
    "sandbox": "off",
    "yes": True,
}


def project(folder: Path) -> Path:
    return (
        write_files(folder, {"agents.d/writer.yaml": WRITER, "summarize.yaml": WORKFLOW}) / "summarize.yaml"
    )


def recorded(run_dir: Path) -> dict[str, Any]:
    """run.json's options, after checking that the log holds the same: in its run_start event,
    or in the last run_resumed one (a resume may change some)."""
    meta = json.loads((run_dir / "run.json").read_text())
    starts = [e for e in events(run_dir) if e["type"] in ("run_start", "run_resumed")]
    assert starts[0]["type"] == "run_start" and starts[-1]["options"] == meta["options"]
    options: dict[str, Any] = meta["options"]
    return options


def served_run(workflow: Path, flags: list[str], runs: Path) -> Path:
    """One call of the workflow's tool through `flowrun serve mcp` over stdio: its run folder."""
    from mcp import Client, StdioServerParameters

    command, *args = flowrun_cmd()
    params = StdioServerParameters(
        command=command,
        args=[*args, "serve", "mcp", str(workflow), "--runs-dir", str(runs), *flags],
        env=clean_env(),
        cwd=workflow.parent,
    )

    async def call() -> Any:
        async with Client(params) as client:
            return await client.call_tool("summarize", {"topic": "tides"})

    result = asyncio.run(asyncio.wait_for(call(), 120))
    assert not result.is_error, result.content
    return Path(result.structured_content["run_dir"])


def test_every_command_records_the_same_options_for_the_same_flags(tmp_path: Path) -> None:
    workflow = project(tmp_path / "p")
    folders: dict[str, Path] = {}
    proc = run_cli(["run", str(workflow), "--topic", "t", "--run-id", "run", *COMMON], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    folders["run"] = tmp_path / "runs" / "run"
    proc = run_cli([str(workflow), "--topic", "t", "--run-id", "short", *COMMON], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    folders["shorthand"] = tmp_path / "runs" / "short"
    chat = subprocess.run(
        [*flowrun_cmd(), "chat", str(workflow), "--topic", "t", "--run-id", "chat", *COMMON],
        cwd=tmp_path,
        env=clean_env(),
        input="write the report\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert chat.returncode == 0, chat.stderr
    folders["chat"] = tmp_path / "runs" / "chat"
    test_file = tmp_path / "tests" / "tides.flowrun.yaml"
    proc = run_cli(["record", str(test_file), str(workflow), "--topic", "t", *COMMON], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    folders["record"] = tmp_path / "tests" / "cassettes" / "tides"
    items = tmp_path / "items.jsonl"
    items.write_text('{"topic": "a"}\n')
    proc = run_cli(["batch", str(workflow), str(items), "--out", str(tmp_path / "b"), *COMMON], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (folders["batch"],) = run_folders(tmp_path / "b" / "runs")
    folders["serve mcp"] = served_run(workflow, COMMON, tmp_path / "served")
    wf = flowrun.load(workflow)
    options = flowrun.RunOptions(model="openai:gpt-test", agent_models={"writer": "m"}, dry_run=True)
    api_run = wf.run_sync({"topic": "t"}, options, runs_dir=tmp_path / "api", sandbox="off", yes=True)
    folders["Python API"] = api_run.run_dir
    mapping = {"*": "openai:gpt-test", "writer": "m"}  # the model mapping Workflow.run always took
    again = wf.run_sync(
        {"topic": "t"}, runs_dir=tmp_path / "api", model=mapping, dry_run=True, sandbox="off", yes=True
    )
    folders["Python API, keywords"] = again.run_dir
    for name, folder in folders.items():
        assert recorded(folder) == EXPECTED, name
    # what run.json records reads back into the same object
    assert flowrun.RunOptions.from_dict(EXPECTED) == options.changed(sandbox="off", yes=True)


def test_the_options_only_some_commands_have_are_recorded_alike(tmp_path: Path) -> None:
    workflow = project(tmp_path / "p")
    work = tmp_path / "work"
    more = ["--set", "agents.writer.max_steps=4", "--stream", "--no-thinking", "--workdir", str(work)]
    proc = run_cli(["run", str(workflow), "--topic", "t", "--run-id", "r", *COMMON, *more], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    chat = subprocess.run(
        [*flowrun_cmd(), "chat", str(workflow), "--topic", "t", "--run-id", "c", *COMMON, *more],
        cwd=tmp_path,
        env=clean_env(),
        input="write the report\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert chat.returncode == 0, chat.stderr
    expected = {
        **EXPECTED,
        "overrides": ["agents.writer.max_steps=4"],
        "stream": True,
        "no_thinking": True,
        "workdir": str(work.resolve()),
    }
    assert recorded(tmp_path / "runs" / "r") == recorded(tmp_path / "runs" / "c") == expected
    items = tmp_path / "items.jsonl"
    items.write_text('{"topic": "a"}\n')
    batch = [
        "batch",
        str(workflow),
        str(items),
        "--out",
        str(tmp_path / "b"),
        *COMMON,
        *more[:3],
        "--no-stream",
    ]
    proc = run_cli(batch, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (item,) = run_folders(tmp_path / "b" / "runs")
    assert recorded(item) == {**EXPECTED, "overrides": ["agents.writer.max_steps=4"], "stream": False}
    meta = json.loads((tmp_path / "b" / "batch.json").read_text())
    assert {k: meta["options"][k] for k in EXPECTED} == recorded(item)  # batch.json: the same names
    shown = run_cli(["show", str(tmp_path / "runs" / "r")], cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert (
        "options: --dry-run --model openai:gpt-test --model writer=m --set agents.writer.max_steps=4 "
        f"--stream --no-thinking --sandbox off --yes --workdir {work.resolve()}" in shown.stdout
    )


def test_batch_worker_processes_run_items_with_the_in_process_options(tmp_path: Path) -> None:
    workflow = project(tmp_path / "p")
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"topic": t}) + "\n" for t in "abcd"))
    flags = [*COMMON, "--set", "agents.writer.max_steps=4", "--no-stream", "-c", "4"]
    seen: dict[str, list[dict[str, Any]]] = {}
    for processes in ("1", "2"):
        out = tmp_path / f"out{processes}"
        proc = run_cli(
            ["batch", str(workflow), str(items), "--out", str(out), "--processes", processes, *flags]
        )
        assert proc.returncode == 0, proc.stderr
        seen[processes] = [recorded(folder) for folder in sorted(run_folders(out / "runs"))]
    expected = {**EXPECTED, "overrides": ["agents.writer.max_steps=4"], "stream": False}
    assert seen["1"] == seen["2"] == [expected] * 4
    # the Python API's batch with a per-item budget: the budget is each run's limits.max_cost_usd
    summary = asyncio.run(
        flowrun.run_batch(
            workflow,
            items,
            flowrun.RunOptions(overrides=["agents.writer.max_steps=4"]),
            out=tmp_path / "api",
            processes=2,
            concurrency=2,
            dry_run=True,
            limits={"max_total_steps": 9},
        )
    )
    assert summary.ok
    for folder in run_folders(tmp_path / "api" / "runs"):
        assert recorded(folder) == {
            **DEFAULTS,
            "dry_run": True,
            "overrides": ["agents.writer.max_steps=4"],
            "limits": {"max_total_steps": 9},
        }


# ---------------------------------------------------------------- resume


def cut_after(run_dir: Path, keep: int) -> None:
    """Make the run look killed after its first `keep` events."""
    lines = (run_dir / "events.jsonl").read_text().splitlines()[:keep]
    (run_dir / "events.jsonl").write_text("\n".join(lines) + "\n")
    meta = json.loads((run_dir / "run.json").read_text())
    (run_dir / "run.json").write_text(json.dumps({**meta, "status": "running"}))


def first_searcher_answer(run_dir: Path) -> int:
    return next(
        i + 1
        for i, e in enumerate(events(run_dir))
        if e["type"] == "model_response" and e["agent"] == "searcher"
    )


def test_a_dry_run_resumes_as_a_dry_run_with_its_set_and_models(tmp_path: Path) -> None:
    args = ["run", str(RESEARCH), "--question", "q", "--runs-dir", str(tmp_path), "--run-id", "r", "-q"]
    args += ["--dry-run", "--set", "agents.searcher.max_steps=2", "--model", "writer=openai:gpt-test"]
    proc = run_cli(args)
    assert proc.returncode == 0, proc.stderr
    run_dir = tmp_path / "r"
    before = recorded(run_dir)
    assert before["dry_run"] and before["overrides"] == ["agents.searcher.max_steps=2"]
    cut_after(run_dir, first_searcher_answer(run_dir))
    # no key in the environment: only a dry run can go on; the searcher still stops after 2 steps
    proc = run_cli(["resume", str(run_dir), "-q"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ended = [e for e in events(run_dir) if e["type"] == "agent_end" and e["agent"] == "searcher"]
    assert [(e["status"], e["steps"]) for e in ended] == [("max_steps", 2)]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    assert recorded(run_dir) == before
    # a resume may change the sandbox (and yes, verbosity, limits, stream), recorded from then on
    cut_after(run_dir, first_searcher_answer(run_dir))
    proc = run_cli(["resume", str(run_dir), "-q", "--sandbox", "off", "--yes"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert recorded(run_dir) == {**before, "sandbox": "off", "yes": True}
    # without run.json, the log's last run_resumed event says what the run went on with
    resumed = max(i for i, e in enumerate(events(run_dir)) if e["type"] == "run_resumed")
    cut_after(run_dir, resumed + 2)
    (run_dir / "run.json").unlink()
    proc = run_cli(["resume", str(run_dir), "-q"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert recorded(run_dir) == {**before, "sandbox": "off", "yes": True}


def test_a_resume_calls_the_recorded_models(tmp_path: Path) -> None:
    with WireServer(research_script()) as server:
        keys = model_env(server, *WIRES)
        args = [str(RESEARCH), "--question", "How does Python sort?", "--runs-dir", str(tmp_path)]
        args += ["--run-id", "r", "-q", "--model", "writer=openai:gpt-test"]
        proc = run_cli(args, cwd=tmp_path, env=keys)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        run_dir = tmp_path / "r"
        writer = next(
            i for i, e in enumerate(events(run_dir)) if e["type"] == "agent_start" and e["agent"] == "writer"
        )
        cut_after(run_dir, writer)  # killed just before the writer started
        first = len(server.requests)
        proc = run_cli(["resume", str(run_dir), "-q"], cwd=tmp_path, env=keys)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        later = server.requests[first:]
    by_writer = [r for r in later if "You are the writer" in r.system]
    assert by_writer and all((r.api, r.body["model"]) == ("openai", "gpt-test") for r in by_writer)
    assert all(r.api == "anthropic" for r in later if r not in by_writer)
    assert recorded(run_dir)["agent_models"] == {"writer": "openai:gpt-test"}


# ---------------------------------------------------------------- mistakes


def test_a_misspelt_option_is_refused_with_a_hint(tmp_path: Path) -> None:
    wf = flowrun.load(RESEARCH)
    for given, meant in (
        ("dry_rn", "dry_run"),
        ("modle", "model"),
        ("runs_dri", "runs_dir"),
        ("on_evnt", "on_event"),
    ):
        with pytest.raises(flowrun.UsageError) as caught:
            wf.run_sync({"question": "q"}, runs_dir=tmp_path, **{given: True})
        assert caught.value.message == f"unknown run option '{given}'"
        assert caught.value.hint == f"did you mean '{meant}'?"
    assert not tmp_path.exists() or not any(tmp_path.iterdir())  # nothing ran
    with pytest.raises(flowrun.UsageError, match="unknown sandbox mode 'of'"):
        flowrun.RunOptions(sandbox="of")  # type: ignore[arg-type]
    with pytest.raises(flowrun.UsageError) as caught:
        asyncio.run(flowrun.run_batch(RESEARCH, tmp_path / "none.jsonl", dryrun=True))
    assert caught.value.hint == "did you mean 'dry_run'?"


def test_a_resume_keeps_what_it_cannot_change(tmp_path: Path) -> None:
    result = flowrun.load(RESEARCH).run_sync({"question": "q"}, runs_dir=tmp_path, run_id="r", dry_run=True)
    assert result.ok
    cut_after(result.run_dir, first_searcher_answer(result.run_dir))
    with pytest.raises(flowrun.UsageError) as caught:
        asyncio.run(flowrun.resume(result.run_dir, model="openai:gpt-4o"))
    assert caught.value.message == "a resumed run keeps its recorded model"
    with pytest.raises(flowrun.UsageError) as caught:
        asyncio.run(flowrun.resume(result.run_dir, sandbx="off"))
    assert caught.value.hint == "did you mean 'sandbox'?"
    with pytest.raises(flowrun.UsageError, match="a replay keeps the recorded dry_run"):
        asyncio.run(flowrun.replay(result.run_dir, dry_run=False))
    resumed = asyncio.run(flowrun.resume(result.run_dir, sandbox="off", limits={"max_total_steps": 500}))
    assert resumed.ok
    assert recorded(result.run_dir) == {
        **DEFAULTS,
        "dry_run": True,
        "sandbox": "off",
        "limits": {"max_total_steps": 500},
    }
