"""Prompts that describe a team are generated from the agents the manifests actually offer as
tools: a critic added in YAML alone is named in the orchestrator's system prompt, and any
built-in role given a sub-agent describes it too."""

from __future__ import annotations

import shutil
from pathlib import Path

from support.cli import run_cli
from support.env import model_env
from support.paths import REPO
from support.project import write_files
from support.wire_server import Reply, Script, ToolCallSpec, WireServer
from test_e2e_research import MATCH

CRITIC = """\
version: 1
kind: agent
name: critic
description: Reviews a draft report for unsupported claims and gaps, and lists concrete fixes.
prompt: You are the critic of a research team. Read the draft you are given and list its problems.
tools: [read_file]
"""

ORCHESTRATOR = """\
version: 1
kind: agent
name: orchestrator
extends: orchestrator
tools: {add: [critic]}
"""


def test_a_critic_added_in_yaml_is_named_in_the_orchestrators_prompt(tmp_path: Path) -> None:
    shutil.copy(REPO / "examples" / "research.yaml", tmp_path / "research.yaml")
    write_files(tmp_path, {"agents.d/critic.yaml": CRITIC, "agents.d/orchestrator.yaml": ORCHESTRATOR})
    script = Script(
        {
            "orchestrator": [
                Reply(tool_calls=[ToolCallSpec("critic", {"task": "Review report.md"})]),
                Reply(text="Reviewed."),
            ],
            "critic": [Reply(text="No report yet: nothing to review.")],
        },
        {**MATCH, "critic": "You are the critic"},
    )
    with WireServer(script) as server:
        env = model_env(server, "anthropic")
        proc = run_cli(["research.yaml", "--question", "q", "-q", "--run-id", "r"], cwd=tmp_path, env=env)
        requests = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = requests[0]
    assert "You are the orchestrator" in first.system
    assert "- **critic**: Reviews a draft report for unsupported claims and gaps" in first.system
    for member in ("searcher", "analyzer", "writer"):
        assert f"- **{member}**: " in first.system
    assert "critic" in first.tool_names
    assert any("You are the critic" in r.system for r in requests)


def test_every_built_in_role_describes_the_team_it_is_given(tmp_path: Path) -> None:
    """The writer with a critic as a sub-agent (one tools entry) names it; without one, none of
    the built-in assistants has a team section."""
    import flowrun

    shutil.copy(REPO / "examples" / "research.yaml", tmp_path / "research.yaml")
    writer = "version: 1\nname: writer\nextends: writer\ntools: {add: [critic]}\n"
    write_files(tmp_path, {"agents.d/critic.yaml": CRITIC, "agents.d/writer.yaml": writer})
    wf = flowrun.load(tmp_path / "research.yaml")
    result = wf.run_sync({"question": "q"}, runs_dir=tmp_path / "runs", run_id="r", dry_run=True)
    assert result.ok
    prompts = {p.stem: p.read_text() for p in (tmp_path / "runs" / "r" / "prompts").glob("*.md")}
    writer_prompt = next(text for name, text in prompts.items() if name.startswith("orchestrator.writer"))
    assert "## Your team" in writer_prompt and "- **critic**: Reviews a draft report" in writer_prompt
    searcher_prompt = next(text for name, text in prompts.items() if name.startswith("orchestrator.searcher"))
    assert "## Your team" not in searcher_prompt


def test_prompts_are_recorded_and_shown(tmp_path: Path) -> None:
    """Each instance's system prompt and tools: an `agent_prompt` event, prompts/<instance>.md,
    `flowrun show --prompts [--agent NAME]`; `flowrun runs` shows the inputs."""
    import json

    args = [str(REPO / "examples" / "research.yaml"), "--question", "How do key functions work?"]
    proc = run_cli([*args, "--dry-run", "-q", "--run-id", "r"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = tmp_path / "runs" / "r"
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    prompts = [e for e in events if e["type"] == "agent_prompt"]
    assert [e["agent"] for e in prompts] == ["orchestrator", "searcher", "analyzer", "writer"]
    first = prompts[0]
    assert first["system"].startswith("You are the orchestrator")
    assert [t["name"] for t in first["tools"]][-3:] == ["searcher", "analyzer", "writer"]
    assert first["tools"][0]["parameters"]["type"] == "object"
    assert (run_dir / "prompts" / "orchestrator.md").read_text().count("You are the orchestrator") == 1
    assert len(list((run_dir / "prompts").glob("orchestrator.searcher@*.md"))) == 1

    shown = run_cli(["show", str(run_dir), "--prompts", "--agent", "searcher"])
    assert shown.returncode == 0, shown.stderr
    assert "You are a search specialist" in shown.stdout and "You are the orchestrator" not in shown.stdout
    assert "  - web_search: Search the web" in shown.stdout
    unknown = run_cli(["show", str(run_dir), "--prompts", "--agent", "nobody"])
    assert (
        unknown.returncode == 1 and "its agents: analyzer, orchestrator, searcher, writer" in unknown.stderr
    )

    listed = run_cli(["runs"], cwd=tmp_path)
    assert "inputs" in listed.stdout and "question=How do key functions work?" in listed.stdout


async def test_agents_cannot_touch_the_recorded_prompts(tmp_path: Path) -> None:
    from flowrun.runtime.durable.run_folder import PROTECTED as ENGINE_FILES
    from flowrun.tools.base import ToolContext
    from flowrun.tools.files import read_file, write_file

    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "orchestrator.md").write_text("told")
    ctx = ToolContext(
        workspace=tmp_path, base_dir=tmp_path, cwd=tmp_path, run_dir=tmp_path, protected=ENGINE_FILES
    )
    for result in (
        await write_file(ctx, path="prompts/orchestrator.md", content="x", mode="overwrite"),
        await read_file(ctx, path="prompts/orchestrator.md"),
        await write_file(ctx, path="prompts/new.md", content="x"),
    ):
        assert result.status == "error" and result.error is not None
        assert result.error.code == "PERMISSION_DENIED"
    assert (tmp_path / "prompts" / "orchestrator.md").read_text() == "told"
