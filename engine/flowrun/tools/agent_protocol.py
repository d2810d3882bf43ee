"""Tools that talk to the agent loop rather than the world: finish, all_finished, exit_loop,
update_dashboard (and the tools declared over it for one dashboard) and ask_user.

finish / all_finished and update_dashboard set the result's typed `control` (Finish,
ResetContext); the runtime acts on it once every call of the step has returned.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Mapping
from pathlib import Path

from flowrun.atomic_files import LeavesRoot, replace_beneath
from flowrun.tools.base import ToolContext, error, finish_result, tool
from flowrun.tools.file_io import oserror_result
from flowrun.types import Finish, ResetContext, ToolResult


async def finish(ctx: ToolContext, result: str) -> ToolResult:
    """End this agent's run with `result` as its answer."""
    started = time.perf_counter()
    out = ToolResult("success", "Finished.", control=Finish(result))
    return finish_result(out, {"result": result}, started)


async def all_finished(ctx: ToolContext, result: str) -> ToolResult:
    """The deep-research-v2 spelling of finish: the whole task is done."""
    started = time.perf_counter()
    out = ToolResult("success", "All finished.", control=Finish(result))
    return finish_result(out, {"result": result}, started)


async def exit_loop(ctx: ToolContext) -> ToolResult:
    """ADK's exit_loop: end the loop this agent runs in. It leaves the file its config names as
    `marker` (the loop's `until` looks for it) and ends the agent with the content of the file
    `keep` names (its step's output, so ending it changes nothing there), as ADK leaves the
    state untouched."""
    started = time.perf_counter()
    workspace = ctx.workspace.resolve()
    marker, keep = ctx.config.get("marker"), ctx.config.get("keep")
    if not isinstance(marker, str) or not marker:
        return finish_result(
            error("INVALID_PARAM", "exit_loop has no loop to end (config `marker`)"), {}, started
        )
    target = (workspace / marker).resolve()
    if workspace not in target.parents:
        return finish_result(
            error("ACCESS_DENIED", f"exit_loop's marker {marker!r} leaves the workspace"), {}, started
        )
    try:
        replace_beneath(workspace, target, "exit_loop\n")
        kept = (workspace / keep).read_text(encoding="utf-8") if isinstance(keep, str) and keep else ""
    except LeavesRoot:
        return finish_result(
            error("ACCESS_DENIED", "exit_loop's files lead out of the workspace"), {}, started
        )
    except FileNotFoundError:
        kept = ""
    except OSError as e:
        return finish_result(oserror_result(e, f"exit_loop ({marker})"), {}, started)
    out = ToolResult("success", "The loop ends after this agent.", control=Finish(kept))
    return finish_result(out, {}, started)


CONTENT = {"type": "string", "description": "The complete new content of the dashboard (markdown)."}


def dashboard_parameters(search_path: list[Path], config: Mapping[str, object]) -> dict[str, object] | None:
    """`update_dashboard`'s parameters with `name` as an enum of the agent's dashboards, so the
    model (and a dry run) picks a real one; only `content` for a tool declared over this
    function for one dashboard (config `dashboard`, e.g. update_overall_dashboard); None (the
    manifest's) when no dashboard is configured."""
    fixed = config.get("dashboard")
    if isinstance(fixed, str) and fixed:
        return {
            "type": "object",
            "properties": {"content": CONTENT},
            "required": ["content"],
            "additionalProperties": False,
        }
    dashboards = config.get("dashboards")
    if not isinstance(dashboards, dict) or not dashboards:
        return None
    described = ", ".join(f"{name} ({path})" for name, path in dashboards.items())
    return {
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "enum": list(dashboards),
                "description": f"Which dashboard: {described}.",
            },
            "content": CONTENT,
        },
        "required": ["name", "content"],
        "additionalProperties": False,
    }


@tool(parameters=dashboard_parameters)
async def update_dashboard(ctx: ToolContext, content: str, name: str | None = None) -> ToolResult:
    """Replace a dashboard file's content, then ask the runtime to restart the conversation
    from the system prompt and the dashboards (the dashboard is the compressed history). The
    dashboard is `name`, or the one a tool declared over this function fixes (config
    `dashboard`)."""
    started = time.perf_counter()
    fixed = ctx.config.get("dashboard")
    name = str(fixed) if isinstance(fixed, str) and fixed else name
    params = {"name": name, "content": content}
    if name is None:
        message = "say which dashboard: `name` (the agent's dashboards are in the tool's description)"
        return finish_result(error("INVALID_PARAM", message), params, started)
    dashboards = ctx.config.get("dashboards") or {}
    if not isinstance(dashboards, dict) or name not in dashboards:
        names = (
            ", ".join(sorted(dashboards))
            if isinstance(dashboards, dict) and dashboards
            else "(none configured)"
        )
        return finish_result(
            error("INVALID_PARAM", f"unknown dashboard {name!r}; dashboards: {names}"), params, started
        )
    workspace = ctx.workspace.resolve()
    target = (workspace / str(dashboards[name])).resolve()
    if workspace not in target.parents:
        message = f"dashboard {name!r} points outside the workspace ({dashboards[name]!r})"
        return finish_result(error("ACCESS_DENIED", message), params, started)
    try:
        replace_beneath(workspace, target, content)
    except LeavesRoot:
        message = f"dashboard {name!r} points outside the workspace through a symlink"
        return finish_result(error("ACCESS_DENIED", message), params, started)
    except OSError as e:  # a folder where the file goes, a file where a folder is needed, ...
        failed = oserror_result(e, f"dashboard {name!r} ({ctx.relative(target)})")
        return finish_result(failed, params, started)
    rel = ctx.relative(target)
    text = (
        f"Dashboard {name!r} updated ({len(content)} chars, {rel}). The conversation now restarts "
        "from the system prompt and the dashboards; earlier messages are dropped."
    )
    out = ToolResult(
        "success", text, {"name": name, "path": rel, "chars": len(content)}, control=ResetContext()
    )
    return finish_result(out, params, started, path_resolved=rel)


@tool(replay="recorded")  # a person: a replay gives the answer they gave
async def ask_user(ctx: ToolContext, question: str) -> ToolResult:
    """Ask the person running the workflow. In a run that waits for decisions (the default),
    a question nobody can answer now makes the run wait for `flowrun answer`; in a run that
    does not (`decisions: refuse`, and no terminal), it is NOT_INTERACTIVE."""
    started = time.perf_counter()
    params: dict[str, object] = {"question": question}
    if not ctx.interactive:
        message = (
            "this run is not interactive, so nobody can answer; decide with what you have "
            "and state your assumption"
        )
        return finish_result(error("NOT_INTERACTIVE", message), params, started)
    service = ctx.services.ask_user
    if service is None:
        return finish_result(error("UNAVAILABLE", "no way to reach the user in this run"), params, started)
    try:
        answer = service(question)
        if inspect.isawaitable(answer):
            answer = await answer
    except EOFError as e:  # the input closed (or a person put the question off, and nothing waits)
        said = str(e) or "the user closed the input without answering"
        return finish_result(error("UNAVAILABLE", said), params, started)
    except TimeoutError:  # the run waited for an answer, and its deadline passed
        message = (
            "nobody answered this question within the deadline; decide with what you have and "
            "state your assumption"
        )
        return finish_result(error("TIMEOUT", message), params, started)
    answer = "" if answer is None else str(answer)
    text = answer if answer.strip() else "(the user gave an empty answer)"
    return finish_result(ToolResult.ok(text, answer=answer), params, started)
