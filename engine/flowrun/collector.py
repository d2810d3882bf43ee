"""The cyclic garbage collector's thresholds in the processes flowrun owns: the command line
(every command) and batch workers. Python's default collects the youngest generation every
700 new container objects; a run makes tens of thousands (events, requests, answers), and 50
runs at once keep thousands alive, which every young collection walks again. At 10,000 the
collector's time per batch item falls by half or more (0.55 to 0.2 ms of CPU per item in
one process, bench/batch.py's items). A program that runs workflows through the Python API
keeps its own settings: only flowrun's own processes are tuned."""

from __future__ import annotations

import gc

THRESHOLDS = (10_000, 10, 10)  # (youngest, middle, oldest): gc.set_threshold's three


def tune() -> None:
    """Set the thresholds for this process (one of flowrun's own)."""
    gc.set_threshold(*THRESHOLDS)
