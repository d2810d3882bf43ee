"""How a command that runs a workflow (run, resume, replay, chat) hears Ctrl-C and SIGTERM: the
first one cancels the run, which stops its tools, records `cancelled` and stays resumable;
later ones change nothing, and neither does one that comes once the run has its result.

The handlers are Python ones, installed for the run and left in place (ignoring) until the
command leaves, with a wake-up socket of their own for the event loop. asyncio's own
(`loop.add_signal_handler`) are taken down as the loop closes: the default handlers come back
for a moment, so a late SIGTERM would end a finished command, and a signal that lands while
the loop's wake-up socket is already closed prints a traceback."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

from flowrun.cli.common import Terminated

R = TypeVar("R")
REASONS = {signal.SIGINT: "cancelled (Ctrl-C)", signal.SIGTERM: "cancelled (SIGTERM)"}


class FirstStop:
    """The signal handler of a run: the first Ctrl-C or SIGTERM cancels it (with its reason),
    once; after that, and once the run's outcome is known, signals are ignored. Python runs a
    second signal's handler inside the first one's when they come together, so which one is
    first is settled by one step that cannot be cut in two (taking a lock without waiting)."""

    def __init__(self) -> None:
        self.by: signal.Signals | None = None
        self.listening = False
        self.cancel: Callable[[str], object] | None = None
        self._first = threading.Lock()

    def listen(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        self.cancel = lambda reason: loop.call_soon_threadsafe(task.cancel, reason)
        self.listening = True
        for sig in REASONS:
            signal.signal(sig, self)

    def __call__(self, signum: int, frame: object) -> None:
        if not self.listening or self.cancel is None or not self._first.acquire(blocking=False):
            return
        self.by = signal.Signals(signum)
        self.cancel(REASONS[self.by])  # on the loop: this runs between any two lines of it


def run_until_signal(start: Callable[[], Coroutine[Any, Any, R]]) -> R:
    """asyncio.run of the run, stopped by the first Ctrl-C (KeyboardInterrupt: exit 130) or
    SIGTERM (Terminated: exit 143) as the module docstring says; a result the run returned
    stands whatever came after it."""
    stop = FirstStop()

    async def main() -> R:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        with _wake_on_signals(loop):
            stop.listen(loop, task)
            try:
                return await start()
            finally:
                stop.listening = False  # the outcome is known: later signals change nothing

    try:
        result = asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):  # a Ctrl-C before the run started
        _ignore_signals()  # included (asyncio's own handler cancelled it)
        if stop.by == signal.SIGTERM:
            raise Terminated() from None
        raise KeyboardInterrupt() from None
    _ignore_signals()
    return result


@contextlib.contextmanager
def _wake_on_signals(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """A signal is handled in Python by the main thread, which runs the loop: one that another
    thread takes while the loop waits for I/O must wake it, through this socket (the C handler
    writes the signal's number to it). Given back before the socket closes."""
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    loop.add_reader(reader.fileno(), _drain, reader)
    previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous)
        loop.remove_reader(reader.fileno())
        reader.close()
        writer.close()


def _drain(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while sock.recv(4096):
            pass


def _ignore_signals() -> None:
    for sig in REASONS:
        signal.signal(sig, signal.SIG_IGN)
