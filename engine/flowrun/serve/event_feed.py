"""A run's event log as server-sent events: the log is replayed, then followed as it grows, by
its byte position (never by re-reading: nothing is lost or repeated), until the run is no
longer running. Only whole lines are sent: a line being written (or torn by a crash) waits
until its newline arrives. Each event is `id: SEQ`, `event: TYPE`, `data: LINE`; a client that
reconnects with `Last-Event-ID: SEQ` (or `?after=SEQ`) gets what came after."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from flowrun.pinned import open_regular

READ_BYTES = 1 << 20  # read at most this much per step: a long log is replayed in pieces
POLL_S = 0.25  # how often a log written by another process is looked at
PING_S = 15.0  # a comment line this often while nothing happens (proxies keep the stream)
# how EventLog begins each line: seq and type read without decoding the whole line (many
# clients following one run each read every line); any other line is decoded
HEAD = re.compile(rb'\{"seq": (\d+), "t": [0-9.e+-]+, "type": "([a-z_]+)"')


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
            with open_regular(self.path, pin=False) as f:
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
            head = _head(line)
            if head is not None and head[0] > self.after:
                self.after = head[0]
                found.append((head[0], head[1], line))
        return found


def _head(line: bytes) -> tuple[int, str] | None:
    """(seq, type) of a log line; None for a line that is not an event (damaged)."""
    match = HEAD.match(line)
    if match is not None:
        return int(match[1]), match[2].decode()
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return None
    seq = event.get("seq") if isinstance(event, dict) else None
    if not isinstance(seq, int) or isinstance(seq, bool):
        return None
    return seq, str(event.get("type") or "event")


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
        if events:  # one write for what one read found
            yield b"".join(sse(seq, kind, line) for seq, kind, line in events)
            idle = 0.0
            continue
        if not running():
            while rest := follower.read():  # what it wrote as it ended
                yield b"".join(sse(seq, kind, line) for seq, kind, line in rest)
            yield sse(None, "end", json.dumps({"status": status(), "last": follower.after}).encode())
            return
        await wait(POLL_S)
        idle += POLL_S
        if idle >= PING_S:
            idle = 0.0
            yield b": ping\n\n"
