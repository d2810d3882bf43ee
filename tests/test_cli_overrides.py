"""`--set PATH=VALUE`, `--model [AGENT=]MODEL` and the input options: checked before anything
runs (also in a dry run), errors name the option, and the values reach the run (the real SDKs
against the scripted wire server) and its resume."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli
from support.env import WIRES, model_env
from support.paths import REPO
from support.runs import events
from support.wire_server import WireServer
from test_e2e_research import research_script

RESEARCH = str(REPO / "examples" / "research.yaml")


@pytest.mark.parametrize(
    "args, message",
    [
        (["--question", "a", "--question", "b"], "--question is given twice"),
        (["--question", "a", "--model", "nosuch:x"], "--model nosuch:x: unknown provider 'nosuch'"),
        (["--question", "a", "--model", "gtp"], "--model gtp: unknown model 'gtp'"),
        (["--question", "a", "--model", "writter=openai:gpt-4o"], "the workflow runs no agent 'writter'"),
        (["--question", "a", "--model", "gpt", "--model", "claude"], "--model is given twice"),
        (["--question", "a", "--set", "nonsense"], "--set 'nonsense' is not PATH=VALUE"),
        (["--question", "a", "--set", "agents.writer.tools=[a"], "the value is not valid YAML"),
        (
            ["--question", "a", "--set", "agents.orchestrator.tools.serch.max_calls=1"],
            "no entry 'serch' in that list\n  hint: did you mean 'searcher'?",
        ),
    ],
)
def test_option_mistakes_are_usage_errors_even_in_a_dry_run(
    tmp_path: Path, args: list[str], message: str
) -> None:
    proc = run_cli([RESEARCH, *args, "--dry-run", "--runs-dir", str(tmp_path)])
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    "setting, where",
    [
        ("agents.writer.max_steps=many", "--set agents.writer.max_steps=many: error[wrong-type]"),
        ("agents.wrter.max_steps=3", "--set agents.wrter.max_steps=3: error[unknown-agent]"),
        ("limits.max_total_steps=0", "--set limits.max_total_steps=0: error[schema]"),
        ("models.claude.max_tokens=x", "--set models.claude.max_tokens=x: error[wrong-type]"),
        ("agents.writer.tools.0=nosuch", "--set agents.writer.tools.0=nosuch: error[unknown-tool]"),
        (
            "agents.orchestrator.tools.searcher.max_calls=none",
            "--set agents.orchestrator.tools.searcher.max_calls=none: error[bad-config]",
        ),
        ("agents.writer.max_stepz=3", "--set agents.writer.max_stepz=3: error[unknown-key]"),
        ("tools.web_search.defaults.max_results=x", "--set tools.web_search.defaults.max_results=x: error"),
    ],
)
def test_set_is_validated_like_the_yaml(tmp_path: Path, setting: str, where: str) -> None:
    proc = run_cli([RESEARCH, "--question", "q", "--dry-run", "--set", setting, "--runs-dir", str(tmp_path)])
    assert proc.returncode == 1, proc.stderr
    assert where in proc.stderr, proc.stderr
    assert not any(tmp_path.iterdir())


@pytest.mark.fresh_too
def test_set_changes_an_agents_limits_and_resume_keeps_it(tmp_path: Path) -> None:
    args = [RESEARCH, "--question", "q", "--dry-run", "-q", "--runs-dir", str(tmp_path), "--run-id", "r"]
    args += ["--set", "agents.searcher.max_steps=2", "--set", "limits.max_total_steps=50"]
    proc = run_cli(args)
    assert proc.returncode == 0, proc.stderr
    run_dir = tmp_path / "r"
    ended = [e for e in events(run_dir) if e["type"] == "agent_end" and e["agent"] == "searcher"]
    assert [(e["status"], e["steps"]) for e in ended] == [("max_steps", 2)]
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["options"]["overrides"] == ["agents.searcher.max_steps=2", "limits.max_total_steps=50"]
    start = events(run_dir)[0]
    assert start["type"] == "run_start" and start["options"] == meta["options"]
    # make it look crashed before its end; resume loads the workflow with the same --set
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    (run_dir / "events.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    (run_dir / "run.json").write_text(json.dumps({**meta, "status": "running"}))
    proc = run_cli(["resume", str(run_dir), "-q"])
    assert proc.returncode == 0, proc.stderr
    assert json.loads((run_dir / "run.json").read_text())["options"] == meta["options"]


def test_set_names_a_list_entry(tmp_path: Path) -> None:
    """`tools.searcher.max_steps`: the entry named `searcher` (a bare name made a mapping, or a
    `- write_file: {...}` entry's config), as the instructor/worker round limit is set."""
    args = [RESEARCH, "--question", "q", "--dry-run", "-q", "--runs-dir", str(tmp_path), "--run-id", "r"]
    args += ["--set", "agents.orchestrator.tools.searcher.max_steps=2"]
    args += ["--set", "agents.orchestrator.tools.write_file.write_paths=[only-here.md]"]
    proc = run_cli(args)
    assert proc.returncode == 0, proc.stderr
    logged = events(tmp_path / "r")
    ended = [
        (e["status"], e["steps"]) for e in logged if e["type"] == "agent_end" and e["agent"] == "searcher"
    ]
    assert ended == [("max_steps", 2)]
    calls = [e for e in logged if e["type"] == "tool_call" and e["agent"] == "orchestrator"]
    # the dry run writes where the entry's (changed) write_paths allow
    assert [e["arguments"]["path"] for e in calls if e["tool"] == "write_file"] == ["only-here.md"]


def test_set_model_and_per_agent_model_reach_the_wire(tmp_path: Path) -> None:
    with WireServer(research_script()) as server:
        env = model_env(server, *WIRES)
        args = [RESEARCH, "--question", "How does Python sort?", "--runs-dir", str(tmp_path), "--run-id", "r"]
        args += ["--set", "models.claude.model=claude-opus-4-1", "--model", "writer=openai:gpt-test"]
        proc = run_cli(args, cwd=tmp_path, env=env)
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    by_api = {(r.api, r.body["model"]) for r in requests}
    assert ("anthropic", "claude-opus-4-1") in by_api and ("openai", "gpt-test") in by_api
    writer = [r for r in requests if "You are the writer" in r.system]
    assert writer and all(r.api == "openai" for r in writer)
    others = [r for r in requests if "You are the writer" not in r.system]
    assert others and all(r.api == "anthropic" for r in others)
    meta = json.loads((tmp_path / "r" / "run.json").read_text())
    assert meta["options"]["agent_models"] == {"writer": "openai:gpt-test"}


def test_python_api_overrides_and_models(tmp_path: Path) -> None:
    import flowrun

    wf = flowrun.load(RESEARCH, {"agents.searcher.max_steps": 2, "models.claude.model": "claude-opus-4-1"})
    assert wf.project.agents["searcher"].spec.max_steps == 2
    assert wf.spec.models["claude"].model == "claude-opus-4-1"
    with pytest.raises(flowrun.ManifestInvalid) as caught:
        flowrun.load(RESEARCH, ["agents.searcher.max_steps=-1"])
    assert caught.value.errors[0].file == "--set agents.searcher.max_steps=-1"
    with pytest.raises(flowrun.UsageError):
        wf.run_sync({"question": "q"}, runs_dir=tmp_path, dry_run=True, model={"nobody": "gpt"})
    result = wf.run_sync({"question": "q"}, runs_dir=tmp_path, dry_run=True, model={"*": "gpt"})
    assert result.ok


def test_api_overrides_are_recorded_as_texts_that_read_back_the_same(tmp_path: Path) -> None:
    """A run records its overrides as `--set` texts (run.json); a resume, a batch's worker
    processes and Ray workers load them again, so each must read back as the value given."""
    import flowrun

    given = {
        "agents.searcher.description": "two\nlines, a # and: a colon",
        "agents.writer.description": "yes",  # YAML would read a bare yes as true
        "agents.searcher.max_steps": 3,
        "agents.writer.tools": ["write_file", "read_file"],
    }
    result = flowrun.load(RESEARCH, given).run_sync({"question": "q"}, runs_dir=tmp_path, dry_run=True)
    assert result.ok, result.message
    texts = json.loads((result.run_dir / "run.json").read_text())["options"]["overrides"]
    again = flowrun.load(RESEARCH, texts)
    assert {".".join(o.path): o.value for o in again.overrides} == given
