"""The seeds' environment conventions, through the command line against the wire server (both
wire formats): a `.env` next to the workflow or in the current folder (the environment wins),
`${VAR}` and `${VAR:-default}` in model settings (set, unset, default), OPENAI_MODEL for
`--model openai`, LLM_BASE_URL, and the GLM preset's GLM_API_KEY."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli
from support.env import WIRES
from support.project import write_files
from support.wire_server import Reply, WireRequest, WireServer

DOTENV_KEY = "key-from-dotenv-0123456789"


def answer(request: WireRequest) -> Reply:
    return Reply(text="done")


def project(tmp_path: Path, provider: str, model: str = "${MODEL_ID:-model-default}") -> Path:
    """flow/wf.yaml with one agent whose model's settings name variables."""
    key_var = "ANTHROPIC_API_KEY" if provider == "anthropic" else "OPENAI_API_KEY"
    files = {
        "flow/wf.yaml": f"""\
            version: 1
            kind: workflow
            name: envy
            inputs: {{q: {{default: hi}}}}
            models:
              main:
                provider: {provider}
                model: "{model}"
                base_url: ${{PROXY_URL}}
                api_key_env: ${{KEY_VAR:-{key_var}}}
                stream: false
                max_retries: 0
                headers: {{X-Team: "${{TEAM:-nobody}}"}}
            default_model: main
            entry: solo
            """,
        "flow/agents.d/solo.yaml": "version: 1\nname: solo\nprompt: You are solo.\n",
    }
    return write_files(tmp_path, files) / "flow" / "wf.yaml"


def sent_key(request: WireRequest) -> str:
    if request.api == "anthropic":
        return request.headers.get("x-api-key", "")
    return request.headers.get("authorization", "").removeprefix("Bearer ")


@pytest.mark.parametrize("provider", WIRES)
def test_dotenv_next_to_the_workflow_and_the_environment_wins(tmp_path: Path, provider: str) -> None:
    workflow = project(tmp_path, provider)
    key_var = "ANTHROPIC_API_KEY" if provider == "anthropic" else "OPENAI_API_KEY"
    with WireServer(answer) as server:
        (workflow.parent / ".env").write_text(
            f"# the project's settings\nPROXY_URL={server.base_url(provider)}\n{key_var}={DOTENV_KEY}\n"
            "MODEL_ID=model-from-dotenv\nTEAM=team-from-dotenv\n"
        )
        proc = run_cli(
            ["flow/wf.yaml", "--run-id", "r"], cwd=tmp_path, env={"MODEL_ID": "model-from-environment"}
        )
        requests = server.requests
    assert proc.returncode == 0, proc.stderr
    (request,) = requests
    assert request.api == provider
    assert request.body["model"] == "model-from-environment"  # the environment wins over .env
    assert sent_key(request) == DOTENV_KEY and request.headers["x-team"] == "team-from-dotenv"
    run_files = "".join(p.read_text() for p in (tmp_path / "runs" / "r").glob("*.j*"))
    assert DOTENV_KEY not in run_files + proc.stdout + proc.stderr  # never echoed or recorded
    assert "model-from-environment" in run_files  # the resolved model id is not a secret


@pytest.mark.parametrize("provider", WIRES)
def test_defaults_and_the_current_folders_dotenv(tmp_path: Path, provider: str) -> None:
    """`${VAR:-default}` when unset; the current folder's .env over the workflow's."""
    project(tmp_path, provider)
    key_var = "ANTHROPIC_API_KEY" if provider == "anthropic" else "OPENAI_API_KEY"
    with WireServer(answer) as server:
        (tmp_path / "flow" / ".env").write_text(f"PROXY_URL=http://127.0.0.1:9/unused\n{key_var}=flow-key\n")
        (tmp_path / ".env").write_text(f"PROXY_URL={server.base_url(provider)}\n")
        proc = run_cli(["flow/wf.yaml", "--run-id", "r", "-q"], cwd=tmp_path)
        requests = server.requests
    assert proc.returncode == 0, proc.stderr
    (request,) = requests
    assert request.body["model"] == "model-default" and request.headers["x-team"] == "nobody"
    assert sent_key(request) == "flow-key"  # the workflow's .env still gives what the other lacks


@pytest.mark.parametrize("provider", WIRES)
def test_an_unset_variable_is_an_error_at_its_line(tmp_path: Path, provider: str) -> None:
    project(tmp_path, provider)
    proc = run_cli(["validate", "flow/wf.yaml"], cwd=tmp_path)
    assert proc.returncode == 1
    assert "flow/wf.yaml:9:" in proc.stdout
    assert "error[unset-variable]: model 'main': base_url names ${PROXY_URL}, which is not set" in proc.stdout
    assert "hint: set PROXY_URL (in the environment, or in a .env file" in proc.stdout
    with WireServer(answer) as server:
        proc = run_cli(["flow/wf.yaml"], cwd=tmp_path, env={"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"})
        assert server.requests == []  # never sent as the literal text, never retried
    assert proc.returncode == 1
    assert "nothing was run" in proc.stderr and "flow/wf.yaml:9:" in proc.stderr
    assert "Traceback" not in proc.stderr
    # once set (here by a .env), validate is clean: the check cache does not keep the old answer
    (tmp_path / "flow" / ".env").write_text("PROXY_URL=http://127.0.0.1:9\n")
    proc = run_cli(["validate", "flow/wf.yaml"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout


def test_an_unset_variable_of_a_model_the_run_does_not_use(tmp_path: Path) -> None:
    """A dry run (or `--model` elsewhere) uses none of the workflow's models: it runs."""
    project(tmp_path, "openai")
    proc = run_cli(["flow/wf.yaml", "--dry-run", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_a_key_variable_taken_from_a_variable_must_name_one(tmp_path: Path) -> None:
    project(tmp_path, "openai")
    secret = "sk-this-is-a-key-not-a-name"
    env = {"PROXY_URL": "http://127.0.0.1:9", "KEY_VAR": secret}
    proc = run_cli(["validate", "flow/wf.yaml"], cwd=tmp_path, env=env)
    assert proc.returncode == 1
    assert "api_key_env is ${KEY_VAR:-OPENAI_API_KEY}, whose value is not a variable name" in proc.stdout
    assert secret not in proc.stdout + proc.stderr


def test_openai_model_names_the_model_of_model_openai(tmp_path: Path) -> None:
    project(tmp_path, "openai")
    with WireServer(answer) as server:
        env = {"OPENAI_BASE_URL": server.openai_base_url, "OPENAI_API_KEY": "k", "OPENAI_MODEL": "gpt-seed"}
        proc = run_cli(["flow/wf.yaml", "--model", "openai", "-q"], cwd=tmp_path, env=env)
        requests = server.requests
    assert proc.returncode == 0, proc.stderr
    assert [r.body["model"] for r in requests] == ["gpt-seed"]
    proc = run_cli(["flow/wf.yaml", "--model", "openai", "-q"], cwd=tmp_path, env={"OPENAI_API_KEY": "k"})
    assert proc.returncode == 1
    assert "'openai' names no model and OPENAI_MODEL is not set" in proc.stderr
    assert "hint: set OPENAI_MODEL (e.g. in a .env file), or give the model: openai:MODEL" in proc.stderr


def test_llm_base_url_is_the_base_url_of_openai_models(tmp_path: Path) -> None:
    project(tmp_path, "openai")
    with WireServer(answer) as server:
        (tmp_path / ".env").write_text(f"LLM_BASE_URL={server.openai_base_url}\nOPENAI_API_KEY=k\n")
        proc = run_cli(["flow/wf.yaml", "--model", "openai:gpt-llm", "-q"], cwd=tmp_path)
        requests = server.requests
    assert proc.returncode == 0, proc.stderr
    assert [r.body["model"] for r in requests] == ["gpt-llm"]


def test_the_glm_preset_reads_glm_api_key_too(tmp_path: Path) -> None:
    """Zhipu documents ZHIPUAI_API_KEY; the ReAct design's .env calls it GLM_API_KEY."""
    write_files(tmp_path, {"agents.d/solo.yaml": "version: 1\nname: solo\nprompt: p\n"})
    (tmp_path / "wf.yaml").write_text(
        "version: 1\nkind: workflow\nname: glm\ninputs: {q: {default: hi}}\n"
        "models: {glm: {preset: glm, model: glm-4.7, base_url: '${GLM_URL}', stream: false}}\n"
        "default_model: glm\nentry: solo\n"
    )
    with WireServer(answer) as server:
        env = {"GLM_URL": server.openai_base_url, "GLM_API_KEY": "glm-key-0123456789"}
        proc = run_cli(["wf.yaml", "-q"], cwd=tmp_path, env=env)
        requests = server.requests
    assert proc.returncode == 0, proc.stderr
    assert [sent_key(r) for r in requests] == ["glm-key-0123456789"]
    proc = run_cli(["wf.yaml", "-q"], cwd=tmp_path, env={"GLM_URL": "http://127.0.0.1:9"})
    assert proc.returncode == 1 and "set ZHIPUAI_API_KEY (or GLM_API_KEY) (for solo)" in proc.stderr


def test_a_dotenv_line_that_cannot_be_read_is_named_not_shown(tmp_path: Path) -> None:
    project(tmp_path, "openai")
    (tmp_path / ".env").write_text('PROXY_URL=http://127.0.0.1:9\nbroken "sk-secret-half\n')
    proc = run_cli(["validate", "flow/wf.yaml"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert proc.stderr.splitlines() == ["warning: .env:2: not a NAME=VALUE line, skipped"]
    (tmp_path / ".env").write_bytes(b"PROXY_URL=\xff\n")
    proc = run_cli(["flow/wf.yaml", "--dry-run"], cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.startswith("error: .env is not UTF-8 text")
    report = json.loads(run_cli(["validate", "flow/wf.yaml", "--format", "json"], cwd=tmp_path).stdout)
    assert report["usage_error"]["message"] == ".env is not UTF-8 text"
