"""People in the loop of an agent's memory: `flowrun memory show|search|edit|forget|export`,
`validate` on `memory:` (one line each, at its file:line), the reflection at the end of a run, a
dry run's copy, `git: true`, and the HTTP routes the web UI reads (an agent's memory, a run's
writes)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from support.cli import run_cli
from support.env import model_env
from support.project import SCRIPTED, model, script_manifest, workflow, write_files, write_project
from support.runs import events, meta
from support.served import Served, wait_status
from support.wire_server import Reply, WireRequest, WireServer, call, calls

MEMORY = "/memories/MEMORY.md"
KEY = "tok-9f8e7d6c5b4a3921"


def project(root: Path, memory: object = "project", model_entry: object = SCRIPTED, **agents: object) -> Path:
    spec = workflow(model_entry, entry="boss", task="Go.")  # type: ignore[arg-type]
    return write_project(root, spec, {"boss": {"memory": memory}, **agents})  # type: ignore[dict-item]


def test_show_search_edit_forget_and_export(tmp_path: Path) -> None:
    wf = project(tmp_path, {"scope": "project", "git": True, "index_lines": 2})
    folder = write_files(
        tmp_path / ".flowrun" / "memory" / "boss",
        {
            "MEMORY.md": "- build: run make gen first\n- tests: pytest -n 2\n- style: ruff\n",
            "deploy.md": "ssh in\n",
        },
    )
    shown = run_cli(["memory", "show", "boss", "-p", str(wf)], cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert f"memory 'boss' of agent boss (project): {folder}" in shown.stdout
    assert "  /memories/deploy.md  7 bytes" in shown.stdout
    assert (
        "- tests: pytest -n 2\n--- a prompt's index stops here (2 lines; `index_lines`) ---\n- style"
        in shown.stdout
    )
    found = run_cli(["memory", "search", "boss", "deploying", "ssh"], cwd=tmp_path)
    assert found.returncode == 0 and found.stdout.startswith("/memories/deploy.md:1: [ssh] in"), found.stdout
    none = run_cli(["memory", "search", "boss", "kubernetes"], cwd=tmp_path)
    assert none.returncode == 1 and "no passage matches" in none.stdout

    env = {"EDITOR": f"sed -i s/ruff/ruff,{KEY}/", "SERVICE_TOKEN": KEY}
    edited = run_cli(["memory", "edit", "boss"], cwd=tmp_path, env=env)
    assert edited.returncode == 0, edited.stdout + edited.stderr
    assert "1 secret(s) replaced by [REDACTED]" in edited.stdout
    assert (folder / "MEMORY.md").read_text().endswith("- style: ruff,[REDACTED]\n")
    log = subprocess.run(["git", "-C", str(folder), "log", "--format=%s"], capture_output=True, text=True)
    assert log.stdout.splitlines() == ["flowrun memory edit: /memories/MEMORY.md"]

    exported = run_cli(["memory", "export", "boss", "-o", "memory.json"], cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    document = json.loads((tmp_path / "memory.json").read_text())
    assert (document["memory"], document["scope"]) == ("boss", "project")
    assert [f["path"] for f in document["files"]] == ["/memories/MEMORY.md", "/memories/deploy.md"]
    assert document["files"][1]["text"] == "ssh in\n" and len(document["files"][1]["sha256"]) == 64

    asked = run_cli(["memory", "forget", "boss", "deploy.md"], cwd=tmp_path)
    assert asked.returncode == 1 and "add --yes" in asked.stderr  # no terminal to confirm on
    forgot = run_cli(["memory", "forget", "boss", "deploy.md", "--yes"], cwd=tmp_path)
    assert forgot.returncode == 0 and not (folder / "deploy.md").exists(), forgot.stderr
    escape = run_cli(["memory", "forget", "boss", "../wf.yaml", "--yes"], cwd=tmp_path)
    assert escape.returncode == 1 and (tmp_path / "wf.yaml").exists()
    assert escape.stderr.startswith("error: FILE '/memories/../wf.yaml' has a '..' part")
    unknown = run_cli(["memory", "show", "bos"], cwd=tmp_path)
    assert unknown.returncode == 2 and "did you mean 'boss'?" in unknown.stderr  # (a usage mistake)


def test_validate_checks_memory_keys_and_warns_of_an_index_over_its_cap(tmp_path: Path) -> None:
    project(
        tmp_path,
        {"scope": "project", "reflect": "reflecter", "index_lines": 3},
        helper={"memory": {"scope": "user", "name": "boss", "writes": "none", "reflect": True}},
        lister={"tools": ["memory"]},
        reflector={},
    )
    write_files(
        tmp_path,
        {"wf.yaml": workflow(SCRIPTED, steps=[{"agent": "boss"}, {"agent": "helper"}, {"agent": "lister"}])},
    )
    write_files(tmp_path / ".flowrun" / "memory" / "boss", {"MEMORY.md": "- a\n- b\n- c\n- d\n"})
    proc = run_cli(["validate", "."], cwd=tmp_path)
    out = proc.stdout
    assert proc.returncode == 1, out
    assert "agents.d/boss.yaml:" in out and "error[unknown-agent]: unknown reflect agent 'reflecter'" in out
    assert "did you mean 'reflector'?" in out
    assert "error[memory-read-only]: a read-only memory (`writes: none`) has no reflection" in out
    assert "error[memory-mismatch]: memory 'boss' is declared with scope user here and project" in out
    assert (
        "agents.d/lister.yaml:" in out
        and "error[memory-undeclared]: agent 'lister' lists the memory tool" in out
    )
    assert (
        "warning[memory-index-cap]: memory 'boss':" in out
        and "has 4 lines (16 bytes), over what a prompt gets (3 lines" in out
    )
    assert "Traceback" not in out + proc.stderr


def reflecting(request: WireRequest) -> Reply:
    """The boss answers; its reflection (told the run has ended) saves a note, then stops."""
    if "The run has ended." not in json.dumps(request.messages):
        return Reply("The answer is 42.")
    if request.assistant_turns == 0:
        return calls(call("memory", command="create", path=MEMORY, file_text="- the answer is 42\n"))
    return Reply("Saved the answer.")


def test_the_reflection_at_the_end_of_a_run_updates_the_memory_and_replays(tmp_path: Path) -> None:
    wf = project(tmp_path, {"scope": "project", "writes": "reflect"}, model_entry=model("openai"))
    with WireServer(reflecting) as server:
        proc = run_cli([str(wf), "--run-id", "r", "-q"], cwd=tmp_path, env=model_env(server, "openai"))
        [first, reflection, _] = server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / ".flowrun" / "memory" / "boss" / "MEMORY.md").read_text() == "- the answer is 42\n"
    assert first.tool_names == ["memory"] and "it is read-only for you" in first.system  # (writes: reflect)
    assert reflection.tool_names == ["memory"]
    assert '<conversation agent="boss">' in reflection.last_user_text
    assert "[assistant]\nThe answer is 42." in reflection.last_user_text  # it read the run's conversation
    found = events(tmp_path / "runs" / "r")
    [write] = [e for e in found if e["type"] == "memory_write"]
    assert write["agent_id"] == "boss@reflect"
    assert [e["agent_id"] for e in found if e["type"] == "agent_end"] == ["boss", "boss@reflect"]
    replayed = run_cli(["replay", "runs/r", "--diff"], cwd=tmp_path)
    assert replayed.returncode == 0 and "no step diverges" in replayed.stdout, (
        replayed.stdout + replayed.stderr
    )


def test_a_dry_run_works_on_a_copy_and_never_changes_the_memory(tmp_path: Path) -> None:
    wf = project(tmp_path)
    folder = write_files(tmp_path / ".flowrun" / "memory" / "boss", {"MEMORY.md": "- kept\n"})
    before = (folder / "MEMORY.md").stat().st_mtime_ns
    proc = run_cli([str(wf), "--run-id", "d", "--dry-run", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = tmp_path / "runs" / "d"
    recorded = meta(run_dir)["memory"]["boss"]
    assert recorded["copy"] == str(run_dir / "memory" / "boss") and recorded["folder"] == str(folder)
    assert (run_dir / "memory" / "boss" / "MEMORY.md").read_text() == "- kept\n"
    prompt = next(e for e in events(run_dir) if e["type"] == "agent_prompt")["system"]
    assert "- kept\n</memory-index>" in prompt
    assert sorted(p.name for p in folder.iterdir()) == ["MEMORY.md"]
    assert (folder / "MEMORY.md").stat().st_mtime_ns == before


def test_memory_dir_keeps_every_memory_apart_from_its_own_folder(tmp_path: Path) -> None:
    script = {
        "boss": [
            {
                "tool_calls": [
                    {
                        "name": "memory",
                        "arguments": {"command": "create", "path": MEMORY, "file_text": "- scratch\n"},
                    }
                ]
            },
            {"text": "ok"},
        ]
    }
    wf = project(tmp_path)
    write_files(tmp_path, {"script.yaml": script_manifest(script)})
    proc = run_cli([str(wf), "--run-id", "s", "--memory-dir", "scratch", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "scratch" / "project" / "boss" / "MEMORY.md").read_text() == "- scratch\n"
    assert not (tmp_path / ".flowrun").exists()
    assert meta(tmp_path / "runs" / "s")["options"]["memory_dir"] == str(tmp_path / "scratch")
    shown = run_cli(["memory", "show", "boss", "--memory-dir", "scratch"], cwd=tmp_path)
    assert shown.returncode == 0 and "- scratch" in shown.stdout, shown.stderr


def test_the_http_api_serves_an_agents_memory_and_a_runs_writes(tmp_path: Path) -> None:
    wf = project(tmp_path, model_entry=model("openai"))
    note = calls(call("memory", command="create", path="/memories/notes.md", file_text="- served\n"))
    script = {"You are the boss.": [note, Reply("Done.")]}

    def boss(request: WireRequest) -> Reply:
        replies = script["You are the boss."]
        return replies[request.assistant_turns] if request.assistant_turns < len(replies) else Reply("Done.")

    with WireServer(boss) as server:
        served = Served(
            tmp_path,
            [str(wf), "--port", "0", "--runs-dir", str(tmp_path / "runs")],
            model_env(server, "openai"),
        )
        try:
            with served.client() as http:
                started = http.post("/v1/runs", json={"workflow": "wf", "inputs": {}})
                assert started.status_code == 201, started.text
                run_id = started.json()["id"]
                assert wait_status(http, run_id, "completed", "failed")["status"] == "completed"
                of_run = http.get(f"/v1/runs/{run_id}/memory").json()
                summary = http.get(f"/v1/runs/{run_id}").json()  # what the web UI's run page draws
                of_agent = http.get("/v1/workflows/wf/memory/boss").json()
                missing = http.get("/v1/workflows/wf/memory/nobody")
        finally:
            served.stop()
    [write] = of_run["writes"]
    assert (write["command"], write["path"], write["status"], write["before"]) == (
        "create",
        "/memories/notes.md",
        "success",
        None,
    )
    assert "boss: memory boss create /memories/notes.md" in json.dumps(summary)  # a note in its tree
    assert of_run["memories"]["boss"]["files"] == {}
    assert [f["path"] for f in of_run["memories"]["boss"]["now"]] == ["/memories/notes.md"]
    assert of_agent["scope"] == "project" and of_agent["files"][0]["text"] == "- served\n"
    assert missing.status_code == 400 and "no agent 'nobody'" in missing.json()["error"]


def test_memory_writes_keep_the_check_cache_and_the_index_warning_stays_true(tmp_path: Path) -> None:
    """A memory's files are not what `validate` checks: a write within the index's caps answers
    the next check from the cache (no entry written again); crossing the cap, or growing while
    over it, checks again, so the warning appears, names the size and goes."""
    project(tmp_path, {"scope": "project", "index_lines": 3})
    index = write_files(tmp_path / ".flowrun" / "memory" / "boss", {"MEMORY.md": "- a\n- b\n"}) / "MEMORY.md"
    cache = tmp_path / "cache"
    env = {"FLOWRUN_CACHE_DIR": str(cache)}

    def validate() -> str:
        proc = run_cli(["validate", "."], cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout

    def entries() -> dict[str, int]:
        return {p.name: p.stat().st_mtime_ns for p in (cache / "checks-1").iterdir()}

    assert "0 warning(s)" in validate()
    kept = entries()
    index.write_text("- c\n- d\n- e\n")  # a run's write, within the caps
    assert "0 warning(s)" in validate() and entries() == kept
    index.write_text("- c\n- d\n- e\n- f\n")
    over = validate()
    assert "warning[memory-index-cap]: memory 'boss':" in over and "has 4 lines" in over
    index.write_text("- c\n- d\n- e\n- f\n- g\n")
    assert "has 5 lines" in validate()
    index.write_text("- short\n")
    assert "0 warning(s)" in validate()


def test_a_run_after_a_memory_write_is_answered_from_the_check_cache(tmp_path: Path) -> None:
    """The start-up a memory must not cost: with the check cache warm, a run (and `validate`)
    after the memory changed imports no cross-reference checks, nor validate any checker."""
    from test_startup import probe

    wf = project(tmp_path, model_entry=model("openai"))
    index = write_files(tmp_path / ".flowrun" / "memory" / "boss", {"MEMORY.md": "- a\n"}) / "MEMORY.md"
    env = {"FLOWRUN_CACHE_DIR": str(tmp_path / "cache")}
    args = [str(wf), "--dry-run", "-q", "--runs-dir", str(tmp_path / "runs")]
    code, _, loaded = probe(args, tmp_path, env)
    assert code == 0 and "flowrun.manifest.checks.crossref" in loaded  # the first run checks
    assert probe(["validate", "."], tmp_path, env)[0] == 0
    index.write_text("- a\n- b, noted by the run\n")
    code, out, loaded = probe(args, tmp_path, env)
    assert code == 0 and "status: completed" in out, out
    assert "flowrun.manifest.checks.crossref" not in loaded
    code, out, loaded = probe(["validate", "."], tmp_path, env)
    assert code == 0 and loaded == [], out
