"""Messages that point at the right fix, through the command line: the designs' command habits
(a positional task, -d, -r, -i, --api-key), `chat --help` and `chat --agent`, agents offered by
their names (validate and a model's call), a 401 that names the credential sent (both wire
formats), a file that is not UTF-8 (`encoding`), a `base_dir` violation, and a tool manifest's
missing keys reported once each."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from support.cli import run_cli
from support.paths import REPO
from support.project import write_files
from support.runs import events
from support.wire_server import WireServer, always

INSTRUCTOR_WORKER = str(REPO / "examples" / "instructor_worker.yaml")


# ---------------------------------------------------------------- the designs' command lines


@pytest.mark.parametrize(
    ("args", "message", "hint"),
    [
        (
            ["task text", "-d", "./project"],
            "error: unexpected argument 'task text'",
            "  hint: give it as the workflow's input: --task 'task text'; all of them in flowrun's words: "
            "--task 'task text' --workdir ./project",
        ),
        (
            ["--task", "x", "-r", "5"],
            "error: -r is not a flowrun option",
            "  hint: a round limit is a manifest value: --set agents.instructor.tools.worker.max_calls=N; "
            "all of them in flowrun's words: --task x --set agents.instructor.tools.worker.max_calls=5",
        ),
        (
            ["--task", "x", "-i", "claude-opus-4-1"],
            "error: -i is not a flowrun option",
            "  hint: one agent's model: --model instructor=MODEL; all of them in flowrun's words: "
            "--task x --model instructor=claude-opus-4-1",
        ),
        (
            ["--task", "x", "--api-key", "sk-ant-secret-0123456789"],
            "error: --api-key is not a flowrun option",
            "  hint: keys are read from the environment (export ANTHROPIC_API_KEY=..., or a .env file "
            "next to the workflow), never from the command line",
        ),
        (  # seed 001's chat script
            ["--task", "x", "--show-raw"],
            "error: --show-raw is not a flowrun option",
            "  hint: -v prints every model answer and tool call as it happens; `flowrun show RUN --messages` "
            "prints each agent's whole conversation afterwards; all of them in flowrun's words: --task x -v",
        ),
        (
            ["--task", "x", "--provider", "zhipu", "--model", "GLM-4.7"],
            "error: --provider is not a flowrun option",
            "  hint: the provider is part of the model: --model glm:GLM-4.7; all of them in flowrun's words: "
            "--task x --model glm:GLM-4.7",
        ),
    ],
)
def test_the_designs_command_habits(tmp_path: Path, args: list[str], message: str, hint: str) -> None:
    proc = run_cli([INSTRUCTOR_WORKER, *args, "--dry-run"], cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [message, hint]
    assert not (tmp_path / "runs").exists()


def test_the_suggested_command_runs(tmp_path: Path) -> None:
    proc = run_cli([INSTRUCTOR_WORKER, "Write calc.py", "-d", "proj", "-r", "2", "--dry-run"], cwd=tmp_path)
    suggested = proc.stderr.split("all of them in flowrun's words: ", 1)[1].strip()
    proc = run_cli([INSTRUCTOR_WORKER, *shlex.split(suggested), "--dry-run", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # a dry run works in a stand-in for the folder it names (runs/<id>/workdir), never in it
    assert [p.read_text() for p in tmp_path.glob("runs/*/workdir/TASK.md")] == ["Write calc.py\n"]
    assert not (tmp_path / "proj" / "TASK.md").exists()


def test_chat_help_and_agent(tmp_path: Path) -> None:
    proc = run_cli(["chat", "--help"], cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("Usage: flowrun chat [OPTIONS] [WORKFLOW]")
    proc = run_cli(["chat", INSTRUCTOR_WORKER, "--help"], cwd=tmp_path)
    assert proc.returncode == 0 and "--task STRING" in proc.stdout
    proc = run_cli(["chat"], cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout.startswith("Usage: flowrun chat")
    proc = run_cli(["chat", INSTRUCTOR_WORKER, "--agent", "nobody", "--dry-run"], cwd=tmp_path)
    assert proc.returncode == 2
    # checked before the banner, and only the workflow's own agents are listed
    assert proc.stderr.splitlines() == [
        "error: no agent 'nobody' to chat with",
        "  hint: the workflow's agents: instructor, worker",
    ]
    proc = run_cli(["chat", INSTRUCTOR_WORKER, "--agent", "workr", "--dry-run"], cwd=tmp_path)
    assert proc.stderr.splitlines()[1] == "  hint: did you mean 'worker'?"


# ---------------------------------------------------------------- agents are offered by their names

LEAD = {
    "wf.yaml": """\
        version: 1
        kind: workflow
        name: w
        inputs: {q: {default: hi}}
        models: {s: {provider: scripted, model: script, script: w.script.yaml}}
        default_model: s
        entry: lead
        workspace:
          files: {notes/a.md: "a\\n", secret.md: "s\\n"}
        """,
    "agents.d/lead.yaml": """\
        version: 1
        name: lead
        prompt: You lead.
        tools: [helper, read_file, {list_directory: {base_dir: notes}}]
        """,
    "agents.d/helper.yaml": "version: 1\nname: helper\ndescription: Helps.\nprompt: You help.\n",
    "w.script.yaml": """\
        version: 1
        kind: script
        agents:
          lead:
            - tool_calls:
                - {name: call_agent, arguments: {agent_type: helper, task_description: sum up}}
                - {name: writer, arguments: {task: write}}
                - {name: read_file, arguments: {path: latin1.txt}}
                - {name: read_file, arguments: {path: latin1.txt, encoding: latin-1}}
                - {name: list_directory, arguments: {path: ..}}
            - text: done
        """,
    "latin1.txt": "café\n".encode("latin-1"),
}


def test_agents_are_offered_by_their_names_and_file_errors_point_at_the_fix(tmp_path: Path) -> None:
    write_files(tmp_path, LEAD)
    proc = run_cli(["wf.yaml", "--run-id", "r", "-q", "--workdir", "."], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    found = {e["call_id"]: e["result"] for e in events(tmp_path / "runs" / "r") if e["type"] == "tool_result"}
    results = [found[key] for key in sorted(found)]
    assert results[0]["error"]["code"] == "UNKNOWN_TOOL"
    assert results[0]["text"] == (
        "there is no tool named 'call_agent'. Agents are offered as tools by their own names (yours: "
        "helper): call `helper` with {task: ...} instead. Available tools: helper, read_file, list_directory."
    )
    assert "'writer'. Agents are offered as tools by their own names (yours: helper)." in results[1]["text"]
    assert results[2]["error"]["code"] == "BINARY_FILE"
    assert results[2]["text"].endswith(
        "if it is text in another encoding, give `encoding` (e.g. gbk, latin-1, utf-16)"
    )
    assert results[3]["status"] == "success" and "café" in results[3]["text"]
    assert results[4]["error"]["code"] == "ACCESS_DENIED"
    assert results[4]["text"].startswith("'..' points outside notes/, the base_dir this tool is confined to")


def test_validate_says_agents_are_offered_by_their_names(tmp_path: Path) -> None:
    write_files(
        tmp_path, {**LEAD, "agents.d/lead.yaml": "version: 1\nname: lead\nprompt: p\ntools: [call_agent]\n"}
    )
    proc = run_cli(["validate", "wf.yaml"], cwd=tmp_path)
    assert proc.returncode == 1
    assert "error[unknown-tool]: unknown tool or agent 'call_agent'" in proc.stdout
    assert (
        "hint: agents are offered as tools by their own names: list the agent itself (agents: " in proc.stdout
    )


def test_a_tool_manifests_missing_keys_are_reported_once(tmp_path: Path) -> None:
    write_files(
        tmp_path, {"tools.d/t.yaml": "version: 1\nkind: tool\nname: t\nimplementation: {command: [x]}\n"}
    )
    proc = run_cli(["validate", "."], cwd=tmp_path)
    lines = [line for line in proc.stdout.splitlines() if "error[" in line]
    assert lines == [
        "tools.d/t.yaml:1:1: error[missing-key]: missing required key 'description'",
        "tools.d/t.yaml:1:1: error[missing-key]: missing required key 'parameters'",
    ]


# ---------------------------------------------------------------- a refused credential

SOLO = {
    "wf.yaml": """\
        version: 1
        kind: workflow
        name: w
        inputs: {q: {default: hi}}
        models:
          m: {provider: PROVIDER, model: m-1, base_url: "${URL}", stream: false, max_retries: 0}
        default_model: m
        entry: solo
        """,
    "agents.d/solo.yaml": "version: 1\nname: solo\nprompt: p\n",
}


@pytest.mark.parametrize(
    ("provider", "env", "sent"),
    [
        ("anthropic", {"ANTHROPIC_API_KEY": "sk-ant-key-0123456789"}, "$ANTHROPIC_API_KEY (as x-api-key)"),
        (
            "anthropic",
            {"ANTHROPIC_AUTH_TOKEN": "sk-ant-token-0123456789"},
            "$ANTHROPIC_AUTH_TOKEN (as Authorization: Bearer), since $ANTHROPIC_API_KEY is unset",
        ),
        (
            "openai",
            {"OPENAI_API_KEY": "sk-openai-key-0123456789"},
            "$OPENAI_API_KEY (as Authorization: Bearer)",
        ),
    ],
)
def test_a_401_names_the_credential_sent(
    tmp_path: Path, provider: str, env: dict[str, str], sent: str
) -> None:
    write_files(tmp_path, {**SOLO, "wf.yaml": SOLO["wf.yaml"].replace("PROVIDER", provider)})
    with WireServer(always(401)) as server:
        url = server.base_url(provider)
        proc = run_cli(["wf.yaml", "--run-id", "r"], cwd=tmp_path, env={**env, "URL": url})
        assert len(server.requests) == 1  # a 401 is not retried
    assert proc.returncode == 1
    assert f"hint: the server refused the credential sent: {sent}; check it" in proc.stderr
    log = (tmp_path / "runs" / "r" / "flowrun.log").read_text()
    secret = next(iter(env.values()))
    assert secret not in proc.stdout + proc.stderr + log
    # the failure is logged once (where the model call failed) and shown once
    assert sum("HTTP 401" in line for line in log.splitlines()) == 1
    assert sum(line.startswith("! error") for line in proc.stderr.splitlines()) == 1


# ---------------------------------------------------------------- where a call was sent


def dead_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again: nothing listens there


@pytest.mark.parametrize(
    ("provider", "variable", "path"),
    [
        ("openai", "OPENAI_BASE_URL", "/v1"),
        ("anthropic", "ANTHROPIC_BASE_URL", ""),
        ("openai", "LLM_BASE_URL", "/v1"),
    ],
)
def test_a_dead_address_is_named_with_where_it_came_from(
    tmp_path: Path, provider: str, variable: str, path: str
) -> None:
    """A connection refused at the address an SDK read from its own variable (or LLM_BASE_URL):
    the hint names the address and the variable, not "the provider default"."""
    write_files(
        tmp_path,
        {
            "agents.d/a.yaml": "version: 1\nkind: agent\nname: a\nprompt: Say hi.\ntools: []\n",
            "wf.yaml": f"""\
                version: 1
                kind: workflow
                name: w
                models: {{m: {{provider: {provider}, model: x, max_retries: 0}}}}
                default_model: m
                entry: a
                task: Hi.
                """,
        },
    )
    url = f"http://127.0.0.1:{dead_port()}{path}"
    keys = {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-ant-test"}
    proc = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=tmp_path, env={**keys, variable: url})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"hint: check the network and the address {url} (from ${variable})" in proc.stderr, proc.stderr


def test_init_takes_one_folder_argument_and_new_a_snake_case_skill(tmp_path: Path) -> None:
    """`flowrun init my-project` is the folder, with the default template (said); a near miss of
    a template's name is still a did-you-mean; `flowrun new skill report_style` (the seeds'
    skills.json names) is written with a warning, as validate gives it."""
    proc = run_cli(["init", "my-project"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "from the 'research' example (the default; `flowrun init --list` shows the others)" in proc.stdout
    assert (tmp_path / "my-project" / "research.yaml").is_file()
    proc = run_cli(["init", "reserch"], cwd=tmp_path)
    assert proc.returncode == 2 and "did you mean 'research'?" in proc.stderr
    assert not (tmp_path / "reserch").exists()
    proc = run_cli(["new", "skill", "report_style", "--dir", "my-project"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "warning: 'report_style' is not a portable skill name" in proc.stderr
    assert (tmp_path / "my-project" / "skills" / "report_style" / "SKILL.md").is_file()
    checked = run_cli(["validate", "."], cwd=tmp_path / "my-project")
    assert checked.returncode == 0 and "0 error(s), 1 warning(s)" in checked.stdout, checked.stdout
    proc = run_cli(["new", "skill", "Report Style", "--dir", "my-project"], cwd=tmp_path)
    assert proc.returncode == 2 and "cannot name a skill" in proc.stderr
