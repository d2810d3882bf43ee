"""The designs' own shapes: the research roster's web_search defaults and structured results, the
v2 design's two dashboard tools declared in YAML, a skills library in the init/execute design's
shape (skills.json, SKILL.md without front matter, snake_case names, sop/), `validate FILE`
reporting that file's problems and not its neighbours'."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli
from support.paths import REPO
from support.project import write_files
from support.runs import events
from test_web_search import make_ctx
from test_web_search import tavily_server as tavily_server  # the fixture, used by name

from flowrun.tools.web_search import web_search

EXAMPLES = REPO / "examples"


# ---------------------------------------------------------------- web_search


def test_the_research_rosters_search_with_the_designs_defaults(tmp_path: Path) -> None:
    """The searcher (research.yaml) and the v2 researcher offer web_search with 10 results and
    advanced depth as defaults; a call that leaves them out gets them, and the result carries
    the whole search as its data."""
    for workflow in ("research", "research_v2"):
        args = [str(EXAMPLES / f"{workflow}.yaml"), "--question", "sorting key functions", "--dry-run"]
        proc = run_cli([*args, "--run-id", workflow, "-q"], cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        found = events(tmp_path / "runs" / workflow)
        told = [
            t for e in found if e["type"] == "agent_prompt" for t in e["tools"] if t["name"] == "web_search"
        ]
        props = told[0]["parameters"]["properties"]
        assert (props["max_results"]["default"], props["search_depth"]["default"]) == (10, "advanced")
        [call] = [e for e in found if e["type"] == "tool_call" and e["tool"] == "web_search"]
        assert "max_results" not in call["arguments"]
        [result] = [e["result"] for e in found if e["type"] == "tool_result" and e["tool"] == "web_search"]
        data = result["data"]
        assert (data["max_results"], data["search_depth"], data["query"]) == (
            10,
            "advanced",
            "sorting key functions",
        )
        assert data["backend"] == "corpus" and data["documents"] > 10 and data["results"]


async def test_configured_defaults_reach_tavily(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tavily_server: tuple[str, list[dict[str, Any]]]
) -> None:
    base_url, requests = tavily_server
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test-key")
    ctx = make_ctx(tmp_path, [EXAMPLES], api_base_url=base_url, max_results=10, search_depth="advanced")
    result = await web_search(ctx, query="agent frameworks")
    assert result.status == "success", result.text
    assert (requests[0]["body"]["max_results"], requests[0]["body"]["search_depth"]) == (10, "advanced")
    assert len(result.data["results"]) == 10
    assert result.data["results"][0]["content"] == "Snippet 0  about\nagent frameworks"
    assert result.context["params_input"] == {
        "query": "agent frameworks",
        "max_results": 10,
        "search_depth": "advanced",
    }


# ---------------------------------------------------------------- dashboards


DASHBOARD_AGENT = """\
version: 1
kind: agent
name: planner
prompt: Plan.
context:
  strategy: dashboard
  dashboards: {overall: overall.md, current: current.md}
tools: [update_overall_dashboard, update_current_dashboard, finish]
"""
PLAN_WORKFLOW = """\
version: 1
kind: workflow
name: plan
models: {s: {provider: scripted, model: s, script: plan.script.yaml}}
default_model: s
entry: planner
task: Plan the trip.
"""


def test_the_two_dashboard_tools_of_the_design_in_a_project_of_ones_own(tmp_path: Path) -> None:
    """A project that lists the v2 design's tools by name (shipped with the examples) gets one
    tool per dashboard: the model gives only the content, and after the update the history is
    the task, then each dashboard as a message of its own."""
    write_files(
        tmp_path,
        {
            "plan.yaml": PLAN_WORKFLOW,
            "agents.d/planner.yaml": DASHBOARD_AGENT,
            "plan.script.yaml": """\
                version: 1
                kind: script
                agents:
                  planner:
                    - tool_calls: [{name: update_current_dashboard, arguments: {content: "# Now\\nbooking"}}]
                    - tool_calls: [{name: finish, arguments: {result: planned}}]
                """,
        },
    )
    checked = run_cli(["validate", "--strict", "."], cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout
    proc = run_cli(["plan.yaml", "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = tmp_path / "runs" / "r"
    assert (run_dir / "current.md").read_text() == "# Now\nbooking"
    found = events(run_dir)
    [prompt] = [e for e in found if e["type"] == "agent_prompt"]
    schemas = {t["name"]: t["parameters"] for t in prompt["tools"]}
    assert schemas["update_current_dashboard"]["required"] == ["content"]
    assert list(schemas["update_current_dashboard"]["properties"]) == ["content"]
    [reset] = [e for e in found if e["type"] == "context_reset"]
    assert reset["messages_after"] == 3  # the task, overall, current
    asked = [e for e in found if e["type"] == "model_request"]
    assert asked[1]["messages"] == 3


def test_a_dashboard_tool_for_an_undeclared_dashboard_is_an_error(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "plan.yaml": PLAN_WORKFLOW,
            "agents.d/planner.yaml": DASHBOARD_AGENT.replace("current: current.md", "now: now.md"),
        },
    )
    proc = run_cli(["validate", "."], cwd=tmp_path)
    assert proc.returncode == 1
    assert (
        "agents.d/planner.yaml:8:35: error[unknown-dashboard]: update_current_dashboard updates the "
        "dashboard 'current', which the agent's context does not declare" in proc.stdout
    ), proc.stdout


# ---------------------------------------------------------------- the skills library


LIBRARY = {
    "skills/skills.json": json.dumps(
        {
            "skills": {
                "business_rules_authoring": {
                    "title": "Business rules",
                    "description": "teach Claude how to write comprehensive business rules documents",
                    "category": "init_agent",
                    "path": "business_rules_authoring/SKILL.md",
                },
                "scenario_design_sop": {
                    "title": "Scenario design SOP",
                    "description": "teach Claude the complete scenario design workflow",
                    "category": "init_agent",
                    "path": "scenario_design_sop/SKILL.md",
                },
            }
        },
        indent=2,
    ),
    "skills/business_rules_authoring/SKILL.md": "# Business rules\n\nOne rule per line, numbered.\n",
    "skills/business_rules_authoring/sop/checklist.md": "- [ ] every rule has an id\n",
    "skills/business_rules_authoring/templates/rules.md": "## Rules\n- R1 ...\n",
    "skills/scenario_design_sop/SKILL.md": "# Scenario design\n\nDesign, then hand over.\n",
    "skills/scenario_design_sop/sop/steps.md": "1. read the task\n",
    "design.yaml": """\
        version: 1
        kind: workflow
        name: design
        models: {s: {provider: scripted, model: s, script: design.script.yaml}}
        default_model: s
        entry: designer
        """,
    "agents.d/designer.yaml": """\
        version: 1
        kind: agent
        name: designer
        prompt: Design.
        tools:
          - use_skill: {skills: [business_rules_authoring, scenario_design_sop]}
        """,
    "design.script.yaml": """\
        version: 1
        kind: script
        agents:
          designer:
            - tool_calls: [{name: use_skill, arguments: {skill: business_rules_authoring}}]
            - text: done
        """,
}


def test_a_library_in_the_init_execute_designs_shape_validates_clean_and_reads(tmp_path: Path) -> None:
    write_files(tmp_path, LIBRARY)
    proc = run_cli(["validate", "--strict", "."], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert "0 error(s), 0 warning(s)" in proc.stdout
    proc = run_cli(["design.yaml", "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    [result] = [e["result"] for e in events(tmp_path / "runs" / "r") if e["type"] == "tool_result"]
    text = result["text"]
    assert text.startswith("# Skill: business_rules_authoring\nteach Claude how to write comprehensive")
    assert "## sop/checklist.md\n\n- [ ] every rule has an id" in text
    assert "## templates/rules.md" in text


def test_a_broken_index_is_reported_at_its_lines(tmp_path: Path) -> None:
    broken = dict(LIBRARY)
    index = json.loads(LIBRARY["skills/skills.json"])
    index["skills"]["ghost"] = {"description": "nowhere", "path": "ghost/SKILL.md"}
    index["skills"]["scenario_design_sop"].pop("description")
    broken["skills/skills.json"] = json.dumps(index, indent=2)
    write_files(tmp_path, broken)
    proc = run_cli(["validate", "."], cwd=tmp_path)
    assert proc.returncode == 1
    out = proc.stdout
    assert "skills/skills.json:9:1: error[missing-key]: skill 'scenario_design_sop' has no description" in out
    assert "skills/skills.json:14:1: error[missing-path]: skill 'ghost': ghost/SKILL.md is not" in out
    (tmp_path / "skills" / "skills.json").write_text('{"skills": {,}}')
    proc = run_cli(["validate", "."], cwd=tmp_path)
    assert "skills/skills.json:1:13: error[invalid]: skills.json is not valid JSON" in proc.stdout


def test_the_init_execute_designs_eight_skills_ship_with_their_sop(tmp_path: Path) -> None:
    index = json.loads((EXAMPLES / "skills" / "skills.json").read_text())["skills"]
    design = {
        "business_rules_authoring",
        "format_specification_guide",
        "scenario_design_sop",
        "init_to_execute_context",
        "tool_implementation",
        "checker_implementation",
        "sample_authoring",
        "execute_to_init_context",
    }
    assert set(index) == design
    for name, entry in index.items():
        folder = EXAMPLES / "skills" / name
        assert entry["path"] == f"{name}/SKILL.md" and not (folder / "SKILL.md").read_text().startswith("---")
        for part in ("sop", "templates", "examples"):
            assert any((folder / part).iterdir()), (name, part)
    # init reads the design's init skills, execute its execute skills (each also the other's handoff)
    listed = {}
    for agent in ("init", "execute"):
        text = (EXAMPLES / "agents.d" / f"{agent}.yaml").read_text()
        listed[agent] = {n for n in design if n in text}
    assert {n for n, e in index.items() if e["category"] == "init_agent"} <= listed["init"]
    assert {n for n, e in index.items() if e["category"] == "execute_agent"} <= listed["execute"]


# ---------------------------------------------------------------- validate FILE


AGENT = "version: 1\nkind: agent\nname: {name}\nprompt: Hi.\ntools: [{tool}]\n"


def test_validate_of_one_file_reports_its_problems_not_its_neighbours(tmp_path: Path) -> None:
    write_files(
        tmp_path,
        {
            "good.yaml": """\
                version: 1
                kind: workflow
                name: good
                models: {s: {provider: test, model: t}}
                default_model: s
                entry: helper
                """,
            "bad.yaml": """\
                version: 1
                kind: workflow
                name: bad
                models: {s: {provider: test, model: t}}
                default_model: s
                entry: broken
                """,
            "agents.d/helper.yaml": AGENT.format(name="helper", tool="read_file"),
            "agents.d/broken.yaml": AGENT.format(name="broken", tool="raed_file"),
            "agents.d/idle.yaml": "version: 1\nkind: agent\nname: idle\nprompt: '{{ nope }'\n",
            "skills/loose/SKILL.md": "---\nname: other\ndescription: d\n---\nx\n",
        },
    )
    good = run_cli(["validate", "--strict", "good.yaml"], cwd=tmp_path)
    assert good.returncode == 0, good.stdout
    bad = run_cli(["validate", "bad.yaml"], cwd=tmp_path)
    assert bad.returncode == 1
    assert "agents.d/broken.yaml:5:9: error[unknown-tool]" in bad.stdout
    assert "idle.yaml" not in bad.stdout and "SKILL.md" not in bad.stdout, bad.stdout
    alone = run_cli(["validate", "agents.d/broken.yaml"], cwd=tmp_path)
    assert "broken.yaml" in alone.stdout and "idle.yaml" not in alone.stdout, alone.stdout
    everything = run_cli(["validate", "."], cwd=tmp_path)
    for name in ("broken.yaml", "idle.yaml", "skills/loose/SKILL.md"):
        assert name in everything.stdout, everything.stdout
