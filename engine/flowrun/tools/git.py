"""The git tool: runs `git SUBCOMMAND ...` without a shell in ctx.cwd.

Only subcommands in config `allow_subcommands` run (read-only ones by default). Global options
are refused (the subcommand must come first), as are options that write files, run programs or
read outside the repository (`--output`, `--ext-diff`, `--no-index`, `grep -O`, ...). Repository
discovery stops at the agent's base folder, and config that would run programs (fsmonitor,
hooks, external diff, textconv) is switched off on the command line.
"""

from __future__ import annotations

import os
import shlex
import time
from typing import Any

from flowrun.tools.base import ToolContext, error, finish_result
from flowrun.tools.process import outcome_result, output_cap, run_process
from flowrun.types import ToolResult

DEFAULT_ALLOWED = ("status", "log", "diff", "show", "branch", "rev-parse", "ls-files", "blame", "grep")
DEFAULT_TIMEOUT_S = 60.0
SAFE_CONFIG = ("core.fsmonitor=false", "core.hooksPath=/dev/null", "core.pager=cat", "credential.helper=")
DENIED_OPTIONS = (
    "--output",
    "--exec-path",
    "--git-dir",
    "--work-tree",
    "--upload-pack",
    "--receive-pack",
    "--exec",
    "--open-files-in-pager",
    "--ext-diff",
    "--textconv",
    "--no-index",
    "--config-env",
)
KEPT_ENV = ("GIT_AUTHOR_", "GIT_COMMITTER_")
NO_PROGRAMS = {
    "diff": ["--no-ext-diff", "--no-textconv"],
    "show": ["--no-ext-diff", "--no-textconv"],
    "log": ["--no-ext-diff", "--no-textconv"],
    "blame": ["--no-textconv"],
    "grep": ["--no-textconv"],
}


async def git(ctx: ToolContext, *, args: list[str] | str) -> ToolResult:
    params: dict[str, Any] = {"args": args}
    started = time.perf_counter()
    argv, problem = _parse(args)
    if problem is None:
        problem = _refusal(argv, ctx.config.get("allow_subcommands") or list(DEFAULT_ALLOWED))
    if problem is not None:
        return finish_result(problem, params, started)
    timeout = float(ctx.config.get("timeout") or ctx.limits.get("timeout_s") or DEFAULT_TIMEOUT_S)
    limit = output_cap(ctx)
    command = ["git", "--no-pager"]
    for setting in SAFE_CONFIG:
        command += ["-c", setting]
    command += [argv[0], *NO_PROGRAMS.get(argv[0], []), *argv[1:]]
    try:
        outcome = await run_process(
            command, cwd=ctx.cwd, env=_env(ctx), timeout_s=timeout, max_output_bytes=limit
        )
    except OSError as e:
        return finish_result(error("UNAVAILABLE", f"cannot run git: {e}"), params, started)
    result = outcome_result(outcome, f"git {argv[0]}", timeout)
    result.data["argv"] = ["git", *argv]
    return finish_result(result, params, started)


def _parse(args: list[str] | str) -> tuple[list[str], ToolResult | None]:
    if isinstance(args, str):
        try:
            argv = shlex.split(args)
        except ValueError as e:
            return [], error("INVALID_PARAM", f"cannot split args {args!r}: {e}")
    else:
        argv = [str(a) for a in args]
    if argv and argv[0] == "git":  # models often repeat the program name
        argv = argv[1:]
    if not argv:
        return [], error("INVALID_PARAM", "args must name a git subcommand, e.g. ['status'] or 'log -n 5'")
    return argv, None


def _refusal(argv: list[str], allowed: list[str]) -> ToolResult | None:
    sub = argv[0]
    if sub.startswith("-"):
        return error(
            "PERMISSION_DENIED",
            f"global git options ({sub}) are not allowed; start args with the subcommand, "
            "e.g. ['log', '-n', '5']",
        )
    if sub not in allowed:
        return error(
            "PERMISSION_DENIED",
            f"git {sub} is not allowed for this agent; allowed subcommands: {', '.join(allowed)}",
        )
    for arg in argv[1:]:
        if arg == "--":
            break  # what follows are paths
        if _denied_option(sub, arg):
            return error("PERMISSION_DENIED", f"the option {arg!r} is not allowed in the git tool")
    return None


def _denied_option(sub: str, arg: str) -> bool:
    if any(arg == opt or arg.startswith(opt + "=") for opt in DENIED_OPTIONS):
        return True
    # `git grep -O<pager>` opens files in an arbitrary program, also inside a cluster like -nO
    return sub == "grep" and arg.startswith("-") and not arg.startswith("--") and "O" in arg


def _env(ctx: ToolContext) -> dict[str, str]:
    # drop GIT_DIR, GIT_EXTERNAL_DIFF, GIT_CONFIG_* and the like; keep the commit identity
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k.startswith(KEPT_ENV)}
    env.update(
        GIT_CEILING_DIRECTORIES=str(ctx.base_dir.resolve().parent),  # do not find a repository above the base
        GIT_TERMINAL_PROMPT="0",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_OPTIONAL_LOCKS="0",  # status must not write the index behind a read-only agent's back
        PAGER="cat",
    )
    return env
