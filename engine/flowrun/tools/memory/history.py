"""`git: true` on a memory: each change is a commit in the memory's folder (a repository made the
first time), its message naming the run, the agent and the command. git is flowrun's own step
here, not a tool's: it runs with no user or system configuration (no hooks, no fsmonitor, no
signing), so a repository's settings cannot make it run anything else."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil

from flowrun.tools.git import SAFE_CONFIG
from flowrun.tools.memory.folder import MemoryFolder

GIT_TIMEOUT_S = 30.0
SETTINGS = (
    *SAFE_CONFIG,  # (the git tool's: no hooks, no fsmonitor, no pager, no credential helper)
    "commit.gpgsign=false",
    "user.name=flowrun",
    "user.email=flowrun@localhost",
)


async def commit(folder: MemoryFolder, message: str) -> str | None:
    """The folder's files committed with `message`; None when it worked (or there was nothing
    to commit), else why not, in one line."""
    git = shutil.which("git")
    if git is None:
        return "git is not installed; the change is written but not committed"
    root = str(folder.real_root())
    for step in (("init", "-q"), ("add", "-A", "--", ".")):  # (init again is harmless)
        problem = await _git(git, root, *step)
        if problem:
            return problem
    if not await _git(git, root, "diff", "--cached", "--quiet"):
        return None  # nothing staged: the change left the files as they were
    return await _git(git, root, "commit", "-q", "--no-verify", "-m", message)


async def _git(git: str, root: str, *args: str) -> str | None:
    """None when `git ARGS` exits 0, else its first line of complaint."""
    environment = {  # (set for git, never read by flowrun)
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": root,  # (no ~/.gitconfig is read)
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
    }
    settings = [part for setting in SETTINGS for part in ("-c", setting)]
    quiet = asyncio.subprocess.DEVNULL
    proc = await asyncio.create_subprocess_exec(
        git,
        *settings,
        "-C",
        root,
        *args,
        stdin=quiet,
        stdout=quiet,
        stderr=asyncio.subprocess.PIPE,
        env=environment,
    )
    try:
        _, err = await asyncio.wait_for(proc.communicate(), GIT_TIMEOUT_S)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
        return f"git {args[0]} took over {GIT_TIMEOUT_S:g} s"
    if proc.returncode == 0:
        return None
    lines = err.decode("utf-8", "replace").strip().splitlines()
    return f"git {args[0]} failed: {lines[0] if lines else f'exit {proc.returncode}'}"
