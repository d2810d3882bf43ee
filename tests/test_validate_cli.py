"""`flowrun validate` through the CLI: one test per diagnostic, each checking the exit code, the
file, the line, and that no traceback is printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli
from support.paths import REPO
from support.project import write_files

from flowrun.manifest.schema.export import KIND_NAMES

WORKFLOW = """\
version: 1
kind: workflow
name: demo
inputs:
  question: {description: the question}
models:
  main: {provider: anthropic, model: claude-x, api_key_env: ANTHROPIC_API_KEY}
default_model: main
entry: boss
task: "Answer {{ question }}"
"""

BOSS = """\
version: 1
kind: agent
name: boss
description: the boss
prompt: You lead. The question is {{ question }}.
max_steps: 5
tools: [read_file, helper]
"""

HELPER = """\
version: 1
kind: agent
name: helper
description: helps
prompt: You help.
tools: [read_file]
"""


def make_project(tmp: Path, files: dict[str, str]) -> Path:
    return write_files(
        tmp, {"wf.yaml": WORKFLOW, "agents.d/boss.yaml": BOSS, "agents.d/helper.yaml": HELPER, **files}
    )


def validate(tmp: Path, *extra: str) -> tuple[int, str]:
    proc = run_cli(["validate", *extra, "."], cwd=tmp)
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out
    return proc.returncode, out


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_clean_project_passes(tmp_path: Path) -> None:
    code, out = validate(make_project(tmp_path, {}))
    assert code == 0, out
    assert "0 error(s)" in out


def test_yaml_syntax_error(tmp_path: Path) -> None:
    broken = BOSS.replace("max_steps: 5", "max_steps: [5")
    make_project(tmp_path, {"agents.d/boss.yaml": broken})
    code, out = validate(tmp_path)
    assert code == 1
    assert "agents.d/boss.yaml:" in out and "yaml-syntax" in out
    # the parser reports the line where the flow sequence fails to close
    reported = int(out.split("agents.d/boss.yaml:")[1].split(":")[0])
    assert reported in (line_of(broken, "max_steps"), line_of(broken, "max_steps") + 1)


def test_unknown_key_with_did_you_mean(tmp_path: Path) -> None:
    text = HELPER.replace("prompt: You help.", "prompt: You help.\nmodle: main")
    make_project(tmp_path, {"agents.d/helper.yaml": text})
    code, out = validate(tmp_path)
    assert code == 1
    assert f"agents.d/helper.yaml:{line_of(text, 'modle')}:" in out
    assert "unknown key 'modle'" in out and "did you mean 'model'" in out


def test_wrong_type(tmp_path: Path) -> None:
    text = BOSS.replace("max_steps: 5", "max_steps: many")
    make_project(tmp_path, {"agents.d/boss.yaml": text})
    code, out = validate(tmp_path)
    assert code == 1
    assert f"agents.d/boss.yaml:{line_of(text, 'max_steps')}:" in out
    assert "expected integer" in out and "max_steps" in out


def test_unknown_tool(tmp_path: Path) -> None:
    text = HELPER.replace("tools: [read_file]", "tools:\n  - list_directory\n  - read_fil")
    make_project(tmp_path, {"agents.d/helper.yaml": text})
    code, out = validate(tmp_path)
    assert code == 1
    assert f"agents.d/helper.yaml:{line_of(text, 'read_fil')}:" in out
    assert "unknown tool or agent 'read_fil'" in out and "did you mean 'read_file'" in out


def test_missing_prompt_file(tmp_path: Path) -> None:
    text = HELPER.replace("prompt: You help.", "prompt_file: nowhere.md.j2")
    make_project(tmp_path, {"agents.d/helper.yaml": text})
    code, out = validate(tmp_path)
    assert code == 1
    assert f"agents.d/helper.yaml:{line_of(text, 'prompt_file')}:" in out
    assert "prompt file 'nowhere.md.j2' not found" in out


def test_undefined_jinja_variable_in_prompt_file(tmp_path: Path) -> None:
    prompt = "You help.\nThe topic:\n{{ topik }}\n"
    text = HELPER.replace("prompt: You help.", "prompt_file: helper.md.j2")
    make_project(tmp_path, {"agents.d/helper.yaml": text, "prompts/helper.md.j2": prompt})
    code, out = validate(tmp_path)
    assert code == 1
    assert "prompts/helper.md.j2:3:" in out
    assert "topik" in out


def test_jinja_syntax_error(tmp_path: Path) -> None:
    text = HELPER.replace("prompt: You help.", "prompt: |\n  You help.\n  {% if x %}never closed\n")
    make_project(tmp_path, {"agents.d/helper.yaml": text})
    code, out = validate(tmp_path)
    assert code == 1
    assert "template-syntax" in out and "agents.d/helper.yaml:" in out


def test_agent_cycle(tmp_path: Path) -> None:
    text = HELPER.replace("tools: [read_file]", "tools: [read_file, boss]")
    make_project(tmp_path, {"agents.d/helper.yaml": text})
    code, out = validate(tmp_path)
    assert code == 1
    assert "agent-as-tool cycle" in out
    assert "boss -> helper -> boss" in out or "helper -> boss -> helper" in out
    assert f"agents.d/helper.yaml:{line_of(text, 'tools')}:" in out or "agents.d/boss.yaml:7:" in out


def test_unknown_model(tmp_path: Path) -> None:
    text = HELPER.replace("prompt: You help.", "prompt: You help.\nmodel: mian")
    make_project(tmp_path, {"agents.d/helper.yaml": text})
    code, out = validate(tmp_path)
    assert code == 1
    assert f"agents.d/helper.yaml:{line_of(text, 'model: mian')}:" in out
    assert "unknown model 'mian'" in out and "did you mean 'main'" in out


def test_missing_entry_agent(tmp_path: Path) -> None:
    text = WORKFLOW.replace("entry: boss", "entry: bos")
    make_project(tmp_path, {"wf.yaml": text})
    code, out = validate(tmp_path)
    assert code == 1
    assert f"wf.yaml:{line_of(text, 'entry')}:" in out and "unknown agent 'bos'" in out


def test_inline_secret_refused(tmp_path: Path) -> None:
    text = WORKFLOW.replace("api_key_env: ANTHROPIC_API_KEY", "api_key: sk-live-123")
    make_project(tmp_path, {"wf.yaml": text})
    code, out = validate(tmp_path)
    assert code == 1
    assert "unknown key 'api_key'" in out and "secrets never go in manifests" in out


def test_duplicate_names(tmp_path: Path) -> None:
    make_project(tmp_path, {"agents.d/helper2.yaml": HELPER})
    code, out = validate(tmp_path)
    assert code == 1
    assert "duplicate agent name 'helper'" in out


@pytest.mark.fresh_too
def test_all_problems_in_one_pass(tmp_path: Path) -> None:
    boss = BOSS.replace("max_steps: 5", "max_steps: many")
    helper = HELPER.replace("tools: [read_file]", "tools: [reed_file]")
    make_project(tmp_path, {"agents.d/boss.yaml": boss, "agents.d/helper.yaml": helper})
    code, out = validate(tmp_path)
    assert code == 1
    assert "max_steps" in out and "reed_file" in out


def test_warning_fails_only_with_strict(tmp_path: Path) -> None:
    orphan = HELPER.replace("name: helper", "name: orphan").replace("helps", "nobody calls me")
    make_project(tmp_path, {"agents.d/orphan.yaml": orphan})
    code, out = validate(tmp_path)
    assert code == 0 and "not reachable" in out
    code, out = validate(tmp_path, "--strict")
    assert code == 1


def test_json_format(tmp_path: Path) -> None:
    make_project(tmp_path, {"agents.d/boss.yaml": BOSS.replace("max_steps: 5", "max_steps: many")})
    code, out = validate(tmp_path, "--format", "json")
    assert code == 1
    report = json.loads(out)
    assert report["ok"] is False and report["errors"] >= 1
    diag = report["diagnostics"][0]
    assert set(diag) >= {"file", "line", "column", "path", "message", "hint", "code", "severity"}
    assert diag["file"] == "agents.d/boss.yaml" and diag["path"] == "max_steps" and diag["line"] == 6


def test_github_format(tmp_path: Path) -> None:
    make_project(tmp_path, {"agents.d/boss.yaml": BOSS.replace("max_steps: 5", "max_steps: many")})
    code, out = validate(tmp_path, "--format", "github")
    assert code == 1
    first = out.strip().splitlines()[0]
    assert first.startswith("::error file=agents.d/boss.yaml,line=6,col=")
    assert "::" in first[2:]


def test_usage_error_exit_2(tmp_path: Path) -> None:
    proc = run_cli(["validate", str(tmp_path / "missing")])
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


@pytest.mark.fresh_too
def test_examples_and_builtins_validate() -> None:
    proc = run_cli(["validate", "--strict", str(REPO / "examples")])  # not even a warning
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 error(s), 0 warning(s)" in proc.stdout
    from flowrun.paths import builtin_root

    root = builtin_root()
    proc = run_cli(["validate", "--strict", str(root / "agents.d"), str(root / "tools.d")])
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("kind", KIND_NAMES)
def test_committed_schema_matches_specs(kind: str) -> None:
    from flowrun.manifest.schema.export import schema_text
    from flowrun.paths import builtin_root

    committed = (builtin_root() / "schema" / f"{kind}.schema.json").read_text(encoding="utf-8")
    assert committed == schema_text(kind), (
        f"schema/{kind}.schema.json drifted: run `flowrun schema --write schema`"
    )


@pytest.mark.fresh_too
def test_schema_command_prints_json() -> None:
    proc = run_cli(["schema", "agent"])
    assert proc.returncode == 0
    schema = json.loads(proc.stdout)
    assert schema["$schema"].endswith("2020-12/schema")
    assert schema["additionalProperties"] is False
    # every kind registered (a fresh process registers them at first use) gives the committed one
    assert proc.stdout == (REPO / "schema" / "agent.schema.json").read_text(encoding="utf-8")


def test_shipped_manifests_have_schema_line() -> None:
    from flowrun.paths import builtin_root

    root = builtin_root()
    examples = REPO / "examples"
    files = [*root.glob("agents.d/*.yaml"), *root.glob("tools.d/*.yaml")]
    files += [*examples.glob("*.yaml"), *examples.glob("agents.d/*.yaml")]
    assert files
    for path in files:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# yaml-language-server: $schema="), path


ADVERSARIAL = {
    "list-at-top": ("agents.d/helper.yaml", "- just\n- a list\n", "not-a-mapping"),
    "empty-file": ("agents.d/helper.yaml", "", "empty"),
    "binary-file": ("agents.d/helper.yaml", "\udcff\udcfe garbage", "io"),
    "name-not-string": ("agents.d/helper.yaml", HELPER.replace("name: helper", "name: 123"), "wrong-type"),
    "tools-not-list": (
        "agents.d/helper.yaml",
        HELPER.replace("tools: [read_file]", "tools: read_file"),
        "wrong-type",
    ),
    "two-key-entry": (
        "agents.d/helper.yaml",
        HELPER.replace("tools: [read_file]", "tools:\n  - {read_file: {}, glob: {}}"),
        "bad-entry",
    ),
    "prompt-traversal": (
        "agents.d/helper.yaml",
        HELPER.replace("prompt: You help.", "prompt_file: ../../../etc/passwd"),
        "bad-path",
    ),
    "extends-itself": ("agents.d/helper.yaml", HELPER + "extends: helper\n", "unknown-agent"),
    "compatible-without-url": (
        "wf.yaml",
        WORKFLOW.replace(
            "provider: anthropic, model: claude-x, api_key_env: ANTHROPIC_API_KEY",
            "provider: openai-compatible, model: m",
        ),
        "invalid",
    ),
    "key-in-env-name": ("wf.yaml", WORKFLOW.replace("ANTHROPIC_API_KEY", "sk-live-abc123"), "bad-env-name"),
    "bad-version": ("agents.d/helper.yaml", HELPER.replace("version: 1", "version: 2"), "bad-value"),
    "self-call": (
        "agents.d/helper.yaml",
        HELPER.replace("tools: [read_file]", "tools: [helper]"),
        "agent-cycle",
    ),
}


@pytest.mark.parametrize("case", sorted(ADVERSARIAL))
def test_unfamiliar_manifests_get_one_clear_diagnostic(tmp_path: Path, case: str) -> None:
    rel, text, code = ADVERSARIAL[case]
    make_project(tmp_path, {})
    target = tmp_path / rel
    target.write_bytes(text.encode("utf-8", "surrogateescape"))
    exit_code, out = validate(tmp_path, "--format", "json")
    assert exit_code == 1, out
    report = json.loads(out)
    codes = [d["code"] for d in report["diagnostics"] if d["severity"] == "error"]
    assert code in codes, codes
    # a broken agent file is reported once, not again as "unknown agent" wherever it is used
    assert "unknown-tool" not in codes
    assert "unknown-agent" not in codes or code == "unknown-agent"
    assert all(d["file"] and d["line"] >= 1 for d in report["diagnostics"])


def test_anchors_and_merge_keys_override_without_a_duplicate_error(tmp_path: Path) -> None:
    """`<<: *anchor` then a key of the mapping's own (YAML's merge): the own key wins, as YAML
    says; it had been reported as a duplicate key of the merged one."""
    models = (
        "models:\n"
        "  main: &base {provider: anthropic, model: claude-x, api_key_env: ANTHROPIC_API_KEY}\n"
        "  big:\n    <<: *base\n    model: claude-big\n"
        "  both: {<<: [*base, {max_tokens: 99}], max_tokens: 7}\n"
    )
    wf = WORKFLOW.replace(
        "models:\n  main: {provider: anthropic, model: claude-x, api_key_env: ANTHROPIC_API_KEY}\n", models
    )
    assert wf != WORKFLOW
    make_project(tmp_path, {"wf.yaml": wf + "limits: {max_total_steps: 9}\n"})
    code, out = validate(tmp_path)
    assert code == 0, out
    shown = run_cli(["validate", "--format", "json", "."], cwd=tmp_path)
    assert json.loads(shown.stdout)["diagnostics"] == [], shown.stdout
    make_project(tmp_path, {"wf.yaml": wf.replace("<<: *base", "<<: 5")})
    code, out = validate(tmp_path)
    assert code == 1 and "wf.yaml:9:9: error[yaml-value]: `<<` merges a mapping" in out, out


@pytest.mark.parametrize(
    ("text", "where", "said"),
    [
        (HELPER + "---\nversion: 1\n", "helper.yaml:7:1: error[yaml-syntax]", "holds one YAML document"),
        (HELPER.replace("prompt:", "\tprompt:"), "helper.yaml:5:1: error[yaml-syntax]", "never tabs"),
    ],
    ids=["two-documents", "tab"],
)
def test_yaml_syntax_errors_say_what_to_change(tmp_path: Path, text: str, where: str, said: str) -> None:
    make_project(tmp_path, {"agents.d/helper.yaml": text})
    code, out = validate(tmp_path)
    assert code == 1 and where in out and said in out, out


@pytest.mark.parametrize(
    ("rel", "text", "path"),
    [
        ("wf.yaml", WORKFLOW.replace("provider: anthropic", "provider: 0"), "models.main.provider"),
        ("agents.d/helper.yaml", HELPER.replace("version: 1", "version: [1]"), "version"),
        ("agents.d/helper.yaml", HELPER + "context: {strategy: 7}\n", "context.strategy"),
    ],
)
def test_a_value_outside_the_allowed_ones_is_one_error(
    tmp_path: Path, rel: str, text: str, path: str
) -> None:
    """Of the wrong type and not among the allowed values: one error, naming what is allowed
    (not a second one about its type with a hint to quote it)."""
    make_project(tmp_path, {rel: text})
    exit_code, out = validate(tmp_path, "--format", "json")
    assert exit_code == 1, out
    errors = [d for d in json.loads(out)["diagnostics"] if d["severity"] == "error"]
    assert [(d["code"], d["path"]) for d in errors] == [("bad-value", path)], errors
    assert errors[0]["hint"].startswith("use one of") or "did you mean" in errors[0]["hint"], errors


@pytest.mark.parametrize(
    ("agent_context", "expected"),
    [
        (
            "{strategy: dashbord}",
            ["boss.yaml:7:21: error[bad-value]: 'dashbord' is not allowed here", "'dashboard'?"],
        ),
        ("{strategy: dashboard}", ["error[missing-key]: missing required key 'dashboards'", "overall"]),
        ("{strategy: compact, keep_recnt: 2}", ["unknown key 'keep_recnt'", "did you mean 'keep_recent'?"]),
        ("{strategy: full, compact_at: 0.5}", ["unknown key 'compact_at'", "allowed keys: strategy"]),
    ],
)
def test_context_strategy_is_a_tagged_union(tmp_path: Path, agent_context: str, expected: list[str]) -> None:
    """The problem is explained against the strategy the `strategy:` key names."""
    boss = BOSS + f"context: {agent_context}\n"
    code, out = validate(make_project(tmp_path, {"agents.d/boss.yaml": boss.replace("max_steps: 5\n", "")}))
    assert code == 1
    for text in expected:
        assert text in out


def test_steps_are_told_apart_by_their_key(tmp_path: Path) -> None:
    workflow = WORKFLOW.replace(
        "entry: boss\n",
        "steps:\n  - loop: {steps: [{agent: boss}], max_iterations: 2, untill: x}\n  - agnt: boss\n",
    )
    code, out = validate(make_project(tmp_path, {"wf.yaml": workflow}))
    assert code == 1
    assert "wf.yaml:10:55: error[unknown-key]: unknown key 'untill' (at steps[0].loop.untill)" in out
    assert "did you mean 'until'?" in out
    assert "unknown key 'agnt' (at steps[1].agnt)" in out and "did you mean 'agent'?" in out


def test_empty_folder_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "notes.yaml").write_text("just: data\n")  # YAML without `kind:` is not a manifest
    proc = run_cli(["validate", str(tmp_path)])
    assert proc.returncode == 2
    assert "no manifests found" in proc.stderr and "hint:" in proc.stderr
    assert "0 file(s) checked" not in proc.stdout
    proc = run_cli(["validate", "--format", "json", str(tmp_path)])
    assert proc.returncode == 2
    report = json.loads(proc.stdout)
    assert report["ok"] is False and report["files_checked"] == 0
    assert "no manifests found" in report["usage_error"]["message"]
    proc = run_cli(["validate", "--format", "github", str(tmp_path)])
    assert proc.returncode == 2 and "no manifests found" in proc.stderr
    assert proc.stdout.startswith("::error title=flowrun validate::no manifests found in ")


@pytest.mark.parametrize(
    "args, expected",
    [
        (["missing-folder", "--format", "json"], "does not exist"),
        (["--format=json", "--bogus", "."], "No such option"),
        (["--format", "json", "--explain", "."], "--explain goes with --format text"),
    ],
)
def test_usage_errors_are_json_with_format_json(tmp_path: Path, args: list[str], expected: str) -> None:
    make_project(tmp_path, {})
    proc = run_cli(["validate", *args], cwd=tmp_path)
    assert proc.returncode == 2
    report = json.loads(proc.stdout)  # stdout is JSON and nothing else
    assert report["ok"] is False and expected in report["usage_error"]["message"]
    assert "Traceback" not in proc.stderr
