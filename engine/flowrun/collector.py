"""The cyclic garbage collector's thresholds in the processes flowrun owns: the command line
(every command) and batch workers. Python's default collects the youngest generation every
700 new container objects; a run makes tens of thousands (events, requests, answers), and 50
runs at once keep thousands alive, which every young collection walks again. At 10,000 the
collector's time per batch item falls by about 40 % (0.4-0.5 to 0.25-0.3 ms of CPU per item,
bench/batch.py's items in one process: 500 collections per 1,000 items become 24). A program
that runs workflows through the Python API keeps its own settings: only flowrun's own processes
are tuned.

Imports are collected for nothing: what an import makes lives as long as the process and is
marked kept right after (providers/clients.keep_imported). So next to nothing is collected while
flowrun's API or an SDK is imported (`paused`: the thresholds raised for the import, then put
back unless the program set its own meanwhile; the collector stays on or off as the program has
it), and the command line, which imports the API inside its commands, collects every 100,000
new objects until the API is kept (`tune(start_up=True)`, `settle`). Together 5-9 % of a short
run's CPU (bench/cold.py at 0 ms)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

THRESHOLDS = (10_000, 10, 10)  # (youngest, middle, oldest): gc.set_threshold's three
# the command line's until its modules are imported and kept: a command imports about 70,000
START_UP = (100_000, 10, 10)
PAUSED = (1_000_000, 10, 10)  # while an import runs: no collection in effect
_STARTING = {"on": False}


def tune(start_up: bool = False) -> None:
    """Set the thresholds for this process (one of flowrun's own). With `start_up` (the command
    line), START_UP's until `settle`: flowrun.api is imported inside the commands, where
    `paused` does not reach."""
    gc.set_threshold(*(START_UP if start_up else THRESHOLDS))
    _STARTING["on"] = start_up


def settle() -> None:
    """Flowrun's modules are imported and kept (providers/clients.keep_imported): a start-up
    begun by `tune(start_up=True)` is over. Nothing changes in any other process."""
    if _STARTING["on"]:
        _STARTING["on"] = False
        gc.set_threshold(*THRESHOLDS)


@contextmanager
def paused() -> Iterator[None]:
    """Next to no collection during the block (an import): PAUSED's thresholds, then the ones
    before it again, unless they were changed meanwhile (by the program, or by `settle`). Safe
    to nest and to use in several threads at once: the last block to end puts them back."""
    before = gc.get_threshold()
    gc.set_threshold(*PAUSED)
    try:
        yield
    finally:
        if gc.get_threshold() == PAUSED:
            gc.set_threshold(*before)
