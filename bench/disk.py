"""What the folder a bench writes in costs per new file, for bench/batch.py and bench/many_runs.py.

A run folder makes about a dozen files and folders (its log, run.json and usage.json, each
written to a temporary name first, the lock, prompts/, the agent's own files); a plain SDK
script that records nothing makes one. What one costs depends on the filesystem and on its
recent past: on tmpfs about 0.01 ms of CPU; on ext4 without a journal (some VMs' root disk)
each new inode is searched for past every inode of its block group deleted in the last one to
six minutes (the kernel's `recently_deleted`), so a file made soon after a previous bench or a
test suite removed thousands costs 0.2-0.8 ms, and the same bench gives figures a third apart
from one run to the next. The benches print this cost beside their figures."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

SAMPLE = 200  # files made to measure


def new_file_cost(folder: Path) -> float:
    """CPU milliseconds per empty file made in a new folder inside `folder` (as a run folder's
    files are: a new folder, then files in it)."""
    with tempfile.TemporaryDirectory(dir=folder, prefix="new-files-") as tmp:
        start = time.process_time()
        for i in range(SAMPLE):
            os.close(os.open(os.path.join(tmp, f"f{i}"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        return (time.process_time() - start) / SAMPLE * 1000


def filesystem(folder: Path) -> str:
    """The type of the filesystem `folder` is on (the longest mount point above it), with
    "without a journal" for ext4 when the kernel says so."""
    best, kind, device = "", "unknown", ""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return kind
    resolved = str(folder.resolve())
    for line in mounts:
        fields = line.split()
        if len(fields) > 2 and (resolved == fields[1] or resolved.startswith(fields[1].rstrip("/") + "/")):
            if len(fields[1]) > len(best):
                best, kind, device = fields[1], fields[2], fields[0]
    if kind == "ext4" and _no_journal(device):
        return "ext4 without a journal"
    return kind


def _no_journal(device: str) -> bool:
    """Whether ext4 on `device` (/dev/vda) runs without a journal (/sys/fs/ext4/vda/journal_task
    is `<none>` then)."""
    try:
        task = Path("/sys/fs/ext4", Path(device).name, "journal_task").read_text().strip()
    except OSError:
        return False
    return task == "<none>"


def describe(folder: Path, before: float, after: float) -> str:
    """One line on the folder's filesystem and its cost per new file before and after a bench."""
    return (
        f"new files in {filesystem(folder)} here: {before:.3f} ms of CPU each before, {after:.3f} after "
        f"(tmpfs about 0.01; see bench/disk.py)"
    )
