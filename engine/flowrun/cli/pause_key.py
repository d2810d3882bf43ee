"""The pause key of an interactive run (the instructor/worker design's): Esc pauses the run at
the next step boundary of any agent, asks for one message, gives it to the agent that reached
the boundary (recorded as a `user_message` event, so resume and replay give it again) and goes
on. Ctrl-C keeps its meaning (stop, resumable); Ctrl-\\ keeps the terminal's (SIGQUIT).

While the run goes on, the terminal is in cbreak mode without echo (signal keys still work, and
typed keys do not scribble over the progress panel): a thread reads the keys and a lone Esc
asks for the pause (an escape sequence, such as an arrow key, is read whole and ignored). Any
read of the terminal (this message, `ask_user`, an approval) runs with the terminal given back
(`suspended()`), and the terminal is always restored when the run ends."""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from flowrun.cli.common import read_in_background

if TYPE_CHECKING:
    from flowrun.cli.views.progress import Progress

ESC = b"\x1b"
SEQUENCE_WAIT_S = 0.05  # the bytes of an escape sequence arrive together; a lone Esc has none after it
HINT = "Esc pauses the run to give the agent at work a message; Ctrl-C stops it (resumable)"


class PauseKey:
    """The `Interjection` of a run on a terminal (see runtime/options.py)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.progress: Progress | None = None  # the run's display, once it is made
        self.closed = False
        self._requested = threading.Event()
        self._saved: list[Any] | None = None
        self._thread: threading.Thread | None = None
        self._wake: tuple[int, int] | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------ Interjection

    def requested(self) -> bool:
        return self._requested.is_set()

    async def read(self, agent: str) -> str | None:
        self._requested.clear()  # before the first await: one pause, one message

        def ask() -> str:
            display = self.progress.paused() if self.progress is not None else contextlib.nullcontext()
            with display, self.suspended():
                print(
                    f"\n⏸ paused before {agent}'s next step. Your message to {agent} "
                    "(Enter sends it; an empty line goes on without one):",
                    file=sys.stderr,
                    flush=True,
                )
                print("> ", end="", file=sys.stderr, flush=True)
                line = sys.stdin.readline()
            return line.rstrip("\n")

        text = await read_in_background(ask)
        self.say(f"▶ {agent} goes on" + (" with your message" if text.strip() else ""))
        return text

    def say(self, line: str) -> None:
        """A line above the progress panel (or on stderr)."""
        if self.progress is not None:
            self.progress.note(line)
        else:
            print(line, file=sys.stderr, flush=True)

    # ------------------------------------------------------------ the terminal

    def start(self) -> None:
        """Listen for the key (the terminal in cbreak mode, no echo)."""
        import termios

        with self._lock:
            if self._thread is not None or self.closed:
                return
            if self._saved is None:
                self._saved = termios.tcgetattr(self.fd)
            mode = termios.tcgetattr(self.fd)
            mode[3] &= ~(termios.ICANON | termios.ECHO)  # lflags: keys one by one, not shown; ISIG kept
            mode[6][termios.VMIN], mode[6][termios.VTIME] = 1, 0
            termios.tcsetattr(self.fd, termios.TCSANOW, mode)  # TCSANOW: a key typed already is kept
            self._wake = os.pipe()
            self._thread = threading.Thread(target=self._listen, name="flowrun-pause-key", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop listening and give the terminal back as it was."""
        import termios

        with self._lock:
            thread, wake, self._thread, self._wake = self._thread, self._wake, None, None
        if wake is not None:
            os.write(wake[1], b"x")
        if thread is not None:
            thread.join()
        if wake is not None:
            for fd in wake:
                os.close(fd)
        if self._saved is not None:
            with contextlib.suppress(termios.error):
                termios.tcsetattr(self.fd, termios.TCSANOW, self._saved)

    def close(self) -> None:
        """For good: the terminal given back, and not taken again (a read still waiting in its
        thread when the run ends does not take it)."""
        self.closed = True
        self.stop()
        if self._requested.is_set():
            self._requested.clear()
            self.say("the run ended before another step: no message was asked for")

    @contextlib.contextmanager
    def suspended(self) -> Iterator[None]:
        """The terminal as it was (line editing, echo) while something else reads it."""
        listening = self._thread is not None
        self.stop()
        try:
            yield
        finally:
            if listening:
                self.start()

    def _listen(self) -> None:
        wake = self._wake
        assert wake is not None
        while True:
            ready, _, _ = select.select([self.fd, wake[0]], [], [])
            if wake[0] in ready:
                return
            try:
                data = os.read(self.fd, 64)
            except OSError:
                return
            if not data:  # the terminal is gone
                return
            if data == ESC and not self._more_follows():
                self._pause()
            elif data.startswith(ESC):
                self._drain()  # an escape sequence (arrow keys and the like): not the pause key

    def _more_follows(self) -> bool:
        ready, _, _ = select.select([self.fd], [], [], SEQUENCE_WAIT_S)
        if ready:
            self._drain()
            return True
        return False

    def _drain(self) -> None:
        while select.select([self.fd], [], [], 0)[0]:
            if not os.read(self.fd, 64):
                return

    def _pause(self) -> None:
        if self._requested.is_set():
            return
        self._requested.set()
        self.say("⏸ pausing at the next step boundary (Esc was pressed)…")


def terminal_pause() -> PauseKey | None:
    """A pause key for a run on a terminal (stdin and stderr ttys, POSIX), else None."""
    if os.name != "posix" or not sys.stdin.isatty() or not sys.stderr.isatty():
        return None
    try:
        import termios
    except ImportError:
        return None
    try:
        termios.tcgetattr(sys.stdin.fileno())
    except (OSError, termios.error):
        return None
    return PauseKey(sys.stdin.fileno())
