"""use_skill over real skills folders: SKILL.md front matter, skills.json, templates/ and
examples/, overrides along the search path, unknown skills, and the dynamic enum."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from flowrun.tools.base import ToolContext, tool_properties
from flowrun.tools.skills import parse_front_matter, skill_parameters, use_skill


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project with two folder skills (one with templates/examples) and a skills.json entry."""
    root = tmp_path / "project"
    skills = root / "skills"
    write(
        skills / "business_rules" / "SKILL.md",
        "---\nname: business_rules_authoring\ndescription: >-\n  How to write a business rules\n"
        "  document.\nlicense: MIT\n---\n\n# Business rules\n\n1. State each rule once.\n",
    )
    write(skills / "business_rules" / "templates" / "rules.md", "# Rules of {{scenario}}\n\n## Rule 1\n")
    write(skills / "business_rules" / "examples" / "airline.md", "# Airline rules\n\nRefunds within 24 h.\n")
    write(skills / "business_rules" / "examples" / "huge.md", "x" * 10_000)
    write(skills / "business_rules" / "sop" / "checklist.md", "- [ ] every rule has an id\n")
    (skills / "business_rules" / "templates" / "logo.bin").write_bytes(b"\x00\x01\x02")
    write(skills / "sample_authoring" / "SKILL.md", "# Samples\n\nWrite samples as JSON files.\n")
    write(skills / "guides" / "format.md", "# Format guide\n\nUse ISO dates.\n")
    write(
        skills / "skills.json",
        json.dumps(
            {
                "skills": {
                    "format_specification_guide": {
                        "title": "Format guide",
                        "description": "define data format specifications",
                        "path": "guides/format.md",
                    },
                    "escape": {"description": "points outside", "path": "../../secret.md"},
                    "ghost": {"description": "file missing", "path": "nowhere/SKILL.md"},
                }
            }
        ),
    )
    write(tmp_path / "secret.md", "SECRET")
    return root


def make_ctx(tmp_path: Path, search_path: list[Path], **config: Any) -> ToolContext:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return ToolContext(
        workspace=workspace,
        base_dir=workspace,
        cwd=workspace,
        run_dir=tmp_path,
        tool_name="use_skill",
        config={"max_file_bytes": 4000, "max_total_bytes": 16000, "max_read_bytes": 100000, **config},
        search_path=search_path,
    )


async def test_folder_skill_with_front_matter_templates_and_examples(tmp_path: Path, project: Path) -> None:
    result = await use_skill(make_ctx(tmp_path, [project]), skill="business_rules_authoring")
    assert result.status == "success", result.text
    text = result.text
    assert text.startswith("# Skill: business_rules_authoring\nHow to write a business rules document.")
    assert "1. State each rule once." in text
    assert "---" not in text.split("## ")[0]  # front matter is not repeated as text
    assert "## templates/rules.md\n\n# Rules of {{scenario}}" in text
    assert "Refunds within 24 h." in text
    assert "x" * 5000 not in text  # too big to include: listed only
    assert result.data["files"] == [
        "examples/airline.md",
        "examples/huge.md",
        "sop/checklist.md",
        "templates/logo.bin",
        "templates/rules.md",
    ]
    # the SOP comes with the guide, as templates and examples do (the init/execute design's sop/)
    assert result.data["included"] == ["examples/airline.md", "sop/checklist.md", "templates/rules.md"]
    assert "## sop/checklist.md\n\n- [ ] every rule has an id" in text
    assert "- examples/huge.md\n" in text
    assert "- sop/checklist.md (included above)" in text
    assert "file=<path above>" in text
    assert result.data["metadata"]["license"] == "MIT"
    assert result.context["params_input"] == {"skill": "business_rules_authoring", "file": None}


async def test_total_budget_caps_included_files(tmp_path: Path, project: Path) -> None:
    ctx = make_ctx(tmp_path, [project], max_total_bytes=45)
    result = await use_skill(ctx, skill="business_rules_authoring")
    assert result.data["included"] == ["examples/airline.md"]  # 38 bytes; rules.md would pass 45


async def test_read_one_file_of_a_skill(tmp_path: Path, project: Path) -> None:
    ctx = make_ctx(tmp_path, [project])
    result = await use_skill(ctx, skill="business_rules_authoring", file="examples/huge.md")
    assert result.status == "success"
    assert result.text.endswith("x" * 10_000)
    cut = await use_skill(
        make_ctx(tmp_path, [project], max_read_bytes=100),
        skill="business_rules_authoring",
        file="examples/huge.md",
    )
    assert cut.status == "partial"
    assert "[cut at 100 of 10000 bytes]" in cut.text
    for bad, code in (
        ("../sample_authoring/SKILL.md", "ACCESS_DENIED"),
        ("nope.md", "NOT_FOUND"),
        ("templates/logo.bin", "BINARY_FILE"),
    ):
        res = await use_skill(ctx, skill="business_rules_authoring", file=bad)
        assert res.error is not None and res.error.code == code, bad


async def test_skill_without_front_matter(tmp_path: Path, project: Path) -> None:
    result = await use_skill(make_ctx(tmp_path, [project]), skill="sample_authoring")
    assert result.status == "success"
    assert result.data["description"] == "Write samples as JSON files."
    assert "# Samples" in result.text
    assert result.data["files"] == []


async def test_skills_json_entry(tmp_path: Path, project: Path) -> None:
    result = await use_skill(make_ctx(tmp_path, [project]), skill="format_specification_guide")
    assert result.status == "success"
    assert "Use ISO dates." in result.text
    assert result.data["description"] == "define data format specifications"
    assert result.data["files"] == []  # a single-file skill: no resources of the guides/ folder


async def test_unknown_skill_lists_the_available_ones(tmp_path: Path, project: Path) -> None:
    result = await use_skill(make_ctx(tmp_path, [project]), skill="escape")
    assert result.status == "error"
    assert result.error is not None and result.error.code == "NOT_FOUND"
    available = ["business_rules_authoring", "format_specification_guide", "sample_authoring"]
    assert result.data["available"] == available
    assert "available skills: " + ", ".join(available) in result.text
    assert "SECRET" not in result.text


async def test_project_skill_overrides_builtin_and_skills_dir_comes_first(
    tmp_path: Path, project: Path
) -> None:
    builtin = tmp_path / "builtin"
    write(builtin / "skills" / "sample_authoring" / "SKILL.md", "---\nname: sample_authoring\n---\nBUILTIN\n")
    write(
        builtin / "skills" / "only_builtin" / "SKILL.md", "---\nname: only_builtin\ndescription: b\n---\nB\n"
    )
    ctx = make_ctx(tmp_path, [project, builtin])
    assert "BUILTIN" not in (await use_skill(ctx, skill="sample_authoring")).text
    assert (await use_skill(ctx, skill="only_builtin")).status == "success"

    extra = tmp_path / "extra_skills"
    write(extra / "samples" / "SKILL.md", "---\nname: sample_authoring\ndescription: extra\n---\nEXTRA\n")
    ctx = make_ctx(tmp_path, [project, builtin], skills_dir="../extra_skills")  # relative to the project
    result = await use_skill(ctx, skill="sample_authoring")
    assert "EXTRA" in result.text


def test_dynamic_parameters_offer_an_enum(tmp_path: Path, project: Path) -> None:
    assert tool_properties(use_skill).parameters is skill_parameters
    schema = skill_parameters([project], {})
    jsonschema.Draft202012Validator.check_schema(schema)
    skill = schema["properties"]["skill"]
    assert skill["enum"] == ["business_rules_authoring", "format_specification_guide", "sample_authoring"]
    assert "business_rules_authoring: How to write a business rules document." in skill["description"]
    assert schema["required"] == ["skill"]
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"skill": "sample_authoring"})
    assert not validator.is_valid({"skill": "made_up"})
    assert not validator.is_valid({"skill": "sample_authoring", "extra": 1})


def test_dynamic_parameters_without_skills(tmp_path: Path) -> None:
    schema = skill_parameters([tmp_path], {})
    assert "enum" not in schema["properties"]["skill"]
    assert "no skills" in schema["properties"]["skill"]["description"]


async def test_no_skills_at_all(tmp_path: Path) -> None:
    result = await use_skill(make_ctx(tmp_path, [tmp_path]), skill="x")
    assert result.error is not None and result.error.code == "NOT_FOUND"
    assert "no skills/ folder" in result.text


def test_broken_index_does_not_hide_folder_skills(tmp_path: Path, project: Path) -> None:
    (project / "skills" / "skills.json").write_text("{not json")
    schema = skill_parameters([project], {})
    assert schema["properties"]["skill"]["enum"] == ["business_rules_authoring", "sample_authoring"]


@pytest.mark.parametrize(
    ("text", "meta", "body"),
    [
        ("---\nname: a\n---\nbody\n", {"name": "a"}, "body\n"),
        ("no front matter", {}, "no front matter"),
        ("---\nname: [unclosed\n---\nbody", {}, "---\nname: [unclosed\n---\nbody"),
        ("---\njust a rule, never closed", {}, "---\njust a rule, never closed"),
        ("---\n- a list\n---\n\nbody", {}, "body"),
    ],
)
def test_parse_front_matter(text: str, meta: dict[str, Any], body: str) -> None:
    assert parse_front_matter(text) == (meta, body)


def test_validate_checks_skill_tool_entries(tmp_path: Path) -> None:
    """An agent's use_skill / run_skill_script with nothing to offer is a warning (every call
    would fail, and the dry run would show it); so is a `skills:` name no folder holds."""
    from support.cli import run_cli

    workflow = "version: 1\nkind: workflow\nname: w\nentry: a\ndefault_model: 'test:x'\n"
    agent = "version: 1\nname: a\nprompt: p\ntools: [use_skill, run_skill_script]\n"

    def found(folder: Path) -> tuple[int, list[tuple[str, int, str, str]]]:
        proc = run_cli(["validate", "--format", "json", "."], cwd=folder)
        shown = json.loads(proc.stdout)["diagnostics"]
        mine = [d for d in shown if d["file"].endswith("a.yaml")]
        return proc.returncode, [(d["code"], d["line"], d["message"], d["hint"]) for d in mine]

    project = tmp_path / "project"
    skill = "---\nname: report-writing\ndescription: How to write a report.\n---\n\n# Reports\n"
    write(project / "skills" / "report-writing" / "SKILL.md", skill)
    write(project / "wf.yaml", workflow)
    write(project / "agents.d" / "a.yaml", agent)
    code, diagnostics = found(project)
    assert code == 0 and [d[:3] for d in diagnostics] == [
        ("no-skills", 4, "run_skill_script has no skills with scripts to offer: every call of it would fail")
    ]
    write(project / "skills" / "report-writing" / "scripts" / "check.py", "print('ok')\n")
    assert found(project) == (0, [])  # a skill with scripts: no warning (the cached check saw it)
    typo = agent.replace("use_skill,", "{use_skill: {skills: [report-writin]}},")
    write(project / "agents.d" / "a.yaml", typo)
    code, diagnostics = found(project)
    assert code == 0 and [d[:2] for d in diagnostics] == [("unknown-skill", 4)]
    assert "did you mean 'report-writing'?" in diagnostics[0][3]
    empty = tmp_path / "empty"
    write(empty / "wf.yaml", workflow)
    write(empty / "agents.d" / "a.yaml", agent)
    assert [d[0] for d in found(empty)[1]] == ["no-skills", "no-skills"]
