"""What the system refuses, said in one line and never as a flowrun bug.

Names longer than a filesystem takes (over 255 bytes), wherever a manifest, an input or an
option puts them: `validate` says which and where, a run refuses in one line, and no command
ends in an internal error. They had: Python's `Path.is_file()` raises on ENAMETOOLONG, and a
manifest's `prompt_file`, `output_schema` or `workspace.copy`, a `workspace.dir` made from an
input, or a long `--runs-dir` crashed `validate`, the run, `flowrun runs` or the server. Any
other refusal no check foresaw is one line (exit 1), and a standard output whose reader left
(`| head`) ends the command quietly."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cli import flowrun_cmd, run_cli
from support.project import scripted_project
from support.runs import no_traceback

import flowrun

LONG = "y" * 300  # one name of 300 bytes: every filesystem refuses it


def project(tmp: Path, agent: dict[str, Any] | None = None, workflow: dict[str, Any] | None = None) -> Path:
    agents = {"w": {"prompt": "You write.", "tools": ["write_file"], **(agent or {})}}
    replies = {"w": [{"text": "done"}]}
    inputs = {"topic": {"description": "t"}}
    return scripted_project(tmp, agents, replies, entry="w", inputs=inputs, **(workflow or {}))


@pytest.mark.parametrize(
    ("agent", "workflow", "code", "said"),
    [
        ({"prompt": None, "prompt_file": LONG}, None, "missing-prompt", f"prompt file '{LONG}'"),
        ({"output_schema": f"{LONG}.json"}, None, "missing-schema", "output_schema file"),
        (None, {"output": f"{LONG}.md"}, "bad-path", "is 303 bytes long (at most 255)"),
        (None, {"workspace": {"files": {f"{LONG}.md": "x"}}}, "bad-path", "is 303 bytes long"),
        (None, {"workspace": {"copy": [LONG]}}, "bad-path", "workspace.copy: the name yyy"),
    ],
)
def test_validate_names_a_long_name_at_its_line(
    tmp_path: Path, agent: dict[str, Any] | None, workflow: dict[str, Any] | None, code: str, said: str
) -> None:
    wf = project(tmp_path, agent, workflow)
    if agent and agent.get("prompt") is None:  # prompt_file instead of prompt
        path = tmp_path / "agents.d" / "w.yaml"
        body = yaml.safe_load(path.read_text())
        del body["prompt"]
        path.write_text(yaml.safe_dump(body))
    proc = run_cli(["validate", str(wf)], cwd=tmp_path)
    out = no_traceback(proc)
    assert proc.returncode == 1, out
    line = next(line for line in out.splitlines() if f"error[{code}]" in line)
    assert line.split(":")[1].isdigit() and said in line, line
    run = run_cli([str(wf), "--topic", "t", "-q"], cwd=tmp_path)
    assert run.returncode == 1 and f"error[{code}]" in no_traceback(run)  # (a run checks as validate does)


def test_a_long_name_from_an_input_or_an_option_is_refused_in_one_line(tmp_path: Path) -> None:
    wf = project(tmp_path, workflow={"workspace": {"dir": "work/{{ topic }}"}})
    proc = run_cli([str(wf), "--topic", LONG, "-q"], cwd=tmp_path)
    out = no_traceback(proc)
    assert proc.returncode == 2 and "workspace.dir work/yyy" in out and "is 300 bytes long" in out, out
    assert "hint: shorten it" in out and not (tmp_path / "runs").exists()
    proc = run_cli([str(wf), "--topic", "t", "-q", "--workdir", f"w/{LONG}"], cwd=tmp_path)
    assert proc.returncode == 2 and "--workdir w/yyy" in no_traceback(proc)
    proc = run_cli([str(wf), "--topic", "t", "-q", "--runs-dir", f"r/{LONG}"], cwd=tmp_path)
    assert proc.returncode != 0 and "File name too long" in no_traceback(proc)
    proc = run_cli(["runs", "--runs-dir", str(tmp_path / LONG)], cwd=tmp_path)
    assert proc.returncode != 0 and "no runs folder" in no_traceback(proc)
    ok = run_cli([str(wf), "--topic", "t", "-q"], cwd=tmp_path)  # the same workflow with a fitting name
    assert ok.returncode == 0, ok.stderr


def test_what_the_system_refuses_is_one_line_not_a_bug_report(tmp_path: Path) -> None:
    """An OSError no command foresaw (here: `init` into a path under a regular file) is the
    system's refusal, said with the path, exit 1; not an internal error of flowrun's."""
    (tmp_path / "a-file").write_text("x")
    proc = run_cli(["init", "research", str(tmp_path / "a-file" / "sub")], cwd=tmp_path)
    out = no_traceback(proc)
    assert proc.returncode == 1 and "error: Not a directory:" in out and "a-file/sub" in out, out
    assert "hint: check the path" in out


def test_the_python_api_raises_usage_errors_for_long_names(tmp_path: Path) -> None:
    """`flowrun.load` and `flowrun.run_batch` given a name too long raise UsageError (they had
    raised the bare OSError)."""
    wf = project(tmp_path)
    with pytest.raises(flowrun.UsageError, match=r"is 305 bytes long \(at most 255\)"):
        flowrun.load(tmp_path / f"{LONG}.yaml")
    items = tmp_path / "items.jsonl"
    items.write_text('{"topic": "t"}\n')
    with pytest.raises(
        flowrun.UsageError, match=r"batch folder .*: the name yyy.* is 300 bytes long"
    ) as caught:
        asyncio.run(flowrun.run_batch(wf, items, out=tmp_path / LONG))
    assert caught.value.hint is not None and "--out" in caught.value.hint
    summary = asyncio.run(flowrun.run_batch(wf, items, out=tmp_path / "out"))
    assert summary.ok and summary.completed == 1


def test_a_reader_that_leaves_early_ends_the_command_quietly(tmp_path: Path) -> None:
    """`flowrun batch ... | head -1`: standard output's reader is gone before the summary is
    printed. The work is done and recorded; the command ends as one cut off by `head` does
    (141, nothing on stderr about it). It had ended in an internal error (70)."""
    wf = project(tmp_path)
    (tmp_path / "items.jsonl").write_text('{"topic": "a"}\n{"topic": "b"}\n')
    for args in (
        ["batch", str(wf), "items.jsonl", "--out", "out", "-q"],
        [str(wf), "--topic", "t", "--run-id", "r"],
        ["validate", str(wf)],  # (click's own handling of the closed pipe: the same status)
        ["--help"],
    ):
        read, write = os.pipe()
        os.close(read)  # the reader left before anything was written
        try:
            proc = subprocess.run(
                [*flowrun_cmd(), *args],
                cwd=tmp_path,
                stdout=write,
                stderr=subprocess.PIPE,
                text=True,
                timeout=120,
            )
        finally:
            os.close(write)
        assert proc.returncode == 141, proc.stderr
        assert "error" not in proc.stderr.lower() and "exception" not in proc.stderr.lower(), proc.stderr
    assert len((tmp_path / "out" / "results.jsonl").read_text().splitlines()) == 2
    assert '"status": "completed"' in (tmp_path / "runs" / "r" / "run.json").read_text()


def test_a_batch_default_folder_from_a_long_items_name_fits_and_is_found_again(tmp_path: Path) -> None:
    """The default batch folder is named after the workflow and the items file: an items file
    whose name is as long as a filesystem allows made it too long (the batch refused to start);
    it is now cut to fit with a digest of the whole, and the same command finds it again."""
    wf = project(tmp_path)
    items = tmp_path / f"{'q' * 253}.j"  # 255 bytes (JSON lines): the longest name a file can have
    items.write_text('{"topic": "t"}\n{"topic": "u"}\n')
    proc = run_cli(["batch", str(wf), items.name], cwd=tmp_path)
    assert proc.returncode == 0 and "2 completed, 0 failed" in no_traceback(proc), proc.stdout + proc.stderr
    [folder] = (tmp_path / "batches").iterdir()
    assert len(folder.name.encode()) == 255 and folder.name.startswith(f"{flowrun.load(wf).name}-qqq")
    assert (folder / "results.jsonl").read_text().count("\n") == 2
    again = run_cli(["batch", str(wf), items.name], cwd=tmp_path)
    assert again.returncode == 0 and "2 completed, 0 failed (0 run now)" in no_traceback(again), again.stdout
    assert [p.name for p in (tmp_path / "batches").iterdir()] == [folder.name]
