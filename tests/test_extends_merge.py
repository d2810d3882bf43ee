"""`extends` with list changes: `tools: {add: [...], remove: [...]}` (and the same for
`selectable_models`) adjusts a built-in agent without restating its list; validate points at
the line of a bad entry; the run offers exactly the merged list."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from support.cli import run_cli
from support.paths import REPO
from support.project import write_files

SEARCHER = """\
version: 1
kind: agent
name: searcher
extends: searcher
tools:
  add:
    - grep
    - write_file: {write_paths: ["notes/**"]}
  remove: [visit_url]
"""


def project(tmp: Path, searcher: str) -> Path:
    shutil.copy(REPO / "examples" / "research.yaml", tmp / "research.yaml")
    return write_files(tmp, {"agents.d/searcher.yaml": searcher})


def test_added_removed_and_replaced_entries(tmp_path: Path) -> None:
    project(tmp_path, SEARCHER)
    proc = run_cli(["validate", "."], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = run_cli(["research.yaml", "--question", "q", "--dry-run", "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    events = [
        json.loads(line) for line in (tmp_path / "runs" / "r" / "events.jsonl").read_text().splitlines()
    ]
    request = next(e for e in events if e["type"] == "model_request" and e["agent"] == "searcher")
    # the built-in order, visit_url gone, write_file's config replaced in place, grep appended
    assert request["tools"] == [
        "web_search",
        "read_file",
        "list_directory",
        "write_file",
        "edit_file",
        "grep",
    ]
    write = next(
        e
        for e in events
        if e["type"] == "tool_result" and e["agent"] == "searcher" and e["tool"] == "write_file"
    )
    assert write["result"]["context"]["path_resolved"].startswith("notes/")


def test_remove_of_an_entry_the_parent_lacks_points_at_its_line(tmp_path: Path) -> None:
    project(tmp_path, SEARCHER.replace("remove: [visit_url]", "remove: [visit_url, edit_fil]"))
    proc = run_cli(["validate", "--format", "json", "."], cwd=tmp_path)
    assert proc.returncode == 1
    [d] = json.loads(proc.stdout)["diagnostics"]
    assert (d["file"], d["line"], d["code"], d["path"]) == (
        "agents.d/searcher.yaml",
        9,
        "bad-remove",
        "tools.remove[1]",
    )
    assert d["hint"] == "did you mean 'edit_file'?"


def test_problems_in_added_entries_point_at_the_add_list(tmp_path: Path) -> None:
    project(tmp_path, SEARCHER.replace("- grep", "- grepp").replace('["notes/**"]', '["notes/**"], bogus: 1'))
    proc = run_cli(["validate", "--format", "json", "."], cwd=tmp_path)
    found = {(d["code"], d["line"], d["path"]) for d in json.loads(proc.stdout)["diagnostics"]}
    assert found == {
        ("unknown-tool", 7, "tools.add[0]"),
        ("bad-config", 8, "tools.add[1].write_file.bogus"),
    }


def test_a_patch_needs_extends(tmp_path: Path) -> None:
    project(tmp_path, SEARCHER.replace("extends: searcher\n", "prompt: hi\n"))
    proc = run_cli(["validate", "."], cwd=tmp_path)
    assert proc.returncode == 1
    assert "agents.d/searcher.yaml:5:" in proc.stdout and "has no `extends`" in proc.stdout


def test_selectable_models_merge(tmp_path: Path) -> None:
    files = {
        "wf.yaml": "version: 1\nkind: workflow\nname: w\nentry: boss\ndefault_model: 'test:t'\n",
        "agents.d/boss.yaml": "version: 1\nname: boss\nprompt: p\ntools: [helper]\n",
        "agents.d/base.yaml": "version: 1\nname: base\nprompt: p\nselectable_models: ['test:a', 'test:b']\n",
        "agents.d/helper.yaml": (
            "version: 1\nname: helper\nextends: base\n"
            "selectable_models: {add: ['test:c'], remove: ['test:a']}\n"
        ),
    }
    write_files(tmp_path, files)
    import flowrun

    wf = flowrun.load(tmp_path / "wf.yaml")
    assert wf.project.agents["helper"].spec.selectable_models == ["test:b", "test:c"]
    result = wf.run_sync(runs_dir=tmp_path / "runs", dry_run=True)
    assert result.ok
