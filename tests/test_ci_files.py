"""The CI integration files: the pre-commit hook and the GitHub Actions example run
`flowrun validate` as they say, and its github format turns problems into annotations."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import yaml
from support.cli import run_cli
from support.paths import REPO
from support.project import write_files

BROKEN_AGENT = "version: 1\nkind: agent\nname: helper\nprompt: Help.\nmax_stepz: 3\n"


# other frameworks' files the hook and the annotations cover too (issue 39.5)
FOREIGN = {
    "teams/team.yaml": "agents:\n  root:\n    model: openai/m\n    instrucion: Hi.\n",
    "crew/config/agents.yaml": "writer:\n  role: W\n  goal: G\n  backstory: B\n  llm: openai/m\n",
    "crew/config/tasks.yaml": "write:\n  description: D\n  expected_output: E\n  agent: wrter\n",
    "bots/helper.yaml": "kind: Prompt\nname: H\ninstructions: Hi.\ntools:\n  - kind: function\n    name: F\n",
}


def broken_repo(root: Path) -> Path:
    claude_agent = "---\nname: r\ndescription: R.\nmax_turns: 2\n---\nR.\n"
    files = {"agents.d/helper.yaml": BROKEN_AGENT, ".claude/agents/r.md": claude_agent}
    return write_files(root, files | FOREIGN)


def test_pre_commit_hook(tmp_path: Path) -> None:
    hooks: list[dict[str, Any]] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    (hook,) = [h for h in hooks if h["id"] == "flowrun-validate"]
    assert hook["language"] == "python" and hook["pass_filenames"] is False
    entry = shlex.split(hook["entry"])
    assert entry[:2] == ["flowrun", "validate"]
    # pre-commit runs the entry in the repository's root, with no file names
    proc = run_cli(entry[1:], cwd=broken_repo(tmp_path))
    assert proc.returncode == 1
    assert "agents.d/helper.yaml:5:1: error[unknown-key]: unknown key 'max_stepz'" in proc.stdout
    assert ".claude/agents/r.md:4:1: error[unknown-key]" in proc.stdout
    assert "teams/team.yaml:4:5: error[unknown-key]: unknown key 'instrucion'" in proc.stdout
    assert "crew/config/tasks.yaml:4:10: error[unknown-agent]" in proc.stdout
    assert "bots/helper.yaml:5:5: error[python-tool]" in proc.stdout
    files = re.compile(hook["files"])
    for changed in ("crew.jsonc", "agents/writer.jsonc", "src/pkg/crew.py", "team.yaml", "root_agent.yaml"):
        assert files.search(changed), changed
    assert not files.search("src/pkg/tools.py")
    clean = tmp_path / "clean"
    write_files(clean, {"agents.d/helper.yaml": BROKEN_AGENT.replace("max_stepz", "max_steps")})
    assert run_cli(entry[1:], cwd=clean).returncode == 0


def test_github_actions_example(tmp_path: Path) -> None:
    workflow = yaml.safe_load((REPO / "examples" / "ci" / "github-actions.yml").read_text())
    assert "pull_request" in workflow[True]  # YAML 1.1 reads the key `on` as true
    steps = workflow["jobs"]["validate"]["steps"]
    (command,) = [s["run"] for s in steps if "run" in s and s["run"].startswith("flowrun ")]
    argv = shlex.split(command)
    assert argv[:4] == ["flowrun", "validate", "--format", "github"]
    proc = run_cli(argv[1:], cwd=broken_repo(tmp_path))
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert any(
        line.startswith("::error file=agents.d/helper.yaml,line=5,col=1,title=unknown-key::")
        for line in lines
    )
    assert any(
        line.startswith("::error file=.claude/agents/r.md,line=4,col=1,title=unknown-key::") for line in lines
    )
    for where in ("teams/team.yaml,line=4,col=5,title=unknown-key", "crew/config/tasks.yaml,line=4,col=10"):
        assert any(line.startswith(f"::error file={where}") for line in lines), proc.stdout
    paths = workflow[True]["pull_request"]["paths"]
    assert {"**/*.jsonc", "**/crew.py"} <= set(paths)
