"""The event store of `flowrun serve mcp --http`: what the server sent on each SSE stream, kept
in memory (bounded) so that a client whose connection broke during a long run reconnects with
`Last-Event-ID` and gets what it missed, the result included (the `mcp` SDK's `EventStore`)."""

from __future__ import annotations

import itertools
from collections import OrderedDict

import anyio
from mcp.server.streamable_http import (
    GET_STREAM_KEY,
    EventCallback,
    EventId,
    EventMessage,
    EventStore,
    StreamId,
)
from mcp.types import JSONRPCError, JSONRPCMessage, JSONRPCResponse

MAX_EVENTS = 20_000  # over all streams; the oldest go first


class MemoryEventStore(EventStore):
    """Events by id (increasing integers), in the order they were stored; each remembers its
    stream."""

    def __init__(self, max_events: int = MAX_EVENTS) -> None:
        self.max_events = max_events
        self._events: OrderedDict[EventId, tuple[StreamId, JSONRPCMessage | None]] = OrderedDict()
        self._ids = itertools.count(1)
        self._stored = anyio.Event()  # set, then replaced, on each store: wakes a waiting replay

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = str(next(self._ids))
        self._events[event_id] = (stream_id, message)
        while len(self._events) > self.max_events:
            self._events.popitem(last=False)
        self._stored.set()
        self._stored = anyio.Event()
        return event_id

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        """Send what `last_event_id`'s stream got after it. A request's stream is followed until
        its response is sent: the SDK tails the stream live only once this returns, and a message
        stored in between (the result of a run ending as its client reconnects) would reach
        neither (the resumed stream then waited forever)."""
        found = self._events.get(last_event_id)
        if found is None:
            return None
        stream_id, after = found[0], int(last_event_id)
        while True:
            stored = self._stored
            missed = self._stream_after(stream_id, after)
            if not missed and stream_id == GET_STREAM_KEY:  # never answered: caught up is enough
                return stream_id
            for event_id, message in missed:
                await send_callback(EventMessage(message, event_id))
                after = int(event_id)
                if isinstance(message, JSONRPCResponse | JSONRPCError):
                    return stream_id
            if not missed:
                await stored.wait()

    def _stream_after(self, stream_id: StreamId, after: int) -> list[tuple[EventId, JSONRPCMessage]]:
        """The messages stored on `stream_id` after the event numbered `after`, oldest first."""
        return [
            (event_id, message)
            for event_id, (stream, message) in self._events.items()
            if stream == stream_id and message is not None and int(event_id) > after
        ]
