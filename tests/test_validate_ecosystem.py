"""`flowrun validate` on Claude Code files, skill folders and `.mcp.json` in a repository that
has no flowrun workflow at all: every problem in one pass, at its line, in the three formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli

AGENT = """---
name: reviewer
description: Reviews changes.
tools: Read, Grep
maxTurn: 3
---
Review the diff.
"""
SKILL = """---
name: release-notes
description: {description}
allowed_tools: Read
metadata:
  version: 1.0
---
Write release notes.
"""
MCP = """{
  "mcpServers": {
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "timeout": 30
    }
  }
}
"""


def claude_repo(root: Path) -> Path:
    (root / ".claude" / "agents").mkdir(parents=True)
    (root / ".claude" / "agents" / "reviewer.md").write_text(AGENT)
    (root / ".claude" / "agents" / "README.md").write_text("# Our agents\n")  # not an agent: skipped
    skill = root / ".claude" / "skills" / "release_notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL.format(description="x" * 1100))
    (root / ".mcp.json").write_text(MCP)
    return root


def test_text_format_reports_every_problem_at_its_line(tmp_path: Path) -> None:
    root = claude_repo(tmp_path)
    proc = run_cli(["validate", ".claude/"], cwd=root)
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert (
        ".claude/agents/reviewer.md:5:1: error[unknown-key]: unknown key 'maxTurn' in a Claude Code agent"
        in out
    )
    assert "did you mean 'maxTurns'?" in out
    skill = ".claude/skills/release_notes/SKILL.md"
    assert (
        f"{skill}:2:7: error[skill-name]: name 'release-notes' is not the folder's name 'release_notes'"
        in out
    )
    assert f"{skill}:3:14: error[too-long]: `description` has 1100 characters; at most 1024" in out
    assert f"{skill}:4:1: error[unknown-key]: unknown key 'allowed_tools' in SKILL.md" in out
    assert "did you mean 'allowed-tools'?" in out
    assert f"{skill}:6:12: warning[wrong-type]: metadata 'version' is not text" in out
    assert (
        ".mcp.json:6:7: error[unknown-key]: unknown key 'timeout'" in out
        and "did you mean 'timeout_s'?" in out
    )
    assert "README.md" not in out
    assert "Traceback" not in out + proc.stderr


@pytest.mark.parametrize("target", [".", ".mcp.json", ".claude/agents/reviewer.md"])
def test_json_and_github_formats(tmp_path: Path, target: str) -> None:
    root = claude_repo(tmp_path)
    proc = run_cli(["validate", "--format", "json", target], cwd=root)
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["ok"] is False
    files = {d["file"] for d in report["diagnostics"] if d["severity"] == "error"}
    assert {".claude/agents/reviewer.md", ".mcp.json"} <= files
    proc = run_cli(["validate", "--format", "github", target], cwd=root)
    assert "::error file=.mcp.json,line=6,col=7,title=unknown-key::unknown key 'timeout'" in proc.stdout


def test_a_skill_folder_alone(tmp_path: Path) -> None:
    root = claude_repo(tmp_path)
    proc = run_cli(["validate", ".claude/skills/release_notes/SKILL.md"], cwd=root)
    assert proc.returncode == 1
    assert "release_notes/SKILL.md:2:7: error[skill-name]" in proc.stdout


def test_a_clean_claude_repo_passes(tmp_path: Path) -> None:
    root = tmp_path
    (root / ".claude" / "agents").mkdir(parents=True)
    (root / ".claude" / "agents" / "reviewer.md").write_text(AGENT.replace("maxTurn", "maxTurns"))
    skill = root / ".claude" / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        SKILL.format(description="Writes release notes.")
        .replace("allowed_tools: Read\n", "")
        .replace("1.0", '"1.0"')
    )
    (root / ".mcp.json").write_text(MCP.replace('"timeout"', '"timeout_s"'))
    proc = run_cli(["validate", "--strict"], cwd=root)
    assert proc.returncode == 0, proc.stdout
    assert "0 error(s), 0 warning(s)" in proc.stdout
