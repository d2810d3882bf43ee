"""A run's event log as server-sent events: the log is replayed, then followed as it grows, by
its byte position (never by re-reading: nothing is lost or repeated), until the run is no
longer running. Only whole lines are sent: a line being written (or torn by a crash) waits
until its newline arrives. Each event is `id: SEQ`, `event: TYPE`, `data: LINE`; a client that
reconnects with `Last-Event-ID: SEQ` (or `?after=SEQ`) gets what came after."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

READ_BYTES = 1 << 20  # read at most this much per step: a long log is replayed in pieces
POLL_S = 0.25  # how often a log written by another process is looked at
PING_S = 15.0  # a comment line this often while nothing happens (proxies keep the stream)


def sse(seq: int | None, kind: str, data: bytes) -> bytes:
    head = (f"id: {seq}\n" if seq is not None else "") + f"event: {kind}\n"
    return head.encode() + b"data: " + data + b"\n\n"


class LogFollower:
    """Reads a log's new whole lines from where it left off."""

    def __init__(self, path: Path, after: int = 0) -> None:
        self.path = path
        self.after = after  # the last seq sent
        self.position = 0

    def read(self) -> list[tuple[int, str, bytes]]:
        """The events written since the last call (seq, type, line), those up to `after`
        skipped."""
        try:
            with self.path.open("rb") as f:
                f.seek(self.position)
                data = f.read(READ_BYTES)
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n")
        if end < 0:
            return []  # nothing, or a line still being written
        self.position += end + 1
        found = []
        for line in data[: end + 1].splitlines():
            try:
                event = json.loads(line)
            except ValueError:  # a damaged line: not an event
                continue
            seq = event.get("seq") if isinstance(event, dict) else None
            if isinstance(seq, int) and not isinstance(seq, bool) and seq > self.after:
                self.after = seq
                found.append((seq, str(event.get("type") or "event"), line))
        return found


async def follow(
    path: Path,
    after: int,
    running: Callable[[], bool],
    wait: Callable[[float], Awaitable[None]],
    status: Callable[[], str],
) -> AsyncIterator[bytes]:
    """The SSE stream of a log: each event after `after`, then `event: end` once `running()`
    is false and the log is read to its end. `wait(timeout)` returns at the run's next event
    or after the timeout."""
    follower = LogFollower(path, after)
    idle = 0.0
    while True:
        events = follower.read()
        for seq, kind, line in events:
            yield sse(seq, kind, line)
        if events:
            idle = 0.0
            continue
        if not running():
            while rest := follower.read():  # what it wrote as it ended
                for seq, kind, line in rest:
                    yield sse(seq, kind, line)
            yield sse(None, "end", json.dumps({"status": status(), "last": follower.after}).encode())
            return
        await wait(POLL_S)
        idle += POLL_S
        if idle >= PING_S:
            idle = 0.0
            yield b": ping\n\n"
