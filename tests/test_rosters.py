"""The other rosters, from YAML alone: each example in examples/ runs end to end as a subprocess
(`flowrun examples/X.yaml ...`) with the real anthropic and openai SDKs talking to the scripted
wire server, and the assertions read events.jsonl, the run folder and what the server received.

Replies must be a pure function of the request (TESTING.md 6). Where a conversation restarts
(a dashboard reset, a new loop iteration) the number of assistant turns starts again at 0, so
those responders key on what the restarted request says (the dashboard text, the iteration)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli
from support.env import WIRES, model_env
from support.paths import REPO
from support.runs import events as read_events
from support.wire_server import Reply, Script, WireRequest, WireServer, call

EXAMPLES = REPO / "examples"
# the shell commands the agents run use the system interpreter: they run in the sandbox, which
# shows the system folders but not a virtualenv or $HOME
PYTHON = "python3"
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "Instructor",
    "GIT_AUTHOR_EMAIL": "instructor@example.invalid",
    "GIT_COMMITTER_NAME": "Instructor",
    "GIT_COMMITTER_EMAIL": "instructor@example.invalid",
}


# ---------------------------------------------------------------- helpers


def run_example(
    tmp_path: Path,
    server: WireServer,
    provider: str,
    workflow: Path,
    inputs: dict[str, str],
    env: dict[str, str] | None = None,
    override: bool = True,
) -> tuple[int, str, Path]:
    """Run a workflow against the wire server. anthropic: the workflow's own models with the base
    URL from the env; openai: `--model openai:gpt-test` for every agent unless `override` is off."""
    full_env = {"FLOWRUN_RETRY_BASE_S": "0.01", **(env or {})}
    args = [str(workflow)]
    for name, value in inputs.items():
        args += [f"--{name}", value]
    args += ["--runs-dir", str(tmp_path / "runs"), "--run-id", "r1"]
    full_env |= model_env(server, provider)
    if provider == "openai":
        if override:
            args += ["--model", "openai:gpt-test"]
    proc = run_cli(args, cwd=tmp_path, env=full_env)
    return proc.returncode, proc.stdout + proc.stderr, tmp_path / "runs" / "r1"


def of_type(events: list[dict[str, Any]], kind: str, **fields: Any) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind and all(e.get(k) == v for k, v in fields.items())]


def first_user_text(request: WireRequest) -> str:
    """The opening user message of a conversation (the task, plus dashboards if any)."""
    for message in request.messages:
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")
    return ""


def user_texts(request: WireRequest) -> list[str]:
    """The text of every user turn before the first answer (OpenAI: one message each; Anthropic
    merges consecutive user turns into one message of several text blocks)."""
    texts: list[str] = []
    for message in request.messages:
        if message.get("role") == "assistant":
            break
        content = message.get("content")
        if message.get("role") == "user":
            if isinstance(content, str):
                texts.append(content)
            else:
                texts += [b.get("text", "") for b in content if b.get("type") == "text"]
    return texts


def for_agent(requests: list[WireRequest], marker: str) -> list[WireRequest]:
    return [r for r in requests if marker in r.system]


def result_of(events: list[dict[str, Any]], agent: str, tool: str) -> list[dict[str, Any]]:
    return [e["result"] for e in of_type(events, "tool_result", agent=agent, tool=tool)]


def pick(replies: list[Reply], request: WireRequest) -> Reply:
    turn = request.assistant_turns
    return replies[turn] if turn < len(replies) else Reply(text="(no more scripted replies)")


def assert_ok(code: int, out: str, run_dir: Path) -> list[dict[str, Any]]:
    assert code == 0, out
    assert "Traceback" not in out
    assert json.loads((run_dir / "run.json").read_text())["status"] == "completed"
    events = read_events(run_dir)
    assert events[-1]["type"] == "run_end" and events[-1]["status"] == "completed"
    return events


# ---------------------------------------------------------------- research v2

RESEARCHER = "You are the researcher of a deep research project"
FILE_AGENT = "You are the file assistant of a research project"
QUESTION = "Is Python's sort stable?"
NOTE = (
    "# Sorting stability\n\n"
    + "STABLE-SORT-DETAIL: sorted() and list.sort() keep equal keys in order.\n" * 30
)
REPORT = "# Report\n\nYes: Python's sorts are stable (Notebook/01_sorting.md).\n"
NEW_CURRENT = (
    "# Current dashboard\n\nPhase: writing\n\n"
    "## Next steps\n1. Write report.md from Notebook/01_sorting.md.\n"
)


def research_v2_responder(request: WireRequest) -> Reply:
    opening = "\n\n".join(user_texts(request))
    if FILE_AGENT in request.system:
        if "Create the note" in opening:
            replies = [
                Reply(tool_calls=[call("write_file", path="Notebook/01_sorting.md", content=NOTE)]),
                # the dashboards are read-only for the file agent
                Reply(
                    tool_calls=[
                        call("write_file", path="current_dashboard.md", content="x", mode="overwrite")
                    ]
                ),
                Reply(text="Created Notebook/01_sorting.md with the stability findings (31 lines)."),
            ]
        else:
            replies = [
                Reply(tool_calls=[call("grep", pattern="STABLE-SORT", path="Notebook", max_matches=1)]),
                Reply(tool_calls=[call("write_file", path="report.md", content=REPORT)]),
                Reply(text="Wrote report.md (3 lines) from Notebook/01_sorting.md."),
            ]
    elif RESEARCHER in request.system:
        if "Phase: writing" not in opening:
            replies = [
                Reply(tool_calls=[call("web_search", query="python sort stable key function")]),
                Reply(
                    tool_calls=[
                        call(
                            "file_operation",
                            task="Create the note Notebook/01_sorting.md on sort stability "
                            "from the search results.",
                        )
                    ]
                ),
                Reply(tool_calls=[call("update_current_dashboard", content=NEW_CURRENT)]),
            ]
        else:
            replies = [
                Reply(
                    tool_calls=[call("file_operation", task="Write report.md from Notebook/01_sorting.md.")]
                ),
                Reply(tool_calls=[call("all_finished", result="Report written to report.md")]),
                Reply(text="never requested: all_finished ends the run"),
            ]
    else:
        return Reply(
            status=400, error_body={"error": {"message": "unknown agent", "type": "invalid_request_error"}}
        )
    return pick(replies, request)


@pytest.mark.parametrize("provider", WIRES)
def test_research_v2(tmp_path: Path, provider: str) -> None:
    with WireServer(research_v2_responder) as server:
        code, out, run_dir = run_example(
            tmp_path, server, provider, EXAMPLES / "research_v2.yaml", {"question": QUESTION}
        )
        requests = server.requests
    events = assert_ok(code, out, run_dir)

    # the seeded workspace, then what the agents left in it
    assert (run_dir / "Notebook" / "README.md").exists()
    assert QUESTION in (run_dir / "overall_dashboard.md").read_text()
    assert (run_dir / "current_dashboard.md").read_text() == NEW_CURRENT
    assert (run_dir / "Notebook" / "01_sorting.md").read_text() == NOTE
    assert (run_dir / "report.md").read_text() == REPORT

    # who called whom: two file_operation sub-agents, both started by the researcher
    (top,) = of_type(events, "agent_start", agent="researcher")
    assert top["parent"] is None
    subs = of_type(events, "agent_start", agent="file_operation")
    assert len(subs) == 2 and all(s["parent"] == top["agent_id"] for s in subs)
    denied = result_of(events, "file_operation", "write_file")[1]
    assert denied["status"] == "error" and denied["error"]["code"] == "PERMISSION_DENIED"

    # the note went to a file; the researcher got the summary and the path, never the note
    note_result = result_of(events, "researcher", "file_operation")[0]
    assert "Notebook/01_sorting.md" in note_result["text"] and "Output files" in note_result["text"]
    assert "STABLE-SORT-DETAIL" not in note_result["text"]
    assert note_result["data"]["output_files"] == ["Notebook/01_sorting.md"]
    researcher_requests = for_agent(requests, RESEARCHER)
    assert not any("STABLE-SORT-DETAIL" in json.dumps(r.messages) for r in researcher_requests)

    # update_current_dashboard (one of the design's two update tools, declared in tools.d over
    # update_dashboard) reset the researcher's history to the design's shape: the system prompt,
    # the overall dashboard, the current dashboard (task_after_reset: false)
    (reset,) = of_type(events, "context_reset", agent="researcher")
    asked = of_type(events, "model_request", agent="researcher")
    before = [e for e in asked if e["seq"] < reset["seq"]]
    after = [e for e in asked if e["seq"] > reset["seq"]]
    assert before[-1]["messages"] == 5 and after[0]["messages"] == 2
    assert reset["messages_before"] > reset["messages_after"] == 2
    restarted = researcher_requests[3]
    assert restarted.assistant_turns == 0 and len(restarted.messages) < len(researcher_requests[2].messages)
    overall, current = user_texts(restarted)
    assert overall.startswith("## Dashboard 'overall' (overall_dashboard.md)\n# Overall dashboard")
    assert QUESTION in overall and "## Blueprint" in overall
    assert current == "## Dashboard 'current' (current_dashboard.md)\n" + NEW_CURRENT
    assert "Research title:" not in json.dumps(restarted.messages)  # the task is not repeated
    assert {"update_overall_dashboard", "update_current_dashboard"} <= set(restarted.tool_names)
    assert "update_dashboard" not in restarted.tool_names
    assert "python sort stable" not in json.dumps(restarted.messages)  # the old turns are gone
    assert RESEARCHER in restarted.system  # the system prompt stays

    # all_finished ended the run: no researcher call after it
    (end,) = of_type(events, "agent_end", agent="researcher")
    assert end["status"] == "finished"
    assert len(researcher_requests) == 5
    assert {r.api for r in requests} == {provider}


# ---------------------------------------------------------------- instructor / worker

INSTRUCTOR = "You are the instructor of a two-agent team"
WORKER = "You are the worker of a two-agent team"
INSTRUCTION_1 = "Create calc.py with add(a, b) and check that add(2, 3) prints 5."
INSTRUCTION_2 = "Now add subtract(a, b) to the same file and check subtract(7, 4)."
CALC_1 = "def add(a, b):\n    return a + b\n"
CALC_2 = CALC_1 + "\n\ndef subtract(a, b):\n    return a - b\n"


def instructor_worker_script() -> Script:
    return Script(
        {
            "instructor": [
                Reply(tool_calls=[call("read_file", path="TASK.md"), call("git", args=["init"])]),
                Reply(
                    text="Plan: add() first.", tool_calls=[call("worker", task=INSTRUCTION_1, model="haiku")]
                ),
                Reply(tool_calls=[call("git", args=["add", "-A"])]),
                Reply(tool_calls=[call("git", args="commit -m 'Add calc.add'")]),
                # DONE mid-text does not stop: the pattern wants it at the very end
                Reply(
                    text="Not DONE yet: subtract comes next.",
                    tool_calls=[call("worker", task=INSTRUCTION_2, model="sonnet")],
                ),
                Reply(tool_calls=[call("git", args=["diff"])]),
                Reply(text="calc.py has add and subtract; the worker checked both.\nDONE"),
                Reply(text="never requested: DONE ended the session"),
            ],
            "worker": [
                Reply(tool_calls=[call("write_file", path="calc.py", content=CALC_1)]),
                Reply(
                    tool_calls=[
                        call("execute_shell", command=f"{PYTHON} -c 'import calc; print(calc.add(2, 3))'")
                    ]
                ),
                Reply(text="Created calc.py with add(); the check printed 5."),
                # second instruction: the conversation above is still there
                Reply(
                    tool_calls=[
                        call("edit_file", path="calc.py", old_string=CALC_1, new_string=CALC_2),
                    ]
                ),
                Reply(
                    tool_calls=[
                        call("execute_shell", command="git status"),
                        call(
                            "execute_shell", command=f"{PYTHON} -c 'import calc; print(calc.subtract(7, 4))'"
                        ),
                    ]
                ),
                Reply(text="Added subtract(); the check printed 3. git is not available to me."),
            ],
        },
        {"instructor": INSTRUCTOR, "worker": WORKER},
    )


@pytest.mark.skipif(shutil.which("git") is None, reason="the instructor's git tool needs git")
@pytest.mark.parametrize("provider", WIRES)
def test_instructor_worker(tmp_path: Path, provider: str) -> None:
    with WireServer(instructor_worker_script()) as server:
        code, out, run_dir = run_example(
            tmp_path,
            server,
            provider,
            EXAMPLES / "instructor_worker.yaml",
            {"task": "Write a tiny calculator module calc.py."},
            env=GIT_IDENTITY,
        )
        requests = server.requests
    events = assert_ok(code, out, run_dir)
    assert (run_dir / "calc.py").read_text() == CALC_2

    # the instructor ended on DONE at the end of its text, not on the earlier "Not DONE yet"
    (end,) = of_type(events, "agent_end", agent="instructor")
    assert end["status"] == "stopped" and end["steps"] == 7
    assert len(for_agent(requests, INSTRUCTOR)) == 7

    # permissions per role: git for the instructor, a shell (that refuses git) for the worker
    tools = {e["agent"]: set(e["tools"]) for e in of_type(events, "model_request")}
    assert {"git", "worker"} <= tools["instructor"] and "execute_shell" not in tools["instructor"]
    assert "execute_shell" in tools["worker"] and "git" not in tools["worker"]
    shell = result_of(events, "worker", "execute_shell")
    assert shell[0]["status"] == "success" and shell[0]["data"]["stdout"].strip() == "5"
    refused = next(r for r in shell if r["context"]["params_input"]["command"] == "git status")
    assert refused["status"] == "error" and refused["error"]["code"] == "PERMISSION_DENIED"
    assert any(r["status"] == "success" and r["data"]["stdout"].strip() == "3" for r in shell)

    # the instructor's git: the first step committed, the diff shows the second step's change
    git_results = result_of(events, "instructor", "git")
    assert all(r["status"] == "success" for r in git_results), git_results
    assert "+def subtract(a, b):" in git_results[-1]["text"]
    assert run_cli_git(run_dir, "log", "--format=%s") == "Add calc.add"
    # the seeded .gitignore kept the engine's files out of the commit
    assert run_cli_git(run_dir, "ls-files").split() == [".gitignore", "TASK.md", "calc.py"]

    # one persistent worker across both instructions, called by the instructor
    starts = of_type(events, "agent_start", agent="worker")
    assert len(starts) == 2 and {s["parent"] for s in starts} == {"instructor"}
    assert starts[0]["agent_id"] == starts[1]["agent_id"] and starts[0]["session"] == "persistent"
    asked = of_type(events, "model_request", agent="worker")
    second_start = next(e for e in asked if e["seq"] > starts[1]["seq"])
    assert asked[0]["messages"] == 1 and second_start["messages"] > asked[0]["messages"]
    worker_requests = for_agent(requests, WORKER)
    second = next(r for r in worker_requests if INSTRUCTION_2 in r.last_user_text)
    assert INSTRUCTION_1 in json.dumps(second.messages)
    assert "the check printed 5" in json.dumps(second.messages)

    # the model the instructor chose for each instruction
    schema = next(
        t
        for t in for_agent(requests, INSTRUCTOR)[0].tools
        if (t.get("name") or t["function"]["name"]) == "worker"
    )
    params = schema.get("input_schema") or schema["function"]["parameters"]
    assert params["properties"]["model"]["enum"] == ["sonnet", "haiku"]
    models = [r.body["model"] for r in worker_requests]
    if provider == "anthropic":
        assert models == ["claude-haiku-4-5"] * 3 + ["claude-sonnet-4-5"] * 3
        assert {r.body["model"] for r in for_agent(requests, INSTRUCTOR)} == {"claude-sonnet-4-5"}
        assert [e["model"] for e in starts] == ["haiku", "sonnet"]
    else:  # --model overrides every agent, the instructor's choice included
        assert set(models) == {"gpt-test"}

    check_conversation(tmp_path, run_dir)


def check_conversation(tmp_path: Path, run_dir: Path) -> None:
    """`flowrun show --messages`: the worker's conversation under the instructor's calls, its
    replies both there and as what the instructor read back; `--agent`, `--json`."""
    proc = run_cli(["show", str(run_dir), "--messages"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    reply = "Created calc.py with add(); the check printed 5."
    # inside the worker's segment (nested under the call), then as the instructor's tool result
    assert f"  │     {reply}" in lines
    result_at = next(i for i, line in enumerate(lines) if line.startswith("tool worker ["))
    # the worker's answer, framed as data naming it (the block's first line, then its text)
    assert lines[result_at].endswith(": success") and lines[result_at + 2] == f"    {reply}"
    assert lines[result_at + 1].startswith("    <foreign-text source=\"agent 'worker', its answer\"")
    assert lines.index(f"  │     {reply}") < result_at
    assert any(line.startswith("  → worker {") and INSTRUCTION_1 in line for line in lines)
    assert sum(line.startswith("  │ ── worker · instructor/worker") for line in lines) == 2
    assert "  │ (its conversation goes on from its earlier call)" in lines
    assert lines[-2:] == ["    DONE", "[stopped after 7 step(s)]"]

    worker = run_cli(["show", str(run_dir), "--messages", "--agent", "worker"], cwd=tmp_path).stdout
    assert worker.startswith("── worker · instructor/worker") and "── instructor" not in worker
    assert f"    {reply}" in worker.splitlines()

    data = json.loads(run_cli(["show", str(run_dir), "--messages", "--json"], cwd=tmp_path).stdout)
    assert [(i["agent"], i["parent"]) for i in data] == [("instructor", None), ("worker", "instructor")]
    said = [m["text"] for m in data[1]["messages"] if m["role"] == "assistant"]
    assert reply in said and said[-1].startswith("Added subtract()")
    calls = [c for m in data[0]["messages"] if m["role"] == "assistant" for c in m["tool_calls"]]
    assert [c["agent_ids"] for c in calls if c["name"] == "worker"] == [["instructor/worker"]] * 2


def run_cli_git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


# ---------------------------------------------------------------- init / execute

INIT = "You are the init agent"
EXECUTE = "You are the execute agent"
DESIGN = (
    "# Scenario: unit converter\n\n## Interface\n"
    "- Entry point: `convert:convert(value, from_unit, to_unit)`\n\n"
    "## Rules\n- **R1** km <-> mi.\n- **R2** C -> F: F = C * 9/5 + 32.\n"
)
HANDOFF = {"scenario": "unit converter", "entry_point": "convert:convert", "rules": ["R1", "R2"]}
CONVERT = """\
FACTORS = {("km", "mi"): KM_MI, ("mi", "km"): 1 / KM_MI}


def convert(value, from_unit, to_unit):
    if (from_unit, to_unit) == ("c", "f"):
        return value * 9 / 5 + 32
    return value * FACTORS[(from_unit, to_unit)]
"""
SAMPLES = {
    "R1-km-mi-10": {"input": {"value": 10, "from_unit": "km", "to_unit": "mi"}, "expected": 6.21371192},
    "R1-mi-km-1": {"input": {"value": 1, "from_unit": "mi", "to_unit": "km"}, "expected": 1.609344},
    "R2-c-f-0": {"input": {"value": 0, "from_unit": "c", "to_unit": "f"}, "expected": 32},
    "R2-c-f-100": {"input": {"value": 100, "from_unit": "c", "to_unit": "f"}, "expected": 212},
}
CHECKER_TEMPLATE = (EXAMPLES / "skills" / "checker_implementation" / "templates" / "checker.py").read_text()
CHECK = f"{PYTHON} checker.py --samples samples --target convert:convert --out result.json"


def iteration_of(request: WireRequest) -> int:
    opening = first_user_text(request)
    return next(n for n in (1, 2, 3) if f"Iteration {n} of" in opening)


def execute_replies(iteration: int) -> list[Reply]:
    # iteration 1 uses a rounded km/mi factor (a real bug the checker catches); 2 the exact one
    factor = "0.6" if iteration == 1 else "1 / 1.609344"
    writes = [
        call("write_file", path="convert.py", content=f"KM_MI = {factor}\n" + CONVERT),
        call("write_file", path="checker.py", content=CHECKER_TEMPLATE),
        *(
            call(
                "write_file",
                path=f"samples/{sid}.json",
                content=json.dumps({"id": sid, "rule": sid[:2], **s}),
            )
            for sid, s in SAMPLES.items()
        ),
    ]
    feedback = f"# Iteration {iteration} feedback\n\nSee result.json.\n"
    return [
        Reply(
            tool_calls=[
                call("use_skill", skill="checker_implementation", file="templates/checker.py"),
                call("read_file", path="../../design/handoff.json"),
            ]
        ),
        Reply(tool_calls=writes),
        Reply(tool_calls=[call("execute_shell", command=CHECK)]),
        Reply(tool_calls=[call("write_file", path="feedback.md", content=feedback)]),
        Reply(text=f"Iteration {iteration} scored; feedback in feedback.md."),
    ]


def init_replies(iteration: int) -> list[Reply]:
    if iteration == 1:
        return [
            Reply(tool_calls=[call("use_skill", skill="scenario_design_sop")]),
            Reply(
                tool_calls=[
                    call("write_file", path="design/scenario.md", content=DESIGN),
                    call("write_file", path="design/handoff.json", content=json.dumps(HANDOFF)),
                ]
            ),
            Reply(text="Designed the unit converter in design/."),
        ]
    return [
        Reply(
            tool_calls=[call("read_file", path=f"execution_outputs/iteration_{iteration - 1}/feedback.md")]
        ),
        Reply(
            tool_calls=[
                call(
                    "edit_file",
                    path="design/scenario.md",
                    old_string="**R1** km <-> mi.",
                    new_string="**R1** km <-> mi with 1 mi = 1.609344 km exactly.",
                )
            ]
        ),
        Reply(text="R1 now states the exact factor."),
    ]


def init_execute_responder(request: WireRequest) -> Reply:
    if EXECUTE in request.system:
        return pick(execute_replies(iteration_of(request)), request)
    if INIT in request.system:
        return pick(init_replies(iteration_of(request)), request)
    return Reply(
        status=400, error_body={"error": {"message": "unknown agent", "type": "invalid_request_error"}}
    )


@pytest.mark.parametrize("provider", WIRES)
def test_init_execute(tmp_path: Path, provider: str) -> None:
    with WireServer(init_execute_responder) as server:
        code, out, run_dir = run_example(
            tmp_path, server, provider, EXAMPLES / "init_execute.yaml", {"task": "A km/mi and C/F converter."}
        )
    events = assert_ok(code, out, run_dir)

    # the loop stopped on its condition after iteration 2 of 3
    ends = of_type(events, "iteration_end")
    assert [(e["iteration"], e["until_met"]) for e in ends] == [(1, False), (2, True)]
    assert not of_type(events, "iteration_start", iteration=3)
    assert [e["agent"] for e in of_type(events, "agent_start")] == ["init", "execute", "init", "execute"]

    # the checker really ran in each iteration's folder and scored the real implementation
    out1 = run_dir / "execution_outputs" / "iteration_1"
    out2 = run_dir / "execution_outputs" / "iteration_2"
    first = json.loads((out1 / "result.json").read_text())
    assert first["success_rate"] == 0.5 and first["total"] == 4
    assert sorted(f["id"] for f in first["failures"]) == ["R1-km-mi-10", "R1-mi-km-1"]
    assert json.loads((out2 / "result.json").read_text())["success_rate"] == 1.0
    for folder in (out1, out2):
        assert {p.name for p in folder.iterdir()} >= {"convert.py", "checker.py", "samples", "feedback.md"}
    shell = result_of(events, "execute", "execute_shell")
    assert "2/4 passed" in shell[0]["data"]["stdout"] and "4/4 passed" in shell[1]["data"]["stdout"]
    writes = result_of(events, "execute", "write_file")
    assert writes[0]["context"]["path_resolved"] == "execution_outputs/iteration_1/convert.py"

    # both agents read the skills library
    sop = result_of(events, "init", "use_skill")[0]
    assert sop["status"] == "success" and "# Scenario design SOP" in sop["text"]
    assert "templates/scenario.md" in sop["data"]["included"]
    template = result_of(events, "execute", "use_skill")[0]
    assert template["status"] == "success" and "def main() -> int:" in template["text"]

    # iteration 2's init saw iteration 1's score (rendered from result.json) and fixed the design
    init_tasks = [e["task"] for e in of_type(events, "agent_start", agent="init")]
    assert "success_rate\n0.5" in init_tasks[1]
    assert "1 mi = 1.609344 km" in (run_dir / "design" / "scenario.md").read_text()


# ---------------------------------------------------------------- ReAct

EXPLORER = "You are a documentation explorer"
ANSWER = "# Sorting\n\nPython's sorts are stable:\n\n```python\nsorted(data, key=itemgetter(1))\n```\n"
REACT_REPLIES = [
    Reply(
        text="Thought: find the sorting guide.\nAction: glob\n"
        'Action Input: {"pattern": "**/sort*.md", "path": "corpus"}'
    ),
    Reply(
        text="Thought: check what it says about stability.\nAction: grep\n"
        'Action Input: {"pattern": "guaranteed to be stable", "path": "corpus/howto/sorting.md"}'
    ),
    # a multi-line Action Input with escapes, then an invented observation the parser must ignore
    Reply(
        text="Thought: I can answer now.\nAction: write_file\nAction Input: {\n"
        '  "path": "answer.md",\n'
        f'  "content": {json.dumps(ANSWER)}\n'
        "}\nObservation: (the model must not write this)"
    ),
    Reply(text="Thought: the answer is written.\nFinal Answer: Sorts are stable; see answer.md."),
]


def react_workflow(tmp_path: Path, provider: str) -> Path:
    """The react example itself for anthropic; for openai a copy whose default model is the
    example's openai react model (`--model` would switch to native tool calls)."""
    if provider == "anthropic":
        return EXAMPLES / "react.yaml"
    project = tmp_path / "project"
    (project / "agents.d").mkdir(parents=True)
    (project / "prompts").mkdir()
    text = (EXAMPLES / "react.yaml").read_text()
    assert "default_model: claude_react" in text
    (project / "react.yaml").write_text(
        text.replace("default_model: claude_react", "default_model: gpt_react")
    )
    shutil.copy(EXAMPLES / "agents.d" / "explorer.yaml", project / "agents.d")
    shutil.copy(EXAMPLES / "prompts" / "explorer.md.j2", project / "prompts")
    (project / "corpus").symlink_to(EXAMPLES / "corpus", target_is_directory=True)
    return project / "react.yaml"


@pytest.mark.parametrize("provider", WIRES)
def test_react(tmp_path: Path, provider: str) -> None:
    workflow = react_workflow(tmp_path, provider)
    with WireServer(Script({"explorer": REACT_REPLIES}, {"explorer": EXPLORER})) as server:
        code, out, run_dir = run_example(
            tmp_path, server, provider, workflow, {"question": "Is sorting stable?"}, override=False
        )
        requests = server.requests
    events = assert_ok(code, out, run_dir)

    # the multi-line Action Input was parsed into a real write
    assert (run_dir / "answer.md").read_text() == ANSWER
    calls = of_type(events, "tool_call", agent="explorer")
    assert [c["tool"] for c in calls] == ["glob", "grep", "write_file"]
    assert calls[2]["arguments"] == {"path": "answer.md", "content": ANSWER}
    (end,) = of_type(events, "agent_end", agent="explorer")
    assert end["status"] == "completed"
    assert "Sorts are stable; see answer.md." in events[-1]["message"]

    # the wire carried text only: no native tools, the protocol and tools in the system prompt,
    # results as Observation turns
    assert len(requests) == 4 and {r.api for r in requests} == {provider}
    assert all(r.tool_names == [] for r in requests)
    assert "Action Input" in requests[0].system and "write_file" in requests[0].system
    assert "Observation:" in requests[1].last_user_text and "howto/sorting.md" in requests[1].last_user_text
    assert "guaranteed to be stable" in requests[2].last_user_text
