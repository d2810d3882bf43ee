"""The git tool: runs `git SUBCOMMAND ...` without a shell in ctx.cwd, inside the tool's
sandbox (see sandbox.py).

Only subcommands in config `allow_subcommands` run (read-only ones by default). Refused before
git starts: global options (the subcommand must come first: no `-c`, `-C`, `--git-dir`), options
that read or write files of their choosing or run programs (`--output`, `--contents`, `--file` /
`-F`, `--separate-git-dir`, `--work-tree`, `--ext-diff`, `--no-index`, `grep -O` / `-f`, ... in
any spelling: `--opt=x`, git's abbreviations such as `--cont`, clustered short options such as
`-aF`), and any argument or option value naming a path that resolves outside the workdir (the
agent's base folder); `init` only inside it. Repository discovery stops at the workdir, config
that would run programs (fsmonitor, hooks, external diff, textconv) is switched off on the
command line, and git sees no environment variable but its own settings and the commit identity.
"""

from __future__ import annotations

import shlex
import time
from typing import Any

from flowrun.tools.base import ToolContext, error, finish_result, tool
from flowrun.tools.process import exec_failure, launch, outcome_result, output_cap, unavailable
from flowrun.tools.sandbox import SandboxUnavailable
from flowrun.types import ToolResult

DEFAULT_ALLOWED = ("status", "log", "diff", "show", "branch", "rev-parse", "ls-files", "blame", "grep")
DEFAULT_TIMEOUT_S = 60.0
SAFE_CONFIG = ("core.fsmonitor=false", "core.hooksPath=/dev/null", "core.pager=cat", "credential.helper=")
# refused in every subcommand, also abbreviated (`--cont` is git's `--contents`)
DENIED_OPTIONS = (
    "--output",
    "--exec-path",
    "--git-dir",
    "--work-tree",
    "--separate-git-dir",
    "--upload-pack",
    "--receive-pack",
    "--exec",
    "--open-files-in-pager",
    "--ext-diff",
    "--textconv",
    "--no-index",
    "--config-env",
    "--contents",
    "--file",
)
# short options that read a file or run a program, by subcommand (anywhere in a cluster)
DENIED_SHORT = {
    "commit": "F",
    "tag": "F",
    "notes": "F",
    "merge": "F",
    "grep": "Of",
    "clone": "u",
    "fetch": "u",
}
KEPT_ENV = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL")
NO_PROGRAMS = {
    "diff": ["--no-ext-diff", "--no-textconv"],
    "show": ["--no-ext-diff", "--no-textconv"],
    "log": ["--no-ext-diff", "--no-textconv"],
    "blame": ["--no-textconv"],
    "grep": ["--no-textconv"],
}


READ_ONLY = frozenset({"status", "log", "diff", "show", "rev-parse", "ls-files", "blame", "grep"})
BRANCH_LISTING = frozenset({"-a", "--all", "-r", "--remotes", "-l", "--list", "-v", "-vv", "--show-current"})


def _git_repeat_safe(arguments: dict[str, Any]) -> bool:
    """Reading subcommands are safe to run again; anything that may write (commit, add, tag,
    branch with a name, push, ...) is not."""
    argv, problem = _parse(arguments.get("args", []))
    if problem is not None or not argv:
        return True  # refused before git runs
    if argv[0] == "branch":
        return all(a in BRANCH_LISTING for a in argv[1:])
    return argv[0] in READ_ONLY


@tool(idempotent=_git_repeat_safe)
async def git(ctx: ToolContext, *, args: list[str] | str) -> ToolResult:
    params: dict[str, object] = {"args": args}
    started = time.perf_counter()
    argv, problem = _parse(args)
    if problem is None:
        problem = _refusal(argv, ctx.config.get("allow_subcommands") or list(DEFAULT_ALLOWED))
    if problem is None:
        problem = _outside(ctx, argv)
    if problem is not None:
        return finish_result(problem, params, started)
    timeout = float(ctx.config.get("timeout") or ctx.limits.get("timeout_s") or DEFAULT_TIMEOUT_S)
    limit = output_cap(ctx)
    command = ["git", "--no-pager"]
    for setting in SAFE_CONFIG:
        command += ["-c", setting]
    command += [argv[0], *NO_PROGRAMS.get(argv[0], []), *argv[1:]]
    try:
        how = launch(ctx, command, extra_env=_settings(ctx), keep_env=KEPT_ENV)
        outcome = await how.run(timeout, limit)
    except SandboxUnavailable as e:
        return finish_result(unavailable(e), params, started)
    except OSError as e:
        return finish_result(error("UNAVAILABLE", f"cannot run git: {e}"), params, started)
    failed = exec_failure(outcome) if how.confined else None
    if failed is not None:
        return finish_result(error("UNAVAILABLE", f"cannot run git: {failed}"), params, started)
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
    if any("\x00" in a for a in argv):
        return [], error("INVALID_PARAM", "an argument contains a NUL byte")
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
    if sub not in allowed and argv != ["version"]:  # `git version` reveals nothing and runs anywhere
        return error(
            "PERMISSION_DENIED",
            f"git {sub} is not allowed for this agent; allowed subcommands: {', '.join(allowed)}",
        )
    for arg in argv[1:]:
        if arg == "--":
            break  # what follows are paths
        denied = _denied_option(sub, arg)
        if denied is not None:
            return error("PERMISSION_DENIED", f"the option {arg!r} ({denied}) is not allowed in the git tool")
    return None


def _denied_option(sub: str, arg: str) -> str | None:
    """The refused option `arg` spells, or None."""
    if arg.startswith("--") and len(arg) > 2:
        name = arg.split("=", 1)[0]
        # git accepts any unambiguous prefix of a long option
        return next((opt for opt in DENIED_OPTIONS if opt.startswith(name)), None)
    if arg.startswith("-") and len(arg) > 1:
        letters = DENIED_SHORT.get(sub, "")
        return next((f"-{c}" for c in arg[1:] if c in letters), None)
    return None


def _outside(ctx: ToolContext, argv: list[str]) -> ToolResult | None:
    """A refusal when an argument or option value names a path outside the workdir."""
    workdir = ctx.base_dir.resolve()
    cwd = ctx.cwd.resolve()
    if not cwd.is_relative_to(workdir):
        return error("PERMISSION_DENIED", "git runs only inside the agent's folder")
    paths_only = False
    for arg in argv[1:]:
        if arg == "--" and not paths_only:
            paths_only = True
            continue
        candidate = arg if paths_only else _path_part(arg)
        if candidate is None:
            continue
        if candidate.startswith("~"):
            return error(
                "PERMISSION_DENIED", f"{arg!r} names a path in a home folder; use paths in the workspace"
            )
        try:
            inside = (cwd / candidate).resolve().is_relative_to(workdir)
        except (OSError, ValueError):
            inside = False
        if not inside:
            return error(
                "PERMISSION_DENIED",
                f"{arg!r} names a path outside the workspace; git may only touch files inside it",
            )
    return None


def _path_part(arg: str) -> str | None:
    """The part of an argument that may name a path: a plain argument (a revision resolves
    inside), the value of `--opt=value`, or what follows the first `/`, `~` or `..` of a short
    option cluster, whose attached value could be a path (`-o../x`)."""
    if arg.startswith("--"):
        _, eq, value = arg.partition("=")
        return value if eq and value else None
    if arg.startswith("-"):
        cuts = [i for i in (arg.find("/"), arg.find("~"), arg.find("..")) if i > 0]
        return arg[min(cuts) :] if cuts else None
    return arg or None


def _settings(ctx: ToolContext) -> dict[str, str]:
    """git's own environment: no repository above the base folder, no prompts, no system
    config, no writes behind a read-only agent's back (GIT_DIR and the like never get in)."""
    return {
        "GIT_CEILING_DIRECTORIES": str(ctx.base_dir.resolve().parent),
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_OPTIONAL_LOCKS": "0",
        "PAGER": "cat",
    }
