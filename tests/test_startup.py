"""Start-up and exit of the command line: commands imported only when they run, the manifest
check cache (answers from it, invalidation by content, a cache that is deleted, damaged,
unwritable or planted), and leaving without teardown with every byte of output and every run
file written."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli
from support.paths import REPO
from support.project import write_files
from test_validate_cli import make_project

import flowrun
from flowrun import collector
from flowrun.cli import COMMANDS

PROBE = """\
import sys
from click.testing import CliRunner
from flowrun.cli import main
result = CliRunner().invoke(main, sys.argv[1:])
sys.stdout.write(result.output)
heavy = ("pydantic", "jsonschema", "jinja2", "yaml", "rich", "flowrun.cli.run_cmd", "flowrun.api")
heavy += ("genai_prices", "flowrun.manifest.checks.crossref")
print("LOADED", sorted(m for m in heavy if m in sys.modules))
sys.exit(result.exit_code)
"""


def probe(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, list[str]]:
    """Run the CLI in a fresh interpreter; (exit code, output, heavy modules it imported)."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    out, _, loaded = proc.stdout.rpartition("LOADED ")
    return proc.returncode, out, json.loads(loaded.replace("'", '"'))


# ---------------------------------------------------------------- lazy commands


def test_help_imports_no_command_module(tmp_path: Path) -> None:
    code, out, loaded = probe(["--help"], tmp_path, {})
    assert code == 0
    for name in COMMANDS:
        assert name in out
    assert loaded == []


def test_the_command_table_says_what_each_command_does() -> None:
    from flowrun.cli import main

    for name, registered in COMMANDS.items():
        command = main.get_command(None, name)  # type: ignore[arg-type]
        assert command is not None and command.help is not None
        assert command.help.strip().splitlines()[0] == registered.summary, name


def test_validate_names_the_same_files_as_the_modules_it_does_not_import() -> None:
    from flowrun import yaml_limits
    from flowrun.manifest.checks import validate
    from flowrun.manifest.ecosystem import mcp_config, skill_lint

    assert validate.HEAD_BYTES == yaml_limits.MAX_FILE_BYTES
    assert validate.MCP_FILE == mcp_config.MCP_FILE
    assert validate.SKILL_FILE == skill_lint.SKILL_FILE


def test_unknown_command_and_workflow_shorthand(tmp_path: Path) -> None:
    proc = run_cli(["nosuch"], cwd=tmp_path)
    assert proc.returncode == 2 and "No such command 'nosuch'" in proc.stderr
    proc = run_cli([str(REPO / "examples" / "research.yaml"), "--help"], cwd=tmp_path)
    assert proc.returncode == 0 and "--question" in proc.stdout


def test_a_quiet_run_imports_no_display(tmp_path: Path) -> None:
    """-q shows no progress, so the display library (rich) is not imported for it."""
    workflow = str(REPO / "examples" / "research.yaml")
    args = [workflow, "--question", "q", "--dry-run", "--runs-dir", str(tmp_path / "runs")]
    code, out, loaded = probe([*args, "-q"], tmp_path, cache_env(tmp_path))
    assert code == 0 and "status: completed" in out
    assert "rich" not in loaded
    code, out, loaded = probe(args, tmp_path, cache_env(tmp_path))
    assert code == 0 and "rich" in loaded


def test_plain_prompts_need_no_template_engine(tmp_path: Path) -> None:
    """Prompts without Jinja syntax are used as they are: with the check cache warm, a run of
    such a workflow never imports jinja2 (nor does importing the API)."""
    solo = "version: 1\nkind: agent\nname: solo\nprompt: You help.\n"
    workflow = "version: 1\nkind: workflow\nname: wf\nentry: solo\ndefault_model: openai:gpt-4o\n"
    write_files(tmp_path, {"agents.d/solo.yaml": solo, "wf.yaml": workflow})
    args = ["wf.yaml", "--dry-run", "-q", "--runs-dir", str(tmp_path / "runs")]
    code, out, loaded = probe(args, tmp_path, cache_env(tmp_path))
    assert code == 0 and "jinja2" in loaded  # the first check analyses the templates
    code, out, loaded = probe(args, tmp_path, cache_env(tmp_path))
    assert code == 0 and "status: completed" in out
    assert "jinja2" not in loaded and "flowrun.api" in loaded
    api = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, flowrun.api; print(sorted(m for m in ('jinja2', 'openai') if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert api.stdout.strip() == "[]"


def test_a_run_answered_from_the_check_cache_parses_and_checks_nothing(tmp_path: Path) -> None:
    """With the check cache warm, a run takes its manifests from it: it imports no YAML parser,
    no JSON Schema checker and no cross-reference checks (tens of ms each in a short run's
    start-up); the first run, which checks them, does."""
    (tmp_path / "agents.d").mkdir()
    agent = "version: 1\nkind: agent\nname: solo\nprompt: You help.\ntools: [list_directory]\n"
    (tmp_path / "agents.d" / "solo.yaml").write_text(agent)
    workflow = "version: 1\nkind: workflow\nname: wf\nentry: solo\ndefault_model: openai:gpt-4o\n"
    (tmp_path / "wf.yaml").write_text(workflow)
    args = ["wf.yaml", "--dry-run", "-q", "--runs-dir", str(tmp_path / "runs")]
    checks = {"yaml", "jsonschema", "flowrun.manifest.checks.crossref"}
    code, out, loaded = probe(args, tmp_path, cache_env(tmp_path))
    assert code == 0 and checks <= set(loaded)
    code, out, loaded = probe(args, tmp_path, cache_env(tmp_path))
    assert code == 0 and "status: completed" in out
    assert "flowrun.api" in loaded and not checks & set(loaded)


# ---------------------------------------------------------------- the check cache


def cache_env(tmp_path: Path) -> dict[str, str]:
    return {"FLOWRUN_CACHE_DIR": str(tmp_path / "cache")}


def test_validate_answers_from_the_cache_without_the_checkers(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", {})
    env = cache_env(tmp_path)
    code, first, loaded = probe(["validate", "."], project, env)
    assert code == 0 and "pydantic" in loaded and "jsonschema" in loaded
    assert "genai_prices" not in loaded  # no USD budget: the price table is not read
    code, second, loaded = probe(["validate", "."], project, env)
    assert code == 0 and second == first
    assert loaded == []  # no YAML parser, schema checker, pydantic or template engine
    assert any((tmp_path / "cache").rglob("p-*")) and any((tmp_path / "cache").rglob("m-*"))


def test_every_file_the_check_reads_invalidates_it(tmp_path: Path) -> None:
    project = make_project(
        tmp_path / "p",
        {
            "agents.d/helper.yaml": "version: 1\nkind: agent\nname: helper\nprompt_file: helper.md\n"
            "tools: [lookup]\n",
            "prompts/helper.md": "You help.\n",
            "tools.d/lookup.yaml": (
                "version: 1\nkind: tool\nname: lookup\ndescription: d\n"
                "parameters: {type: object}\nimplementation: {python: mytools:lookup}\n"
            ),
            "mytools.py": "async def lookup(ctx):\n    return None\n",
        },
    )
    env = cache_env(tmp_path)
    assert probe(["validate", "."], project, env)[0] == 0
    # a manifest: a typo in a key
    boss = project / "agents.d" / "boss.yaml"
    boss.write_text(boss.read_text().replace("max_steps", "max_stepz"))
    code, out, _ = probe(["validate", "."], project, env)
    assert code == 1 and "max_stepz" in out
    boss.write_text(boss.read_text().replace("max_stepz", "max_steps"))
    assert probe(["validate", "."], project, env)[0] == 0
    # a prompt template: a syntax error
    (project / "prompts" / "helper.md").write_text("You help {{ .\n")
    code, out, _ = probe(["validate", "."], project, env)
    assert code == 1 and "template-syntax" in out
    (project / "prompts" / "helper.md").write_text("You help.\n")
    # a Python tool's module, wherever it lives: gone, then back
    (project / "mytools.py").rename(project / "elsewhere.py")
    code, out, _ = probe(["validate", "."], project, env)
    assert code == 1 and "python module 'mytools' not found" in out
    (project / "elsewhere.py").rename(project / "mytools.py")
    assert probe(["validate", "."], project, env)[0] == 0


def test_a_test_files_cassette_coming_and_going_invalidates_the_check(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", {})
    (project / "wf.test.yaml").write_text(
        "version: 1\nkind: test\nname: t\nworkflow: wf.yaml\ncassette: cassettes/one\n"
    )
    env = cache_env(tmp_path)
    code, out, _ = probe(["validate", "."], project, env)
    assert code == 1 and "cassettes/one" in out
    (project / "cassettes" / "one").mkdir(parents=True)
    (project / "cassettes" / "one" / "events.jsonl").write_text("")
    assert probe(["validate", "."], project, env)[0] == 0  # not the cached error
    (project / "cassettes" / "one" / "events.jsonl").unlink()
    assert probe(["validate", "."], project, env)[0] == 1


def test_cached_diagnostics_name_files_from_where_validate_runs(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", {"agents.d/helper.yaml": "version: 1\nkind: agent\nname: [x]\n"})
    env = cache_env(tmp_path)
    inside = run_cli(["validate", "."], cwd=project, env=env)
    outside = run_cli(["validate", "p"], cwd=tmp_path, env=env)
    again = run_cli(["validate", "."], cwd=project, env=env)
    assert inside.returncode == outside.returncode == again.returncode == 1
    assert "agents.d/helper.yaml:3" in inside.stdout and "p/agents.d/helper.yaml:3" in outside.stdout
    assert again.stdout == inside.stdout


def test_a_cache_deleted_damaged_or_unwritable_is_only_a_miss(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", {"agents.d/helper.yaml": "version: 1\nkind: agent\nname: [x]\n"})
    env = cache_env(tmp_path)
    expected = run_cli(["validate", "--format", "json", "."], cwd=project, env=env).stdout
    cache = tmp_path / "cache"
    entries = [p for p in cache.rglob("*") if p.is_file()]
    assert entries
    for entry in entries:
        entry.write_bytes(b"\x80\x05 not a pickle")
    assert run_cli(["validate", "--format", "json", "."], cwd=project, env=env).stdout == expected
    for entry in [p for p in cache.rglob("*") if p.is_file()]:
        entry.write_bytes(entry.read_bytes()[:20])  # cut short
    assert run_cli(["validate", "--format", "json", "."], cwd=project, env=env).stdout == expected
    subprocess.run(["rm", "-rf", str(cache)], check=True)
    assert run_cli(["validate", "--format", "json", "."], cwd=project, env=env).stdout == expected
    folder = next(cache.iterdir())
    folder.chmod(0o500)
    try:
        proc = run_cli(["validate", "--format", "json", "."], cwd=make_project(tmp_path / "q", {}), env=env)
        assert proc.returncode == 0 and json.loads(proc.stdout)["ok"] and not proc.stderr
    finally:
        folder.chmod(0o700)
    off = run_cli(
        ["validate", "."],
        cwd=project,
        env={**env, "FLOWRUN_CACHE_DIR": str(tmp_path / "off"), "FLOWRUN_NO_CACHE": "1"},
    )
    assert off.returncode == 1 and not (tmp_path / "off").exists()


class _Planted:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, ("touch planted-ran",))


def test_a_planted_entry_runs_no_code(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", {})
    env = cache_env(tmp_path)
    assert run_cli(["validate", "."], cwd=project, env=env).returncode == 0
    for entry in [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]:
        entry.write_bytes(pickle.dumps(_Planted()))
    proc = run_cli(["validate", "."], cwd=project, env=env)
    assert proc.returncode == 0 and "0 error(s)" in proc.stdout
    assert not (project / "planted-ran").exists()


def test_a_cache_folder_others_can_write_is_not_used(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", {})
    env = cache_env(tmp_path)
    assert run_cli(["validate", "."], cwd=project, env=env).returncode == 0
    folder = next((tmp_path / "cache").iterdir())
    folder.chmod(0o777)
    try:
        code, _, loaded = probe(["validate", "."], project, env)
        assert code == 0 and "pydantic" in loaded  # checked again, not read from that folder
    finally:
        folder.chmod(0o700)


def test_api_load_reuses_the_parsed_project_until_a_file_changes(tmp_path: Path) -> None:
    project = make_project(tmp_path / "p", {})
    first = flowrun.load(project / "wf.yaml")
    second = flowrun.load(project / "wf.yaml")
    assert second.project is first.project
    helper = project / "agents.d" / "helper.yaml"
    helper.write_text(helper.read_text().replace("You help.", "You help a lot."))
    third = flowrun.load(project / "wf.yaml")
    assert third.project is not first.project
    assert third.project.agents["helper"].spec.prompt == "You help a lot."
    helper.write_text(helper.read_text().replace("name: helper", "name: [helper]"))
    with pytest.raises(flowrun.ManifestInvalid):
        flowrun.load(project / "wf.yaml")


# ---------------------------------------------------------------- leaving


def test_leaving_without_teardown_loses_no_output_and_no_run_file(tmp_path: Path) -> None:
    schema = run_cli(["schema", "agent"], cwd=tmp_path)
    assert schema.returncode == 0 and json.loads(schema.stdout)["title"]
    proc = subprocess.run(
        [sys.executable, "-m", "flowrun", "schema", "workflow"], capture_output=True, text=True, check=True
    )
    assert json.loads(proc.stdout)["title"]
    args = [str(REPO / "examples" / "research.yaml"), "--question", "q?", "--dry-run", "-v"]
    run = run_cli([*args, "--runs-dir", str(tmp_path / "runs"), "--run-id", "r"], cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    folder = tmp_path / "runs" / "r"
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    assert events[-1]["type"] == "run_end" and events[-1]["status"] == "completed"
    assert json.loads((folder / "run.json").read_text())["status"] == "completed"
    assert json.loads((folder / "usage.json").read_text())["total_tokens"] > 0
    log = (folder / "flowrun.log").read_text()
    assert log.endswith("\n") and "run_end" in log.splitlines()[-1]
    failed = run_cli([str(REPO / "examples" / "research.yaml"), "--no-such-input", "x"], cwd=tmp_path)
    assert failed.returncode == 2 and failed.stderr.startswith("error: unknown option --no-such-input")


def test_flowruns_own_processes_tune_the_collector_and_a_program_keeps_its_own(tmp_path: Path) -> None:
    """The command line collects its youngest objects every 10,000 new ones, not 700, once its
    modules are imported and kept, and every 100,000 while it starts (flowrun/collector.py); a
    program running a workflow through the API keeps its settings: its thresholds are raised
    only while the API and the SDK are imported, and its collector stays on or off."""
    workflow = str(REPO / "examples" / "research.yaml")
    probe = "import atexit, gc, runpy, sys\nsys.argv = ['flowrun', *sys.argv[1:]]\n"
    probe += "atexit.register(lambda: print('GC', *gc.get_threshold()))\n"
    probe += "runpy.run_module('flowrun', run_name='__main__')\n"
    cli = subprocess.run([sys.executable, "-c", probe, "--version"], **TEXT)
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.splitlines()[-1] == "GC " + " ".join(map(str, collector.START_UP))  # no API
    dry = [workflow, "--question", "q?", "--dry-run", "-q", "--runs-dir", str(tmp_path / "cli")]
    cli = subprocess.run([sys.executable, "-c", probe, *dry], **TEXT)
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.splitlines()[-1] == "GC " + " ".join(map(str, collector.THRESHOLDS))
    api = "import gc, sys, threading, flowrun\nif sys.argv[3] == 'off':\n    gc.disable()\n"
    api += "wf = flowrun.load(sys.argv[1])\nprint(gc.isenabled())\n"
    api += "wf.run_sync({'question': 'q?'}, dry_run=True, runs_dir=sys.argv[2])\n"
    api += "for thread in threading.enumerate():\n    if thread.name.startswith('flowrun-import'):\n"
    api += "        thread.join()  # the SDK's import in the background: the state it leaves\n"
    api += "print(gc.isenabled(), *gc.get_threshold())\n"
    bare = subprocess.run([sys.executable, "-c", "import gc; print(*gc.get_threshold())"], **TEXT)
    assert bare.stdout.split() != [str(n) for n in collector.THRESHOLDS]
    for setting in ("on", "off"):
        done = subprocess.run([sys.executable, "-c", api, workflow, str(tmp_path / "runs"), setting], **TEXT)
        assert done.returncode == 0, done.stderr
        loaded, ran = done.stdout.splitlines()[-2:]
        assert loaded == str(setting == "on")
        assert ran.split() == [str(setting == "on"), *bare.stdout.split()]


TEXT: dict[str, Any] = {"capture_output": True, "text": True, "timeout": 120}
