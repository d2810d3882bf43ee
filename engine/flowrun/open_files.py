"""How many files one process may hold open.

Each open run holds its folder, its log, its `flowrun.log`, its lock and its model connections:
five descriptors or more. Many systems start processes with a soft limit of 1,024 open files
(the hard limit is usually far higher), which stopped a process at a couple of hundred runs at
once with "Too many open files". The first run of a process raises the soft limit to the hard
one, at most 65,536, as Ray and many servers do; where that is refused the limit stays."""

from __future__ import annotations

import functools

WANTED = 65_536


@functools.cache
def allow_open_files() -> int:
    """The soft limit on open files once raised (once per process)."""
    try:
        import resource
    except ImportError:  # (not a Unix)
        return WANTED
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = WANTED if hard == resource.RLIM_INFINITY else min(hard, WANTED)
    if soft == resource.RLIM_INFINITY or soft >= target:
        return soft
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError):  # (macOS refuses more than its OPEN_MAX with an unlimited hard limit)
        return soft
    return target
