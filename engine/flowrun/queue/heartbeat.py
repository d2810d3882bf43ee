"""A worker's heartbeat: a thread of its own that renews the worker's row and the leases of the
runs it holds every third of the lease, whatever its event loop is doing (a run may wait minutes
on one model call, or keep the loop busy), and tells the loop which leases were lost (another
worker took the job) and which runs were asked to stop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Protocol

from flowrun.queue.store import Store

BEATS_PER_LEASE = 3  # a lease survives two missed beats
LOST_AFTER = BEATS_PER_LEASE  # beats in a row (a lease's time) that find a lease another
# worker's: a claimer that found the folder held hands the job back long before, and a beat
# takes it back (Store.renew); a worker whose beats came late keeps its runs


class Holder(Protocol):
    """What the heartbeat needs of its worker (queue/worker.py)."""

    store: Store
    id: str
    state: str  # up, draining
    lease_s: float

    def runs(self) -> dict[str, str]: ...  # the runs it holds, by lease

    @property
    def note(self) -> Callable[[str], None]: ...

    def lost(self, lease: str) -> None: ...

    def cancel_asked(self, lease: str) -> None: ...


class Heartbeat(threading.Thread):
    def __init__(self, worker: Holder, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(name="flowrun-heartbeat", daemon=True)
        self.worker = worker
        self.loop = loop
        self.interval = worker.lease_s / BEATS_PER_LEASE
        self._ended = threading.Event()
        self.missed: dict[str, int] = {}  # by lease: beats in a row that found it another's

    def run(self) -> None:
        while not self._ended.wait(self.interval):
            self.beat()

    def beat(self) -> None:
        worker = self.worker
        leases = worker.runs()
        try:
            alive = worker.store.renew(worker.id, leases, worker.lease_s, worker.state)
        except Exception as e:  # the queue unreachable: the leases may run out; the next beat tells
            self.loop.call_soon_threadsafe(worker.note, f"worker {worker.id}: heartbeat failed: {e}")
            return
        self.missed = {lease: self.missed.get(lease, 0) + 1 for lease in leases if lease not in alive}
        for lease in leases:
            if self.missed.get(lease, 0) >= LOST_AFTER:
                self.loop.call_soon_threadsafe(worker.lost, lease)
            elif alive.get(lease):
                self.loop.call_soon_threadsafe(worker.cancel_asked, lease)

    def stop(self) -> None:
        self._ended.set()
        self.join(timeout=self.interval + 5)
