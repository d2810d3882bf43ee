"""Declarative command tools: a manifest's `implementation: {command: [...], cwd?, env?}`.

Each argv item is a Jinja2 template (sandboxed, StrictUndefined) over the model's arguments.
An item that is exactly `{{ name }}` with a list value expands into one argv item per element;
an item whose template renders to "" is dropped, so `{{ '--verbose' if verbose else '' }}` works.
The program runs without a shell, inside the tool's sandbox (see sandbox.py), in its own process
group, in a working folder confined like file paths, under the same allow/deny patterns as
execute_shell.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jinja2.sandbox import SandboxedEnvironment

from flowrun.tools.base import ToolContext, error, finish_result
from flowrun.tools.command_policy import check_argv, config_patterns, describe
from flowrun.tools.paths import PathDenied, resolve_path
from flowrun.tools.process import (
    capped,
    exec_failure,
    launch,
    outcome_result,
    output_cap,
    unavailable,
)
from flowrun.tools.sandbox import SandboxUnavailable
from flowrun.types import ToolResult

DEFAULT_TIMEOUT_S = 120.0
WHOLE_NAME = re.compile(r"^\{\{\s*([A-Za-z_]\w*)\s*\}\}$")


class RenderError(Exception):
    pass


async def run_command(
    ctx: ToolContext,
    *,
    argv: list[str],
    arguments: dict[str, Any],
    cwd: str | None = None,
    env: dict[str, str] | None = None,
) -> ToolResult:
    params: dict[str, object] = dict(arguments)
    started = time.perf_counter()
    try:
        rendered = render_argv(argv, arguments)
        rendered_env = {k: render(v, arguments) for k, v in (env or {}).items()}
        workdir = _workdir(ctx, render(cwd, arguments) if cwd else None)
    except RenderError as e:
        return finish_result(error("INVALID_PARAM", str(e)), params, started)
    except PathDenied as e:
        return finish_result(e.to_result(), params, started)
    if not rendered:
        return finish_result(error("INVALID_PARAM", "the command rendered to an empty argv"), params, started)
    if any("\x00" in part for part in [*rendered, *rendered_env.values()]):
        return finish_result(error("INVALID_PARAM", "an argument contains a NUL byte"), params, started)
    allow, deny = config_patterns(ctx.config, "allow"), config_patterns(ctx.config, "deny")
    denial = check_argv(rendered, allow, deny)
    if denial is not None:
        return finish_result(error("PERMISSION_DENIED", describe(denial, allow)), params, started)
    timeout = capped(ctx.config.get("timeout"), float(ctx.limits.get("timeout_s") or DEFAULT_TIMEOUT_S), None)
    try:
        how = launch(ctx, rendered, cwd=workdir, extra_env=rendered_env)
        outcome = await how.run(timeout, output_cap(ctx))
    except SandboxUnavailable as e:
        result = unavailable(e)
    except FileNotFoundError:
        result = error("NOT_FOUND", f"program {rendered[0]!r} was not found")
    except PermissionError:
        result = error("PERMISSION_DENIED", f"program {rendered[0]!r} is not executable")
    except OSError as e:
        result = error("UNAVAILABLE", f"cannot start {rendered[0]!r}: {e}")
    else:
        failed = exec_failure(outcome) if how.confined else None
        if failed is not None:
            missing = "No such file" in failed
            result = error(
                "NOT_FOUND" if missing else "PERMISSION_DENIED",
                f"program {rendered[0]!r} "
                + ("was not found" if missing else f"cannot be started: {failed}"),
            )
        else:
            result = outcome_result(outcome, Path(rendered[0]).name, timeout)
        result.data["argv"] = rendered
    return finish_result(result, params, started, ctx.relative(workdir))


def render_argv(argv: list[str], arguments: dict[str, Any]) -> list[str]:
    """Render every item; expand whole-item list arguments; drop templates that render empty."""
    out: list[str] = []
    for item in argv:
        whole = WHOLE_NAME.match(item)
        if whole and isinstance(arguments.get(whole.group(1)), list | tuple):
            out.extend(_text(v) for v in arguments[whole.group(1)])
            continue
        value = render(item, arguments)
        if value or ("{{" not in item and "{%" not in item):
            out.append(value)
    return out


def render(template: str, arguments: Mapping[str, object]) -> str:
    from jinja2 import TemplateError

    try:
        return _jinja().from_string(template).render(**arguments)
    except TemplateError as e:  # undefined names, syntax errors, sandbox violations
        raise RenderError(f"cannot render {template!r}: {e}") from e


@functools.cache
def _jinja() -> SandboxedEnvironment:
    """The environment, made (and jinja2 imported) when a command tool first runs: a workflow
    without one does not pay for jinja2 at start-up."""
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _workdir(ctx: ToolContext, cwd: str | None) -> Path:
    if not cwd:
        return ctx.cwd
    path = resolve_path(ctx, cwd)
    if not path.is_dir():
        raise PathDenied("NOT_FOUND", f"working folder {cwd!r} is not a directory")
    return path
