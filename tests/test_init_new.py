"""Every shipped roster travels: from the wheel (built by hatchling, used from an extracted copy
as an installation would), each example workflow copied alone to an empty folder validates and
dry-runs; `flowrun init` writes a runnable project from every template; `flowrun new` adds one
file that validates; a project prompt a built-in agent would ignore is a validate warning."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import run_cli
from support.env import clean_env
from support.paths import REPO
from support.runs import events

EXAMPLES = {
    "research": "--question",
    "research_v2": "--question",
    "research_cited": "--question",
    "research_foreach": "--questions",
    "react": "--question",
    "instructor_worker": "--task",
    "init_execute": "--task",
}
TEMPLATES = {**EXAMPLES, "claude_code": "--bug"}
CLI = "import sys, flowrun.cli; sys.exit(flowrun.cli.main())"

pytestmark = pytest.mark.xdist_group(name="wheel")  # one worker builds the wheel once


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """flowrun as a wheel installs it: the wheel built from the checkout, extracted."""
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(out / "dist")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    [wheel] = (out / "dist").glob("flowrun-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(out / "site")
    yield out / "site"


def installed(site: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI of the extracted wheel (not the checkout), in `cwd`."""
    env = clean_env()
    env["PYTHONPATH"] = str(site)
    return subprocess.run(
        [sys.executable, "-c", CLI, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def dry_run_ok(proc: subprocess.CompletedProcess[str], run_dir: Path) -> None:
    """Exit 0, no tool error, every offered tool called (ask_user needs a person)."""
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = events(run_dir)
    failed = [
        (e["tool"], e["result"]["text"])
        for e in found
        if e["type"] == "tool_result" and e["result"]["status"] == "error"
    ]
    assert failed == []
    offered = {t for e in found if e["type"] == "model_request" for t in e["tools"]}
    called = {e["tool"] for e in found if e["type"] == "tool_call"}
    assert offered - called <= {"ask_user"}, offered - called


def test_the_wheel_runs_from_its_own_files(site: Path, tmp_path: Path) -> None:
    probe = "import flowrun.paths as p; print(p.builtin_root()); print(p.examples_root())"
    env = {**os.environ, "PYTHONPATH": str(site)}
    proc = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, cwd=tmp_path
    )
    core, examples = proc.stdout.split()
    assert Path(core) == (site / "flowrun" / "_builtin").resolve()
    assert Path(examples) == (site / "flowrun" / "_builtin" / "examples").resolve()
    shipped = {p.relative_to(Path(examples)).as_posix() for p in Path(examples).rglob("*") if p.is_file()}
    for rel in (
        "agents.d/researcher.yaml",
        "agents.d/explorer.yaml",
        "prompts/explorer.md.j2",
        "tools.d/update_overall_dashboard.yaml",
        "schemas/citations.schema.json",
        "skills/skills.json",
        "skills/tool_implementation/sop/checklist.md",
        "claude_code/.claude/agents/team-debugger.md",
        "corpus/howto/sorting.md",
    ):
        assert rel in shipped, rel


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_each_example_copied_alone_validates_and_dry_runs(site: Path, tmp_path: Path, name: str) -> None:
    """Only the workflow file, in a folder of its own outside the checkout: its agents, prompts,
    tools, skills and schemas come from the installed examples."""
    shutil.copy(REPO / "examples" / f"{name}.yaml", tmp_path / f"{name}.yaml")
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{name}.yaml"]
    checked = installed(site, ["validate", "--strict", f"{name}.yaml"], tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    args = [f"{name}.yaml", EXAMPLES[name], "How do Python's sorting functions work?", "--dry-run"]
    proc = installed(site, [*args, "--run-id", "r", "-q"], tmp_path)
    dry_run_ok(proc, tmp_path / "runs" / "r")


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_init_writes_a_runnable_project_from_every_template(site: Path, tmp_path: Path, name: str) -> None:
    proc = installed(site, ["init", name, "proj"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    proj = tmp_path / "proj"
    assert f"wrote {len(files_of(proj))} files into proj/" in proc.stdout
    assert (proj / ".gitignore").read_text().splitlines()[-1] == "runs/"
    for path in proj.rglob("*.yaml"):  # every manifest points its editor at the project's schema/
        first = path.read_text().splitlines()[0]
        found = re.fullmatch(r"# yaml-language-server: \$schema=(\S+)", first)
        assert found, path
        assert (path.parent / found.group(1)).resolve().is_file(), path
    workflow = next(p for p in proj.glob("*.yaml"))
    assert "flowrun examples/" not in workflow.read_text()
    checked = installed(site, ["validate", "--strict", "."], proj)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "0 error(s), 0 warning(s)" in checked.stdout
    args = [workflow.name, TEMPLATES[name], "How do Python's sorting functions work?", "--dry-run"]
    dry_run_ok(installed(site, [*args, "--run-id", "r", "-q"], proj), proj / "runs" / "r")
    # the project holds its team: every agent the run started has its file here
    started = {e["agent"] for e in events(proj / "runs" / "r") if e["type"] == "agent_start"}
    own = {p.stem for p in (proj / "agents.d").iterdir()} | {p.stem for p in proj.glob(".claude/agents/*.md")}
    assert started <= own


def files_of(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def test_init_files_of_the_design_rosters(tmp_path: Path) -> None:
    """What a project gets from a template: its own tools (the v2 design's two dashboard tools),
    its skills with the library's index and sop/ files, its output schema, the included prompts."""
    for name in ("research_v2", "init_execute", "research_cited", "research"):
        assert run_cli(["init", name, name], cwd=tmp_path).returncode == 0
    names = ("research_v2", "init_execute", "research_cited", "research")
    rel = {n: {p.relative_to(tmp_path / n).as_posix() for p in files_of(tmp_path / n)} for n in names}
    assert {"tools.d/update_overall_dashboard.yaml", "tools.d/update_current_dashboard.yaml"} <= rel[
        "research_v2"
    ]
    assert not any(p.startswith("tools.d/web_search") for p in rel["research_v2"])  # the engine's own
    index = json.loads((tmp_path / "init_execute" / "skills" / "skills.json").read_text())
    assert len(index["skills"]) == 8
    folders = {p.rsplit("/", 1)[0] for p in rel["init_execute"]}
    assert all(f"skills/{skill}/sop" in folders for skill in index["skills"])
    assert "schemas/citations.schema.json" in rel["research_cited"]
    assert {"prompts/_team.md.j2", "prompts/_assistant_rules.md.j2"} <= rel["research"]
    assert "agents.d/orchestrator.yaml" in rel["research"]


def test_init_list_and_mistakes(tmp_path: Path) -> None:
    listed = run_cli(["init", "--list"], cwd=tmp_path)
    assert listed.returncode == 0
    assert [line.split()[0] for line in listed.stdout.splitlines()] == [*sorted(EXAMPLES), "claude_code"]
    unknown = run_cli(["init", "reserch", "x"], cwd=tmp_path)
    assert unknown.returncode == 2 and "error: no template 'reserch'" in unknown.stderr
    assert "did you mean 'research'?" in unknown.stderr and not (tmp_path / "x").exists()
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.md").write_text("mine\n")
    busy = run_cli(["init", "research", "busy"], cwd=tmp_path)
    assert busy.returncode == 2, busy.stderr
    assert busy.stderr.splitlines()[0] == "error: busy is not empty (it holds notes.md)"
    assert sorted(p.name for p in (tmp_path / "busy").iterdir()) == ["notes.md"]
    # the default: the research template, into the current folder (empty)
    (tmp_path / "here").mkdir()
    assert run_cli(["init"], cwd=tmp_path / "here").returncode == 0
    assert (tmp_path / "here" / "research.yaml").is_file()


NOTES = "one two three\nfour five\n"


def test_new_files_validate_and_the_tool_works(tmp_path: Path) -> None:
    assert run_cli(["init", "research", "proj"], cwd=tmp_path).returncode == 0
    proj = tmp_path / "proj"
    for kind, name in (("agent", "critic"), ("tool", "word-count"), ("skill", "report-style")):
        proc = run_cli(["new", kind, name], cwd=proj)
        assert proc.returncode == 0, proc.stderr
    assert (proj / "tools" / "word_count.py").is_file()
    skill = (proj / "skills" / "report-style" / "SKILL.md").read_text()
    assert skill.startswith("---\nname: report-style\ndescription: ")
    named = ["agents.d/critic.yaml", "tools.d/word-count.yaml", "skills/report-style"]
    checked = run_cli(["validate", "--strict", *named], cwd=proj)
    assert checked.returncode == 0, checked.stdout
    # the new agent with the new tool and skill, in a workflow of their own: the tool works
    (proj / "agents.d" / "critic.yaml").write_text(
        (proj / "agents.d" / "critic.yaml")
        .read_text()
        .replace("  - read_file\n", "  - word-count\n  - use_skill\n")
    )
    (proj / "critique.yaml").write_text(
        "version: 1\nkind: workflow\nname: critique\n"
        "models: {s: {provider: scripted, model: s, script: critic.script.yaml}}\n"
        "default_model: s\nentry: critic\nworkspace: {files: {notes.md: " + json.dumps(NOTES) + "}}\n"
    )
    (proj / "critic.script.yaml").write_text(
        "version: 1\nkind: script\nagents:\n  critic:\n"
        "    - tool_calls: [{name: word-count, arguments: {path: notes.md}}]\n"
        "    - text: counted\n"
    )
    assert run_cli(["validate", "--strict", "."], cwd=proj).returncode == 0
    proc = run_cli(["critique.yaml", "--run-id", "r", "-q"], cwd=proj)
    assert proc.returncode == 0, proc.stderr
    [result] = [e["result"] for e in events(proj / "runs" / "r") if e["type"] == "tool_result"]
    assert result["status"] == "success" and result["text"] == "notes.md: 2 lines, 5 words, 24 characters"
    assert result["data"] == {"lines": 2, "words": 5, "characters": 24}
    dry_run_ok(run_cli(["critique.yaml", "--run-id", "d", "--dry-run", "-q"], cwd=proj), proj / "runs" / "d")


def test_new_never_overwrites_and_checks_names(tmp_path: Path) -> None:
    (tmp_path / "tools.d").mkdir()
    (tmp_path / "tools.d" / "lookup.yaml").write_text("mine\n")
    proc = run_cli(["new", "tool", "lookup"], cwd=tmp_path)
    assert proc.returncode == 2 and "tools.d/lookup.yaml already exists" in proc.stderr
    assert (tmp_path / "tools.d" / "lookup.yaml").read_text() == "mine\n" and not (
        tmp_path / "tools"
    ).exists()
    proc = run_cli(["new", "skill", "Report_Style"], cwd=tmp_path)
    assert proc.returncode == 2 and "flowrun new skill report-style" in proc.stderr
    proc = run_cli(["new", "agent", "9lives"], cwd=tmp_path)
    assert proc.returncode == 2 and "'9lives' is not an agent name" in proc.stderr


def test_a_project_prompt_a_built_in_agent_would_ignore(tmp_path: Path) -> None:
    """prompts/orchestrator.md.j2 next to research.yaml, whose orchestrator is the built-in one:
    validate warns (the built-in reads its own prompts, so the file would be ignored) and says
    how to use it; `flowrun new agent orchestrator` makes it the project's, and then it is used."""
    shutil.copy(REPO / "examples" / "research.yaml", tmp_path / "research.yaml")
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "orchestrator.md.j2").write_text("PROJECT ORCHESTRATOR of {{ date }}\n")
    proc = run_cli(["validate", "research.yaml"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert (
        "prompts/orchestrator.md.j2:1:1: warning[shadowed]: prompts/orchestrator.md.j2 is not used: "
        "the built-in agent 'orchestrator' reads the built-in orchestrator.md.j2" in proc.stdout
    )
    assert "`flowrun new agent orchestrator`" in proc.stdout
    assert run_cli(["validate", "--strict", "research.yaml"], cwd=tmp_path).returncode == 1
    made = run_cli(["new", "agent", "orchestrator"], cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "extends: orchestrator" in (tmp_path / "agents.d" / "orchestrator.yaml").read_text()
    checked = run_cli(["validate", "--strict", "research.yaml"], cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout
    proc = run_cli(["research.yaml", "--question", "q", "--dry-run", "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    told = next(e for e in events(tmp_path / "runs" / "r") if e["type"] == "agent_prompt")
    assert told["agent"] == "orchestrator" and told["system"].startswith("PROJECT ORCHESTRATOR of ")


def test_no_example_role_shares_a_name_with_an_engine_built_in() -> None:
    """The engine's built-ins come before the examples' on the search path: a shared name would
    silently hide an example's role from a copied workflow."""
    for folder in ("agents.d", "tools.d"):
        core = {p.stem for p in (REPO / folder).glob("*.yaml")}
        examples = {p.stem for p in (REPO / "examples" / folder).glob("*.yaml")}
        assert examples and not core & examples, core & examples
