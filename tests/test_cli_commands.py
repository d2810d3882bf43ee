"""`flowrun runs`, `flowrun show`, `--version` and `--help` through the CLI on real run folders."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import run_cli
from support.paths import REPO


@pytest.mark.fresh_too
def test_runs_and_show_on_a_real_run(tmp_path: Path) -> None:
    args = [str(REPO / "examples" / "research.yaml"), "--question", "How does sorting work?", "--dry-run"]
    proc = run_cli([*args, "--runs-dir", str(tmp_path / "runs"), "--run-id", "one", "-q"])
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "runs" / "one" / "flowrun.log").read_text().strip()
    listing = run_cli(["runs", "--runs-dir", str(tmp_path / "runs")])
    assert listing.returncode == 0
    assert "one" in listing.stdout and "research" in listing.stdout and "completed" in listing.stdout
    tree = run_cli(["show", str(tmp_path / "runs" / "one")])
    assert tree.returncode == 0
    for agent in ("orchestrator", "searcher", "analyzer", "writer"):
        assert agent in tree.stdout
    bad = run_cli(["show", str(tmp_path)])
    assert bad.returncode != 0 and "Traceback" not in bad.stderr


@pytest.mark.fresh_too
def test_version_and_help_list_commands() -> None:
    version = run_cli(["--version"])
    assert version.returncode == 0 and "flowrun" in version.stdout
    helptext = run_cli(["--help"])
    for command in ("run", "validate", "schema", "resume", "replay", "runs", "show"):
        assert command in helptext.stdout


def test_help_does_not_import_sdks() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from click.testing import CliRunner; from flowrun.cli import main;"
        "CliRunner().invoke(main, ['--help']); CliRunner().invoke(main, ['validate', '--help']);"
        "heavy = ('openai', 'anthropic', 'tavily', 'pydantic', 'jsonschema');"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_typos_get_a_did_you_mean(tmp_path: Path) -> None:
    """A mistyped command, run option or input exits 2 with the name it was probably meant to be."""
    from click.testing import CliRunner

    from flowrun.cli import main

    runner = CliRunner()
    typo = runner.invoke(main, ["valdate", "."])
    assert typo.exit_code == 2 and "Did you mean 'validate'?" in typo.output
    unknown = runner.invoke(main, ["xyzzy"])
    assert unknown.exit_code == 2 and "No such command 'xyzzy'." in unknown.output
    research = str(REPO / "examples" / "research.yaml")
    for given, meant in (("--dry-rn", "--dry-run"), ("--modle", "--model"), ("--questoin", "--question")):
        proc = run_cli([research, "--question", "q", given, "x", "--runs-dir", str(tmp_path)])
        assert proc.returncode == 2, proc.stderr
        assert f"unknown option {given} for workflow 'research'" in proc.stderr
        assert f"did you mean {meant}?" in proc.stderr
    proc = run_cli(["chat", research, "--question", "q", "--agnet", "writer", "--runs-dir", str(tmp_path)])
    assert proc.returncode == 2 and "did you mean --agent?" in proc.stderr
    assert not any(tmp_path.iterdir())
