"""finish, all_finished, update_dashboard and ask_user: control actions, atomic dashboard
writes in a real workspace, and the interactive / non-interactive paths of ask_user."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from flowrun.atomic_files import replace_beneath
from flowrun.tools.agent_protocol import all_finished, ask_user, finish, update_dashboard
from flowrun.tools.base import ToolContext, ToolServices
from flowrun.types import Finish, ResetContext

DASHBOARDS = {"overall": "dashboards/overall.md", "current": "current_dashboard.md"}


def make_ctx(tmp_path: Path, *, interactive: bool = False, **config: Any) -> ToolContext:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    return ToolContext(
        workspace=workspace,
        base_dir=workspace,
        cwd=workspace,
        run_dir=tmp_path,
        config=config,
        interactive=interactive,
    )


@pytest.mark.parametrize("tool", [finish, all_finished])
async def test_finish_tools_return_the_finish_control(tmp_path: Path, tool: Any) -> None:
    result = await tool(make_ctx(tmp_path), result="Report written to report.md")
    assert result.status == "success"
    assert result.control == Finish("Report written to report.md")
    assert result.context["params_input"] == {"result": "Report written to report.md"}
    assert result.stats["time_ms"] >= 0


async def test_update_dashboard_writes_the_file_and_resets_context(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, dashboards=DASHBOARDS)
    content = "# Overall\n\n- [x] plan\n- [ ] chapter 2\n"
    result = await update_dashboard(ctx, name="overall", content=content)
    assert result.status == "success", result.text
    target = ctx.workspace / "dashboards" / "overall.md"
    assert target.read_text(encoding="utf-8") == content
    assert result.control == ResetContext()
    assert result.data["path"] == "dashboards/overall.md"
    assert result.context["path_resolved"] == "dashboards/overall.md"
    assert "restarts" in result.text

    again = await update_dashboard(ctx, name="overall", content="replaced")
    assert again.status == "success"
    assert target.read_text(encoding="utf-8") == "replaced"
    assert sorted(p.name for p in target.parent.iterdir()) == ["overall.md"]  # no temp files left


async def test_unknown_dashboard_lists_the_names(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, dashboards=DASHBOARDS)
    result = await update_dashboard(ctx, name="weekly", content="x")
    assert result.status == "error"
    assert result.error is not None and result.error.code == "INVALID_PARAM"
    assert "current, overall" in result.text
    assert result.control is None
    assert not any(ctx.workspace.iterdir())

    none = await update_dashboard(make_ctx(tmp_path), name="overall", content="x")
    assert none.error is not None and none.error.code == "INVALID_PARAM"
    assert "none configured" in none.text


async def test_dashboard_outside_the_workspace_is_refused(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, dashboards={"evil": "../escaped.md", "abs": str(tmp_path / "abs.md")})
    for name in ("evil", "abs"):
        result = await update_dashboard(ctx, name=name, content="x")
        assert result.error is not None and result.error.code == "ACCESS_DENIED"
    assert not (tmp_path / "escaped.md").exists()
    assert not (tmp_path / "abs.md").exists()


async def test_concurrent_updates_leave_one_whole_version(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, dashboards=DASHBOARDS)
    versions = [f"version {i}\n" * 2000 for i in range(8)]
    results = await asyncio.gather(*(update_dashboard(ctx, name="current", content=v) for v in versions))
    assert all(r.status == "success" for r in results)
    assert (ctx.workspace / "current_dashboard.md").read_text(encoding="utf-8") in versions


def test_a_dashboards_write_keeps_the_old_file_when_writing_fails(tmp_path: Path) -> None:
    target = tmp_path / "d.md"
    target.write_text("old")
    with pytest.raises(UnicodeEncodeError):
        replace_beneath(tmp_path, target, "bad \udcff surrogate")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["d.md"]


async def test_ask_user_not_interactive(tmp_path: Path) -> None:
    called: list[str] = []

    async def answer(question: str) -> str:
        called.append(question)
        return "yes"

    ctx = make_ctx(tmp_path)
    ctx.services = ToolServices(ask_user=answer)
    result = await ask_user(ctx, question="Which format?")
    assert result.status == "error"
    assert result.error is not None and result.error.code == "NOT_INTERACTIVE"
    assert "not interactive" in result.text
    assert called == []


async def test_ask_user_interactive_returns_the_answer(tmp_path: Path) -> None:
    asked: list[str] = []

    async def answer(question: str) -> str:
        asked.append(question)
        await asyncio.sleep(0)
        return "Use markdown."

    ctx = make_ctx(tmp_path, interactive=True)
    ctx.services = ToolServices(ask_user=answer)
    result = await ask_user(ctx, question="Which format?")
    assert result.status == "success"
    assert result.text == "Use markdown."
    assert result.data["answer"] == "Use markdown."
    assert asked == ["Which format?"]
    assert result.context["params_input"] == {"question": "Which format?"}


async def test_ask_user_edge_cases(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, interactive=True)
    missing = await ask_user(ctx, question="?")
    assert missing.error is not None and missing.error.code == "UNAVAILABLE"

    ctx.services = ToolServices(ask_user=lambda q: "")  # a plain function works too
    empty = await ask_user(ctx, question="?")
    assert empty.status == "success"
    assert empty.data["answer"] == ""
    assert "empty answer" in empty.text

    async def closed(question: str) -> str:
        raise EOFError

    ctx.services = ToolServices(ask_user=closed)
    eof = await ask_user(ctx, question="?")
    assert eof.error is not None and eof.error.code == "UNAVAILABLE"


BRIEF_TOOLS = [
    "web_search",
    "visit_url",
    "use_skill",
    "finish",
    "all_finished",
    "update_dashboard",
    "ask_user",
]


@pytest.mark.parametrize("name", BRIEF_TOOLS)
def test_manifest_is_valid_and_matches_its_function(name: str) -> None:
    """Each manifest passes the tool schema, names an importable async function whose keyword
    parameters are exactly the declared ones, and its defaults satisfy its config schema."""
    import importlib
    import inspect
    import json

    import jsonschema
    import yaml

    repo = Path(__file__).resolve().parents[1]
    manifest = yaml.safe_load((repo / "tools.d" / f"{name}.yaml").read_text(encoding="utf-8"))
    jsonschema.validate(manifest, json.loads((repo / "schema" / "tool.schema.json").read_text()))
    assert manifest["name"] == name
    jsonschema.Draft202012Validator.check_schema(manifest["parameters"])
    if "config" in manifest:
        jsonschema.Draft202012Validator.check_schema(manifest["config"])
        jsonschema.validate(manifest.get("defaults", {}), manifest["config"])
    module, func = manifest["implementation"]["python"].split(":")
    fn = getattr(importlib.import_module(module), func)
    assert inspect.iscoroutinefunction(fn)
    params = list(inspect.signature(fn).parameters)
    assert params[0] == "ctx"
    assert set(params[1:]) == set(manifest["parameters"]["properties"])
