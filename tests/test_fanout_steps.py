"""`parallel:`, `foreach:` and `if:` steps through `flowrun run`: the real anthropic and openai
SDKs against the scripted wire server (which sees the concurrency), a foreach over a file an
earlier step wrote, the clear errors of a bad list, replay of a fan-out, and validate's checks."""

from __future__ import annotations

import json
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli
from support.env import WIRES, model_env
from support.procs import DEADLINE_S
from support.project import agent, script_manifest, who, write_files, write_project
from support.runs import events
from support.wire_server import Reply, WireRequest, WireServer

DELAY = 0.4

FANOUT_WORKFLOW = """\
version: 1
kind: workflow
name: fan
inputs:
  questions: {type: list, description: The questions.}
models:
  claude: {provider: anthropic, model: claude-test, api_key_env: ANTHROPIC_API_KEY}
default_model: claude
steps:
  - parallel:
      - {agent: alpha, task: "Look at side A.", output: par/alpha.md}
      - {agent: beta, task: "Look at side B.", output: par/beta.md, workdir: beta_work}
  - foreach:
      input: questions
      as: question
      concurrency: 3
      collect: answers.json
      step:
        agent: researcher
        task: "Question {{ index }}: {{ question }}"
        output: "answers/{{ index }}.md"
  - agent: merger
    if: "workspace.exists('answers.json')"
    task: "Merge answers.json into one report."
  - agent: never
    if: "inputs.questions | length > 10"
    task: "This step is skipped."
"""


# agents whose requests must be in flight together: (names, how many at once)
WAVES = {"parallel": ({"alpha", "beta"}, 2), "foreach": ({"researcher"}, 3)}


class Tracker:
    """Answers each agent after DELAY seconds and keeps, per agent, the most requests it was
    answering at once (a pure function of the request otherwise: TESTING.md 6). The requests
    meant to run at the same time wait for each other before that: alpha's and beta's (the
    parallel step) and the first three researchers' (the foreach, 3 at a time), so a busy
    machine cannot make them miss each other; if the engine did not send them together they
    would wait for DEADLINE_S, and the checks on `most` fail."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now: dict[str, int] = {}
        self.most: dict[str, int] = {}
        self.arrived = dict.fromkeys(WAVES, 0)
        self.together = {wave: threading.Event() for wave in WAVES}

    def __call__(self, request: WireRequest) -> Reply:
        name = who(request)
        wave = next((w for w, (names, _) in WAVES.items() if name in names), None)
        with self.lock:
            self.now[name] = self.now.get(name, 0) + 1
            self.most[name] = max(self.most.get(name, 0), self.now[name])
            if wave is not None:
                self.arrived[wave] += 1
                if self.arrived[wave] >= WAVES[wave][1]:
                    self.together[wave].set()
        if wave is not None:
            self.together[wave].wait(DEADLINE_S)
        time.sleep(DELAY)
        with self.lock:
            self.now[name] -= 1
        if name == "researcher":
            return Reply(text=f"Answer to <{request.last_user_text}>")
        return Reply(text=f"{name} done")


def run_fanout(tmp: Path, provider: str, server: WireServer, questions: list[str]) -> tuple[int, str]:
    agents: dict[str, dict[str, Any]] = {n: {} for n in ("alpha", "beta", "researcher", "merger", "never")}
    write_project(tmp, FANOUT_WORKFLOW, agents, name="fan.yaml")
    args = ["fan.yaml", "--questions", json.dumps(questions), "--run-id", "r"]
    env = {"FLOWRUN_RETRY_BASE_S": "0.01"}
    env |= model_env(server, provider)
    if provider == "openai":
        args += ["--model", "openai:gpt-test"]
    proc = run_cli(args, cwd=tmp, env=env)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.parametrize("provider", WIRES)
def test_parallel_foreach_and_if_over_the_wire(tmp_path: Path, provider: str) -> None:
    questions = [f"question number {k}" for k in range(1, 6)]
    tracker = Tracker()
    with WireServer(tracker) as server:
        code, out = run_fanout(tmp_path, provider, server, questions)
        seen = server.max_in_flight
        requests = server.requests
    assert code == 0, out
    assert "Traceback" not in out
    run_dir = tmp_path / "runs" / "r"

    # concurrency as the server saw it: both parallel branches at once, then 3 foreach items at a
    # time (never more, with 5 items waiting)
    assert tracker.most["alpha"] == 1 and tracker.most["beta"] == 1
    assert seen == 3
    assert tracker.most["researcher"] == 3
    assert sum("researcher" in r.system for r in requests) == 5
    evs = events(run_dir)
    starts = {
        e["agent"]: e["t"] for e in evs if e["type"] == "agent_start" and e["agent"] in ("alpha", "beta")
    }
    ends = {e["agent"]: e["t"] for e in evs if e["type"] == "agent_end" and e["agent"] in ("alpha", "beta")}
    assert max(starts.values()) < min(ends.values()), "the parallel branches did not overlap"

    # each branch wrote its own output file; the beta branch worked in its own folder
    assert (run_dir / "par" / "alpha.md").read_text() == "alpha done"
    assert (run_dir / "par" / "beta.md").read_text() == "beta done"
    assert (run_dir / "beta_work").is_dir()

    # the results, collected in item order whatever order the items finished in
    collected = json.loads((run_dir / "answers.json").read_text())
    assert [c["index"] for c in collected] == [1, 2, 3, 4, 5]
    assert [c["item"] for c in collected] == questions
    for k, entry in enumerate(collected, start=1):
        expected = f"Answer to <Question {k}: question number {k}>"
        assert entry["status"] == "completed" and entry["text"] == expected
        assert entry["output"] == f"answers/{k}.md"
        assert (run_dir / entry["output"]).read_text() == expected
        assert entry["agent_id"] == f"foreach1.{k}/researcher#0"

    # `if:` met for the merger, not met for `never`, which never reached the server
    conditions = {e["step"]: e["met"] for e in evs if e["type"] == "step_condition"}
    assert conditions == {"step2": True, "step3": False}
    assert not any(who(r) == "never" for r in requests)
    assert [e["agent"] for e in evs if e["type"] == "agent_start"].count("merger") == 1
    fanouts = [(e["type"], e["kind"], e.get("branches")) for e in evs if e["type"].startswith("fanout")]
    assert fanouts == [
        ("fanout_start", "parallel", 2),
        ("fanout_end", "parallel", None),
        ("fanout_start", "foreach", 5),
        ("fanout_end", "foreach", None),
    ]

    # `flowrun show` marks the fan-outs and the skipped step
    shown = run_cli(["show", str(run_dir)]).stdout
    assert "foreach foreach1: 5 branch(es), 3 at a time → answers.json" in shown
    assert "skipped step3: if inputs.questions | length > 10 not met" in shown

    # replay offline (the server is gone): the same collected file, every answer from the log
    proc = run_cli(["replay", str(run_dir), "--into", str(tmp_path / "again"), "-q"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "again" / "answers.json").read_text() == (run_dir / "answers.json").read_text()


SCRIPTED_WORKFLOW = """\
version: 1
kind: workflow
name: plan
models:
  s: {provider: scripted, model: s, script: script.yaml}
default_model: s
steps:
  - agent: planner
    task: Write the plan.
  - foreach:
      file: plan.jsonl
      as: topic
      concurrency: 2
      collect: results/all.json
      step:
        agent: worker
        if: "topic.keep"
        task: "Work on {{ topic.name }}"
"""


def plan_project(tmp: Path, plan: str) -> None:
    """The planner writes `plan` (plan.jsonl), the foreach step reads it."""
    write_plan = {"name": "write_file", "arguments": {"path": "plan.jsonl", "content": plan}}
    script = {"planner": [{"tool_calls": [write_plan]}, {"text": "planned"}], "worker": [{"text": "worked"}]}
    agents = {"planner": {"prompt": "Plan.", "tools": ["write_file"]}, "worker": {"prompt": "Work."}}
    write_project(tmp, SCRIPTED_WORKFLOW, agents, {"script.yaml": script_manifest(script)}, name="plan.yaml")


def test_foreach_over_a_jsonl_file_an_earlier_step_wrote(tmp_path: Path) -> None:
    plan = "\n".join(
        json.dumps(t)
        for t in [{"name": "a", "keep": True}, {"name": "b", "keep": False}, {"name": "c", "keep": True}]
    )
    plan_project(tmp_path, plan + "\n")
    proc = run_cli(["plan.yaml", "--run-id", "r"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = tmp_path / "runs" / "r"
    collected = json.loads((run_dir / "results" / "all.json").read_text())
    assert [c["status"] for c in collected] == ["completed", "skipped", "completed"]
    assert collected[1] == {"index": 2, "item": {"name": "b", "keep": False}, "status": "skipped"}
    tasks = [e["task"] for e in events(run_dir) if e["type"] == "agent_start" and e["agent"] == "worker"]
    assert sorted(tasks) == ["Work on a", "Work on c"]


def test_a_foreach_list_over_50_mb_is_a_clear_failure(tmp_path: Path) -> None:
    """The planner's shell makes a sparse 60 MB plan.jsonl: read whole it would take the memory
    of a list of millions; the run fails in one line naming the limit."""
    plan_project(tmp_path, "x")
    shell = {"name": "execute_shell", "arguments": {"command": "truncate -s 60M plan.jsonl"}}
    script = {"planner": [{"tool_calls": [shell]}, {"text": "planned"}], "worker": [{"text": "worked"}]}
    planner = agent("planner", prompt="Plan.", tools=["execute_shell"])
    write_files(tmp_path, {"script.yaml": script_manifest(script), "agents.d/planner.yaml": planner})
    proc = run_cli(["plan.yaml", "--run-id", "r"], cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "foreach: plan.jsonl is over 50 MB, more than a foreach list may be" in out
    assert "Traceback" not in out


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        (None, "foreach: plan.jsonl was not found in the run folder"),
        ('{"name": "a"}\nnot json\n', "foreach: plan.jsonl line 2 is not valid JSON"),
        # (an agent's file: 5,000 levels had broken the stack, an internal error)
        (
            '{"name": "a"}\n' + "[" * 5000 + "]" * 5000 + "\n",
            "plan.jsonl line 2 is not valid JSON (nested more than 64",
        ),
    ],
    ids=["missing", "bad-line", "too-deep"],
)
def test_a_bad_foreach_list_is_a_clear_failure(tmp_path: Path, plan: str | None, message: str) -> None:
    plan_project(tmp_path, plan or "x")
    if plan is None:  # the planner writes another file
        (tmp_path / "plan.yaml").write_text(
            SCRIPTED_WORKFLOW.replace("file: plan.jsonl", "file: other.jsonl")
        )
        message = message.replace("plan.jsonl", "other.jsonl")
    proc = run_cli(["plan.yaml", "--run-id", "r"], cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert message in out and "Traceback" not in out
    assert json.loads((tmp_path / "runs" / "r" / "run.json").read_text())["status"] == "failed"


def test_list_inputs_from_lines_and_from_the_api(tmp_path: Path) -> None:
    plan_project(tmp_path, "[]")
    wf = textwrap.dedent(
        """\
        version: 1
        kind: workflow
        name: lines
        inputs:
          topics: {type: list}
        models:
          s: {provider: scripted, model: s, script: script.yaml}
        default_model: s
        steps:
          - foreach: {input: topics, collect: out.json, step: {agent: worker, task: "{{ item }}"}}
        """
    )
    (tmp_path / "lines.yaml").write_text(wf)
    proc = run_cli(["lines.yaml", "--topics", "first topic\nsecond topic\n", "--run-id", "r"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    items = [c["item"] for c in json.loads((tmp_path / "runs" / "r" / "out.json").read_text())]
    assert items == ["first topic", "second topic"]

    import flowrun

    result = flowrun.load(tmp_path / "lines.yaml").run_sync(
        {"topics": ["x", "y", "z"]}, run_dir=tmp_path / "api"
    )
    assert result.ok
    assert len(json.loads((tmp_path / "api" / "out.json").read_text())) == 3


BAD_STEPS = """\
version: 1
kind: workflow
name: bad
inputs:
  topic: {description: a string input}
  topics: {type: list}
models:
  s: {provider: scripted, model: s, script: script.yaml}
default_model: s
steps:
  - parallel:
      - {agent: worker, workdir: same}
      - {agent: worker, workdir: same}
  - foreach: {input: topic, collect: a.json, step: {agent: worker}}
  - foreach: {collect: b.json, step: {agent: worker}}
  - foreach: {input: topicz, collect: c.json, step: {agent: worker}}
  - foreach: {file: x.json, collect: ../out.json, step: {agent: worker, task: "{{ item }} {{ index }}"}}
  - agent: worker
    task: "{{ item }}"
    if: "workspace.exists("
  - parallel:
      - {agent: workr}
  - foreach: {input: topics, as: index, collect: d.json, step: {agent: worker, task: "{{ index }}"}}
  - foreach: {input: topics, as: inputs, collect: e.json, step: {agent: worker}}
  - foreach:
      input: topics
      as: topic
      collect: f.json
      step: {agent: worker, output: same.md, workdir: "w/{{ topic }}"}
"""


def test_validate_checks_the_new_steps(tmp_path: Path) -> None:
    plan_project(tmp_path, "[]")
    (tmp_path / "plan.yaml").unlink()
    (tmp_path / "bad.yaml").write_text(BAD_STEPS)
    proc = run_cli(["validate", "bad.yaml", "--format", "json"], cwd=tmp_path)
    assert proc.returncode == 1
    found = {(d["code"], d["path"], d["message"]) for d in json.loads(proc.stdout)["diagnostics"]}
    codes = {(code, path) for code, path, _ in found}
    assert ("invalid", "steps[0].parallel[1].workdir") in codes
    assert ("invalid", "steps[1].foreach.input") in codes  # a string input, not a list
    assert ("invalid", "steps[2].foreach") in codes  # neither input nor file
    assert ("unknown-input", "steps[3].foreach.input") in codes
    assert ("bad-path", "steps[4].foreach.collect") in codes
    assert ("undefined-variable", "steps[5].task") in codes  # `item` outside a foreach
    assert ("template-syntax", "steps[5].if") in codes
    assert ("unknown-agent", "steps[6].parallel[0].agent") in codes
    # an item name that hides `index` or an engine name; every item writing the same file
    assert ("invalid", "steps[7].foreach.as") in codes and ("invalid", "steps[8].foreach.as") in codes
    shared = [
        (d["severity"], d["path"])
        for d in json.loads(proc.stdout)["diagnostics"]
        if d["code"] == "shared-path"
    ]
    assert shared == [("warning", "steps[9].foreach.step.output")]
    # inside the foreach body, `item` and `index` are known
    assert not any(path.startswith("steps[4].foreach.step") for _, path in codes)
    lines = {
        d["line"]
        for d in json.loads(proc.stdout)["diagnostics"]
        if d["path"] == "steps[0].parallel[1].workdir"
    }
    assert lines == {13}


def test_a_structured_foreach_body_collects_parsed_answers(tmp_path: Path) -> None:
    """A foreach body whose agent has an output_schema: each collected entry has the parsed
    answer in `data`, and each `output:` file holds its JSON; an answer repaired on the way
    counts once."""
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    scorer = {"prompt": "Score.", "output_schema": schema}
    script = {"scorer": [{"text": 'Score: ```json\n{"n": "seven"}\n```'}, {"text": '{"n": 7}'}]}
    wf = textwrap.dedent(
        """\
        version: 1
        kind: workflow
        name: scores
        inputs:
          things: {type: list}
        models:
          s: {provider: scripted, model: s, script: script.yaml}
        default_model: s
        output: all.json
        steps:
          - foreach:
              input: things
              concurrency: 2
              collect: all.json
              step: {agent: scorer, task: "Score {{ item }}.", output: "scores/{{ index }}.json"}
        """
    )
    write_project(
        tmp_path, wf, {"scorer": scorer}, {"script.yaml": script_manifest(script)}, name="scores.yaml"
    )
    proc = run_cli(["scores.yaml", "--things", '["a", "b", "c"]', "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = tmp_path / "runs" / "r"
    collected = json.loads((run_dir / "all.json").read_text())
    assert [(c["item"], c["data"], c["text"]) for c in collected] == [
        (thing, {"n": 7}, '{"n": 7}') for thing in ("a", "b", "c")
    ]
    for k in (1, 2, 3):
        assert json.loads((run_dir / "scores" / f"{k}.json").read_text()) == {"n": 7}
    invalid = [e for e in events(run_dir) if e["type"] == "output_invalid"]
    assert len(invalid) == 3 and "n: 'seven' is not of type 'integer'" in invalid[0]["problem"]
