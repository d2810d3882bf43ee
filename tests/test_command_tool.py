"""Declarative command tools: argv templates rendered and run without a shell."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from flowrun.tools.base import ToolContext
from flowrun.tools.command import render_argv, run_command
from flowrun.tools.process import group_alive
from flowrun.tools.sandbox import SandboxPolicy
from flowrun.types import ToolResult

# the tools run in the sandbox: the test interpreter (a venv, maybe under $HOME) is bound in
PYTHON_VISIBLE = SandboxPolicy(ro_binds=tuple(dict.fromkeys((sys.prefix, sys.base_prefix))))
PRINT_ARGV = [sys.executable, "-c", "import json, sys; print(json.dumps(sys.argv[1:]))"]


def make_ctx(ws: Path, limits: dict[str, object] | None = None, **config: object) -> ToolContext:
    return ToolContext(
        workspace=ws,
        base_dir=ws,
        cwd=ws,
        run_dir=ws.parent,
        config=dict(config),
        limits=dict(limits or {}),
        sandbox=PYTHON_VISIBLE,
    )


def code(result: ToolResult) -> str | None:
    return result.error.code if result.error else None


async def test_arguments_render_into_argv(tmp_path: Path) -> None:
    argv = [*PRINT_ARGV, "--name={{ name }}", "{{ files }}", "{{ '--verbose' if verbose else '' }}", ""]
    arguments = {"name": "two words", "files": ["a.md", "b c.md"], "verbose": False}
    result = await run_command(make_ctx(tmp_path), argv=argv, arguments=arguments)
    assert result.status == "success"
    assert json.loads(result.data["stdout"]) == ["--name=two words", "a.md", "b c.md", ""]
    assert result.context["params_input"] == arguments
    assert result.data["argv"][-4:] == ["--name=two words", "a.md", "b c.md", ""]


def test_render_argv_rules() -> None:
    assert render_argv(["x", "{{ n }}", "{{ n }}-{{ n }}"], {"n": 3}) == ["x", "3", "3-3"]
    assert render_argv(["{{ items }}"], {"items": [1, True]}) == ["1", "true"]
    assert render_argv(["{{ flag | default('') }}"], {}) == []


async def test_no_shell_is_involved(tmp_path: Path) -> None:
    argv = [*PRINT_ARGV, "{{ query }}"]
    result = await run_command(
        make_ctx(tmp_path), argv=argv, arguments={"query": "x; touch pwned $(touch pwned2)"}
    )
    assert json.loads(result.data["stdout"]) == ["x; touch pwned $(touch pwned2)"]
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()


async def test_template_errors_are_invalid_params(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    missing = await run_command(ctx, argv=["echo", "{{ absent }}"], arguments={})
    assert code(missing) == "INVALID_PARAM" and "absent" in missing.text
    unsafe = await run_command(ctx, argv=["echo", "{{ x.__class__.__mro__ }}"], arguments={"x": "s"})
    assert code(unsafe) == "INVALID_PARAM"
    broken = await run_command(ctx, argv=["echo", "{{ x"], arguments={"x": 1})
    assert code(broken) == "INVALID_PARAM"


async def test_cwd_is_confined_and_env_rendered(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    ctx = make_ctx(ws)
    argv = [sys.executable, "-c", "import os; print(os.getcwd(), os.environ['STAGE'])"]
    result = await run_command(
        ctx, argv=argv, arguments={"stage": "two"}, cwd="sub", env={"STAGE": "{{ stage }}"}
    )
    assert result.data["stdout"].split() == [str(ws / "sub"), "two"]
    assert result.context["path_resolved"] == "sub"
    escaped = await run_command(ctx, argv=["pwd"], arguments={"d": ".."}, cwd="{{ d }}")
    assert code(escaped) == "ACCESS_DENIED"
    assert code(await run_command(ctx, argv=["pwd"], arguments={}, cwd="nope")) == "NOT_FOUND"


async def test_policy_applies_to_the_rendered_argv(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, deny=["rm *"])
    (tmp_path / "victim").write_text("x")
    result = await run_command(
        ctx, argv=["{{ prog }}", "{{ target }}"], arguments={"prog": "rm", "target": "victim"}
    )
    assert code(result) == "PERMISSION_DENIED" and (tmp_path / "victim").exists()
    hidden = await run_command(
        ctx, argv=["bash", "-c", "{{ script }}"], arguments={"script": "ls; rm victim"}
    )
    assert code(hidden) == "PERMISSION_DENIED" and (tmp_path / "victim").exists()
    allowed_only = make_ctx(tmp_path, allow=["echo *"])
    assert (await run_command(allowed_only, argv=["echo", "hi"], arguments={})).status == "success"
    assert code(await run_command(allowed_only, argv=["ls"], arguments={})) == "PERMISSION_DENIED"


async def test_failures_timeouts_and_missing_programs(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, limits={"timeout_s": 1})
    failed = await run_command(ctx, argv=["bash", "-c", "echo out; exit 5"], arguments={})
    assert code(failed) == "COMMAND_FAILED" and failed.data["exit_code"] == 5 and "out" in failed.text
    timed = await run_command(ctx, argv=["bash", "-c", "sleep 60 & sleep 60"], arguments={})
    assert code(timed) == "TIMEOUT"
    assert not group_alive(timed.data["pid"])
    missing = await run_command(ctx, argv=["definitely-not-a-program-xyz"], arguments={})
    assert code(missing) == "NOT_FOUND"
    assert code(await run_command(ctx, argv=["{{ x }}"], arguments={"x": ""})) == "INVALID_PARAM"


@pytest.mark.parametrize("cap", [300, 1000])
async def test_output_is_capped(tmp_path: Path, cap: int) -> None:
    ctx = make_ctx(tmp_path, max_output_bytes=cap)
    result = await run_command(
        ctx, argv=[sys.executable, "-c", "print('A' + 'x' * 50000 + 'Z')"], arguments={}
    )
    assert result.status == "partial" and result.data["truncated"] is True
    assert result.data["stdout"].startswith("A") and result.data["stdout"].rstrip().endswith("Z")
    assert len(result.data["stdout"]) < cap + 200
