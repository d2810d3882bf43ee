"""Writers of one memory are serialised: 20 batch items over two worker processes write the same
memory at once (a file each and a line of the same MEMORY.md) and lose no write; every MEMORY.md
change starts from the one before it (its `before` digest is the last one's `after`), and the
search index finds every item."""

from __future__ import annotations

import json
import re
from pathlib import Path

from support.cli import run_cli
from support.env import model_env
from support.project import model, workflow, write_files, write_project
from support.runs import events, folders
from support.wire_server import Reply, WireRequest, WireServer, call, calls

ITEMS = 20
INDEX = "/memories/MEMORY.md"


def writes_its_note(request: WireRequest) -> Reply:
    """Item N's agent: a file of its own and a line in the shared index, at once; then done."""
    if request.assistant_turns:
        return Reply("Saved.")
    n = re.search(r"Item (\d+)\.", json.dumps(request.messages))
    assert n is not None, request.messages
    item = n.group(1)
    return calls(
        call("memory", command="create", path=f"/memories/item-{item}.md", file_text=f"token{item}x noted\n"),
        call(
            "memory",
            command="insert",
            path=INDEX,
            insert_line=1,
            insert_text=f"- item {item}: item-{item}.md",
        ),
    )


def test_twenty_batch_items_write_one_memory_at_once_and_lose_no_write(tmp_path: Path) -> None:
    spec = workflow(model("openai"), entry="boss", task="Item {{ n }}.", inputs={"n": {}})
    wf = write_project(tmp_path, spec, {"boss": {"memory": {"scope": "project", "name": "shared"}}})
    folder = write_files(tmp_path / ".flowrun" / "memory" / "shared", {"MEMORY.md": "# Index\n"})
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"n": n}) + "\n" for n in range(ITEMS)))
    out = tmp_path / "out"
    with WireServer(writes_its_note) as server:
        proc = run_cli(
            ["batch", str(wf), str(items), "--out", str(out), "-c", str(ITEMS), "--processes", "2", "-q"],
            cwd=tmp_path,
            env=model_env(server, "openai"),
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{ITEMS} items: {ITEMS} completed" in proc.stdout
    lines = (folder / "MEMORY.md").read_text().splitlines()
    assert lines[0] == "# Index" and len(lines) == ITEMS + 1
    assert sorted(lines[1:]) == sorted(f"- item {n}: item-{n}.md" for n in range(ITEMS))
    for n in range(ITEMS):
        assert (folder / f"item-{n}.md").read_text() == f"token{n}x noted\n"
    writes = [e for run in folders(out / "runs") for e in events(run) if e["type"] == "memory_write"]
    results = [
        e["result"] for run in folders(out / "runs") for e in events(run) if e["type"] == "tool_result"
    ]
    assert len(writes) == 2 * ITEMS and all(r["status"] == "success" for r in results)
    # one chain: each change of MEMORY.md starts from what the one before it left
    inserts = [w for w in writes if w["path"] == INDEX]
    starts = {w["before"] for w in inserts}
    ends = {w["after"] for w in inserts}
    assert len(starts) == ITEMS and len(ends) == ITEMS  # no two changes started from the same text
    assert len(starts - ends) == 1 and len(ends - starts) == 1  # the first's start, the last's end
    # the search index is consistent with the files: every item's file is found
    tokens = [f"token{n}x" for n in range(ITEMS)]
    found = run_cli(["memory", "search", "boss", *tokens, "--limit", "100", "-p", str(wf)], cwd=tmp_path)
    assert found.returncode == 0, found.stdout + found.stderr
    hits = sorted(line.split(":")[0] for line in found.stdout.splitlines())
    assert hits == sorted(f"/memories/item-{n}.md" for n in range(ITEMS))
