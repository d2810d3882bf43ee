"""`flowrun validate` gives every problem in one pass, each once: a file with a schema error is
still checked for what can be read of it, what only follows from an unreadable value is not
reported again, and a mistake shared by several users (a workflow's default model) is one
diagnostic. The problems of agents and tools no workflow of the folder reaches are warnings,
and a run of the folder's workflow does not stop on them (issue 38, parts 3 and 13)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli
from support.project import script_manifest, write_files
from support.runs import no_traceback

Found = set[tuple[str, int, str, str]]  # (file, line, code, severity)

WORKFLOW = """\
version: 1
kind: workflow
name: demo
inputs:
  question: {type: strin}
models:
  main: {provider: anthropic, model: claude-x, api_key_env: ANTHROPIC_API_KEY, temprature: 1}
default_model: test
steps:
  - agnt: boss
    task: "Answer {{ question }} about {{ topic }}"
  - agent: helpr
"""

BOSS = """\
version: 1
kind: agent
name: boss
prompt: "You lead. The question is {{ questoin }}."
max_step: 5
tools: [red_file, helper, {write_file: {approve: sometimes}}]
selectable_models: [nope]
"""

HELPER = """\
version: 1
kind: agent
name: helper
prompt: 123
model: alt
tools:
  - read_file
  - {grep: {}, glob: {}}
  - wrte_file
  - lookup
"""

LOOKUP = """\
version: 1
kind: tool
name: lookup
descripton: Look a word up.
parameters: {type: object, properties: {word: {type: string}}}
implementation:
  command: [echo, "{{ wrd }}"]
"""

MODELS = """\
version: 1
kind: models
models:
  alt: {provider: openai, model: 5}
  fast: {provider: openai, model: gpt-x, api_key_env: OPENAI_API_KEY, fallback: [alt, slow]}
"""


def validate(folder: Path, *args: str) -> tuple[int, list[dict[str, object]]]:
    proc = run_cli(["validate", "--format", "json", *args, "."], cwd=folder)
    no_traceback(proc)
    return proc.returncode, json.loads(proc.stdout)["diagnostics"]


def found(diagnostics: list[dict[str, object]]) -> list[tuple[str, int, str, str]]:
    return [(str(d["file"]), int(str(d["line"])), str(d["code"]), str(d["severity"])) for d in diagnostics]


def at(folder: Path, rel: str, needle: str, code: str, severity: str = "error") -> tuple[str, int, str, str]:
    """The diagnostic expected on the line of `rel` holding `needle`."""
    lines = (folder / rel).read_text(encoding="utf-8").splitlines()
    return rel, next(i for i, line in enumerate(lines, 1) if needle in line), code, severity


@pytest.mark.fresh_too
def test_every_problem_of_every_file_once(tmp_path: Path) -> None:
    """Mistakes of several kinds in five files: each file's schema errors and the problems of
    what can still be read of it (its tools, agents, models, template variables), each once."""
    files = {
        "wf.yaml": WORKFLOW,
        "agents.d/boss.yaml": BOSS,
        "agents.d/helper.yaml": HELPER,
        "tools.d/lookup.yaml": LOOKUP,
        "models.d/shared.yaml": MODELS,
    }
    write_files(tmp_path, files)
    code, diagnostics = validate(tmp_path)
    assert code == 1
    expected = [
        at(tmp_path, "wf.yaml", "strin", "bad-value"),  # the input is still declared: no undefined variable
        at(tmp_path, "wf.yaml", "temprature", "unknown-key"),
        at(tmp_path, "wf.yaml", "default_model", "unknown-model"),  # once, not once per agent
        at(tmp_path, "wf.yaml", "agnt", "unknown-key"),  # its value read as `agent:`: boss is checked
        at(tmp_path, "wf.yaml", "topic", "undefined-variable"),
        at(tmp_path, "wf.yaml", "helpr", "unknown-agent"),
        at(tmp_path, "agents.d/boss.yaml", "questoin", "undefined-variable"),
        at(tmp_path, "agents.d/boss.yaml", "max_step", "unknown-key"),
        at(tmp_path, "agents.d/boss.yaml", "red_file", "unknown-tool"),
        at(tmp_path, "agents.d/boss.yaml", "red_file", "bad-config"),  # approve: sometimes
        at(tmp_path, "agents.d/boss.yaml", "nope", "unknown-model"),
        at(tmp_path, "agents.d/helper.yaml", "prompt", "wrong-type"),  # and not "has no prompt"
        at(tmp_path, "agents.d/helper.yaml", "grep", "bad-entry"),
        at(tmp_path, "agents.d/helper.yaml", "wrte_file", "unknown-tool"),  # at its own line
        at(tmp_path, "tools.d/lookup.yaml", "descripton", "unknown-key"),  # not also "missing description"
        at(tmp_path, "tools.d/lookup.yaml", "wrd", "undefined-variable"),
        at(tmp_path, "models.d/shared.yaml", "model: 5", "wrong-type"),  # `alt` exists: no unknown model
        at(tmp_path, "models.d/shared.yaml", "slow", "unknown-model"),
    ]
    assert sorted(found(diagnostics)) == sorted(expected)
    wrong = next(d for d in diagnostics if d["code"] == "unknown-tool" and "wrte_file" in str(d["message"]))
    assert wrong["path"] == "tools[2]"  # the entry before it was left out, its place was not


def test_a_default_model_nothing_defines_is_one_error(tmp_path: Path) -> None:
    """Two agents use the workflow's `default_model: test`; the project's models.d names a
    default that does not exist either: one error at each place."""
    write_files(
        tmp_path,
        {
            "wf.yaml": WORKFLOW.replace("  - agent: helpr\n", "  - agent: helper\n")
            .replace("agnt:", "agent:")
            .replace("strin", "string")
            .replace(", temprature: 1", "")
            .replace(" about {{ topic }}", ""),
            "agents.d/boss.yaml": "version: 1\nkind: agent\nname: boss\nprompt: Lead.\ntools: [helper]\n",
            "agents.d/helper.yaml": "version: 1\nkind: agent\nname: helper\nprompt: Help.\n",
            "other/wf.yaml": "version: 1\nkind: workflow\nname: other\nentry: boss\ntask: Go.\n",
            "other/agents.d/boss.yaml": "version: 1\nkind: agent\nname: boss\nprompt: Lead.\n"
            "tools: [helper]\n",
            "other/agents.d/helper.yaml": "version: 1\nkind: agent\nname: helper\nprompt: Help.\n",
            "other/models.d/shared.yaml": "version: 1\nkind: models\nmodels: {}\ndefault_model: tset\n",
        },
    )
    code, diagnostics = validate(tmp_path)
    assert code == 1
    assert sorted(found(diagnostics)) == [
        at(tmp_path, "other/models.d/shared.yaml", "tset", "unknown-model"),
        at(tmp_path, "wf.yaml", "default_model", "unknown-model"),
    ]


# one mistake per case, of each kind in each kind of file, next to a problem of what can still be
# read of that file: (file, its text, [(needle on the line, code)])
CASES: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "agent-unknown-key": (
        "agents.d/boss.yaml",
        "version: 1\nkind: agent\nname: boss\nprompt: Lead {{ x }}.\nmax_step: 5\ntools: [red_file]\n",
        [("max_step", "unknown-key"), ("x }}", "undefined-variable"), ("red_file", "unknown-tool")],
    ),
    "agent-misspelt-prompt": (
        "agents.d/boss.yaml",
        "version: 1\nkind: agent\nname: boss\npromt: Lead {{ x }}.\n",
        [("promt", "unknown-key"), ("promt", "undefined-variable")],
    ),
    "agent-wrong-type": (
        "agents.d/boss.yaml",
        "version: 1\nkind: agent\nname: boss\nprompt: Lead.\nmax_steps: many\nmodel: nope\n",
        [("many", "wrong-type"), ("nope", "unknown-model")],
    ),
    "agent-missing-name": (
        "agents.d/boss.yaml",
        "version: 1\nkind: agent\nprompt: Lead.\ntools: [red_file]\n",
        [("version", "missing-key"), ("red_file", "unknown-tool")],
    ),
    "agent-bad-entry": (
        "agents.d/boss.yaml",
        "version: 1\nkind: agent\nname: boss\nprompt: Lead.\ntools:\n  - 7\n  - red_file\n",
        [("- 7", "wrong-type"), ("red_file", "unknown-tool")],
    ),
    "agent-bad-vars": (
        "agents.d/boss.yaml",
        "version: 1\nkind: agent\nname: boss\nprompt: Lead {{ tone }}.\nvars: [tone]\ntools: [red_file]\n",
        [("vars", "wrong-type"), ("red_file", "unknown-tool")],
    ),
    "workflow-unknown-key": (
        "wf.yaml",
        "version: 1\nkind: workflow\nname: wf\nmodels: {m: {provider: openai, model: x}}\n"
        "default_model: m\nentry: boss\ntask: Go {{ y }}.\nouptut: r.md\n",
        [("ouptut", "unknown-key"), ("task", "undefined-variable")],
    ),
    "workflow-bad-inputs": (
        "wf.yaml",
        "version: 1\nkind: workflow\nname: wf\nmodels: {m: {provider: openai, model: x}}\n"
        "default_model: mm\ninputs: [question]\nentry: boss\ntask: Go {{ question }}.\n",
        [("inputs", "wrong-type"), ("mm", "unknown-model")],
    ),
    "workflow-missing-model-id": (
        "wf.yaml",
        "version: 1\nkind: workflow\nname: wf\nmodels: {m: {provider: openai}}\n"
        "default_model: m\nentry: bos\ntask: Go.\n",
        [("models", "missing-key"), ("bos", "unknown-agent")],
    ),
    "workflow-bad-step": (
        "wf.yaml",
        "version: 1\nkind: workflow\nname: wf\nmodels: {m: {provider: openai, model: x}}\n"
        "default_model: m\nsteps:\n  - {agent: boss, bogus: 1}\n  - agent: bos\n",
        [("bogus", "unknown-key"), ("- agent: bos", "unknown-agent")],
    ),
    "tool-misspelt-key": (
        "tools.d/lookup.yaml",
        "version: 1\nkind: tool\nname: lookup\ndescripton: Look.\n"
        "parameters: {type: object, properties: {word: {type: string}}}\n"
        "implementation: {command: [echo, '{{ wrd }}']}\n",
        [("descripton", "unknown-key"), ("wrd", "undefined-variable")],
    ),
    "models-wrong-type": (
        "models.d/shared.yaml",
        "version: 1\nkind: models\nmodels:\n  alt: {provider: openai, model: x, max_tokens: lots}\n"
        "  fast: {provider: openai, model: x, fallback: [alt, slow]}\n",
        [("lots", "wrong-type"), ("slow", "unknown-model")],
    ),
}
# the rest of each case's project, all well written
BASE = {
    "wf.yaml": "version: 1\nkind: workflow\nname: wf\nmodels: {m: {provider: openai, model: x}}\n"
    "default_model: m\nentry: boss\ntask: Go.\n",
    "agents.d/boss.yaml": "version: 1\nkind: agent\nname: boss\nprompt: Lead.\ntools: [lookup]\n",
    "tools.d/lookup.yaml": "version: 1\nkind: tool\nname: lookup\ndescription: Look.\n"
    "parameters: {type: object, properties: {word: {type: string}}}\n"
    "implementation: {command: [echo, '{{ word }}']}\n",
}


def test_unfamiliar_invalid_manifests_give_each_problem_once(tmp_path: Path) -> None:
    """Every case (a project of its own) in one `validate`: exactly its problems, each once, at
    file:line, never a traceback."""
    for case, (rel, text, _) in CASES.items():
        write_files(tmp_path / case, {**BASE, rel: text})
    code, diagnostics = validate(tmp_path)
    assert code == 1
    for case, (rel, _, wanted) in CASES.items():
        # (a case whose entry is misspelt also leaves boss unreached: a warning of its own)
        got = [d for d in found(diagnostics) if d[0].startswith(f"{case}/") and d[2] != "unreachable"]
        expected = [at(tmp_path, f"{case}/{rel}", needle, kind) for needle, kind in wanted]
        assert sorted(got) == sorted(expected), case


def unused_project(root: Path) -> Path:
    """A workflow whose entry agent is fine next to agents nothing uses: one with a schema
    error and a cross-reference error, one that does not load, and a tool no agent lists."""
    write_files(
        root,
        {
            "wf.yaml": "version: 1\nkind: workflow\nname: demo\n"
            "models: {m: {provider: scripted, model: s, script: script.yaml}}\n"
            "default_model: m\nentry: boss\ntask: Go.\n",
            "script.yaml": script_manifest({"boss": [{"text": "done"}]}),
            "agents.d/boss.yaml": "version: 1\nkind: agent\nname: boss\nprompt: You are the boss.\n",
            "agents.d/spare.yaml": "version: 1\nkind: agent\nname: spare\nprompt: Spare.\n"
            "max_step: 3\ntools: [red_file]\n",
            "agents.d/broken.yaml": "version: 1\nkind: agent\nname: broken\nprompt: oops: no\n",
            "tools.d/lookup.yaml": "version: 1\nkind: tool\nname: lookup\ndescription: Look.\n"
            "parameters: {type: object}\nimplementation: {command: [echo, '{{ wrd }}']}\n",
        },
    )
    return root / "wf.yaml"


def test_validate_and_a_run_agree_on_what_nothing_uses(tmp_path: Path) -> None:
    unused_project(tmp_path)
    code, diagnostics = validate(tmp_path)
    assert code == 0
    assert sorted(found(diagnostics)) == sorted(
        [
            at(tmp_path, "agents.d/broken.yaml", "oops", "yaml-syntax", "warning"),
            at(tmp_path, "agents.d/spare.yaml", "name: spare", "unreachable", "warning"),
            at(tmp_path, "agents.d/spare.yaml", "max_step", "unknown-key", "warning"),
            at(tmp_path, "agents.d/spare.yaml", "red_file", "unknown-tool", "warning"),
            at(tmp_path, "tools.d/lookup.yaml", "wrd", "undefined-variable", "warning"),
        ]
    )
    said = {str(d["file"]): str(d["message"]) for d in diagnostics if d["code"] != "unreachable"}
    assert said["agents.d/spare.yaml"].endswith(
        "(agent 'spare' is used by no workflow here: a run does not stop on it)"
    )
    assert "(tool 'lookup' is used by no workflow here" in said["tools.d/lookup.yaml"]
    assert "(agent 'broken' is used by no workflow here" in said["agents.d/broken.yaml"]
    assert validate(tmp_path, "--strict")[0] == 1
    run = run_cli(["run", "wf.yaml"], cwd=tmp_path)
    assert run.returncode == 0, no_traceback(run)
    assert "status: completed" in run.stdout


def test_what_a_workflow_uses_stops_both(tmp_path: Path) -> None:
    """The same broken agent, now the workflow's entry: an error for both."""
    workflow = unused_project(tmp_path)
    workflow.write_text(workflow.read_text(encoding="utf-8").replace("entry: boss", "entry: spare"))
    code, diagnostics = validate(tmp_path)
    assert code == 1
    errors = {(d[0], d[2]) for d in found(diagnostics) if d[3] == "error"}
    assert errors == {("agents.d/spare.yaml", "unknown-key"), ("agents.d/spare.yaml", "unknown-tool")}
    run = run_cli(["run", "wf.yaml"], cwd=tmp_path)
    assert run.returncode == 1
    assert "unknown key 'max_step'" in no_traceback(run) and "red_file" in run.stderr


def test_a_folder_without_a_workflow_keeps_its_errors(tmp_path: Path) -> None:
    """A library of agents linted in CI fails on a broken agent, whether used or not."""
    unused_project(tmp_path)
    (tmp_path / "wf.yaml").unlink()
    code, diagnostics = validate(tmp_path)
    assert code == 1
    errors = {(d[0], d[2]) for d in found(diagnostics) if d[3] == "error"}
    assert errors == {
        ("agents.d/broken.yaml", "yaml-syntax"),
        ("agents.d/spare.yaml", "unknown-key"),
        ("agents.d/spare.yaml", "unknown-tool"),
        ("tools.d/lookup.yaml", "undefined-variable"),
    }
