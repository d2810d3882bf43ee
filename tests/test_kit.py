"""The example of CONTRIBUTING.md ("Writing a test"), run: a project written with the kit, the
scripted model server answering over each wire format, the CLI run as a user runs it, and the
run folder read back."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import run_cli
from support.env import WIRES, model_env
from support.project import model, wire_script, workflow, write_project
from support.runs import events
from support.wire_server import Reply, WireServer, call, calls


@pytest.mark.parametrize("wire", WIRES)
def test_the_writer_writes_its_note(tmp_path: Path, wire: str) -> None:
    spec = workflow(model(wire), entry="writer", task="Write.")
    wf = write_project(tmp_path, spec, {"writer": ["write_file"]})
    write = calls(call("write_file", path="note.md", content="hi\n"))
    with WireServer(wire_script({"writer": [write, Reply("Done.")]})) as server:
        proc = run_cli([str(wf), "--run-id", "r"], cwd=tmp_path, env=model_env(server, wire))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "runs" / "r" / "note.md").read_text() == "hi\n"
    assert events(tmp_path / "runs" / "r")[-1]["status"] == "completed"
