"""Running one hook: a command through the same door as every tool process (tools/process.py:
the sandbox, its own process group, output capped, killed with everything it started at its
timeout), bash reading the event's JSON on stdin, with $CLAUDE_PROJECT_DIR the workflow's
folder (read-only inside the sandbox, so the project's hook scripts run); or a Python function
by import path, called with the same dict, in flowrun's process (as Python tools are)."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import cast

from flowrun.errors import ManifestError
from flowrun.manifest.specs import HookHandler
from flowrun.runtime.hooks.answers import NOT_FOUND_CODES, HookAnswer
from flowrun.tools.base import ToolContext
from flowrun.tools.process import exec_failure, launch
from flowrun.tools.sandbox import SandboxUnavailable

DEFAULT_TIMEOUT_S = 60.0  # Claude Code's
OUTPUT_CAP = 100_000  # bytes kept of each stream
SHELL = "/bin/bash" if os.path.exists("/bin/bash") else "/bin/sh"


async def run_handler(
    handler: HookHandler, payload: dict[str, object], ctx: ToolContext, project_dir: Path
) -> HookAnswer:
    timeout = handler.timeout or DEFAULT_TIMEOUT_S
    if handler.python is not None:
        return await _run_python(handler.python, payload, project_dir, timeout)
    assert handler.command is not None
    return await _run_command(handler.command, payload, ctx, project_dir, timeout)


async def _run_command(
    command: str, payload: dict[str, object], ctx: ToolContext, project_dir: Path, limit_s: float
) -> HookAnswer:
    policy = ctx.sandbox
    if policy.mode != "off" and str(project_dir) not in policy.ro_binds:
        ctx = replace(ctx, sandbox=replace(policy, ro_binds=(*policy.ro_binds, str(project_dir))))
    settings = {"CLAUDE_PROJECT_DIR": str(project_dir), "FLOWRUN_HOOK_EVENT": str(payload["hook_event_name"])}
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    try:
        how = launch(ctx, [SHELL, "-c", command], extra_env=settings)
        outcome = await how.run(limit_s, OUTPUT_CAP, stdin=data)
    except SandboxUnavailable as e:
        return HookAnswer(failure=f"the sandbox cannot start: {e.reason}")
    except OSError as e:
        return HookAnswer(failure=f"cannot start {SHELL}: {e}")
    stdout, stderr = outcome.stdout.text("stdout"), outcome.stderr.text("stderr")
    if outcome.timed_out:
        return HookAnswer(outcome.exit_code, stdout, stderr, f"timed out after {limit_s:g} s")
    failed = exec_failure(outcome) if how.confined else None
    if failed is not None:
        return HookAnswer(outcome.exit_code, stdout, stderr, f"{SHELL} cannot be started: {failed}")
    code = outcome.exit_code
    if code in NOT_FOUND_CODES:
        last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
        what = f"its command {NOT_FOUND_CODES[code]} (exit {code})"
        return HookAnswer(code, stdout, stderr, f"{what}: {last}" if last else what)
    return HookAnswer(code, stdout, stderr)


async def _run_python(
    dotted: str, payload: dict[str, object], project_dir: Path, limit_s: float
) -> HookAnswer:
    from flowrun.runtime.tool_kinds.python import import_function

    try:
        func = cast(Callable[[dict[str, object]], object], import_function(dotted, project_dir))
    except ManifestError as e:
        return HookAnswer(failure=e.message)
    try:
        if inspect.iscoroutinefunction(func):
            answer = await asyncio.wait_for(cast(Awaitable[object], func(dict(payload))), limit_s)
        else:
            answer = await asyncio.wait_for(asyncio.to_thread(func, dict(payload)), limit_s)
    except TimeoutError:
        return HookAnswer(failure=f"timed out after {limit_s:g} s")
    except Exception as e:  # a hook's crash is its failure, never the run's
        return HookAnswer(failure=f"{type(e).__name__}: {e}")
    if answer is None:
        return HookAnswer(0)
    if not isinstance(answer, dict):
        return HookAnswer(
            failure=f"it returned {type(answer).__name__}, not a dict (the JSON output) or None"
        )
    try:
        return HookAnswer(0, json.dumps(answer, ensure_ascii=False))
    except (TypeError, ValueError) as e:
        return HookAnswer(failure=f"its answer is not JSON: {e}")
