"""The cyclic garbage collector's thresholds in the processes flowrun owns: the command line
(every command) and batch workers. Python's default collects the youngest generation every
700 new container objects; a run makes tens of thousands (events, requests, answers), and 50
runs at once keep thousands alive, which every young collection walks again. At 10,000 the
collector's time per batch item falls by about 40 % (0.4-0.5 to 0.25-0.3 ms of CPU per item,
bench/batch.py's items in one process: 500 collections per 1,000 items become 24). A program
that runs workflows through the Python API keeps its own settings: only flowrun's own processes
are tuned."""

from __future__ import annotations

import gc

THRESHOLDS = (10_000, 10, 10)  # (youngest, middle, oldest): gc.set_threshold's three


def tune() -> None:
    """Set the thresholds for this process (one of flowrun's own)."""
    gc.set_threshold(*THRESHOLDS)
