"""`flowrun ARGS` as a process of its own, as a user runs it: `run_cli` waits for it (through
the fork server when nothing it is given needs a fresh interpreter), `popen_cli` starts it
fresh for a test that signals or races it. Both give it this process's environment without the
real keys (`support.env.clean_env`), then the test's `env`."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from support import fork_server
from support.env import clean_env


def flowrun_cmd() -> list[str]:
    """The installed console script when present, else the module (same code)."""
    script = Path(sys.executable).parent / "flowrun"
    return [str(script)] if script.exists() else [sys.executable, "-m", "flowrun"]


def run_cli(
    args: list[str], cwd: Path | None = None, env: Mapping[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`flowrun ARGS` run to its end, its output captured as text."""
    given = dict(env or {})
    if fork_server.forkable(given):
        return fork_server.run(args, cwd, clean_env(given), given, timeout)
    return subprocess.run(
        [*flowrun_cmd(), *args],
        cwd=cwd,
        env=clean_env(given),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def popen_cli(
    args: list[str],
    cwd: Path,
    env: Mapping[str, str] | None = None,
    *,
    stdin: int | None = None,
    new_session: bool = False,
) -> subprocess.Popen[str]:
    """`flowrun ARGS` started fresh and not waited for, its output piped; `new_session`: in a
    process group of its own, as a terminal runs a command."""
    pipe = subprocess.PIPE
    return subprocess.Popen(
        [*flowrun_cmd(), *args],
        cwd=cwd,
        env=clean_env(env),
        stdin=stdin,
        stdout=pipe,
        stderr=pipe,
        text=True,
        start_new_session=new_session,
    )


def no_root_file_powers() -> None:
    """For a child's preexec_fn: file permissions hold for it even when the tests run as root
    (CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH leave its bounding set, so the exec'd program
    does not get them)."""
    if os.geteuid() != 0:
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    pr_capbset_drop, cap_dac_override, cap_dac_read_search = 24, 1, 2
    for cap in (cap_dac_override, cap_dac_read_search):
        if libc.prctl(pr_capbset_drop, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def run_unprivileged(
    args: list[str], cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`flowrun ARGS` fresh, with file permissions enforced (see no_root_file_powers)."""
    return subprocess.run(
        [*flowrun_cmd(), *args],
        cwd=cwd,
        env=clean_env(env),
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=no_root_file_powers,
    )
