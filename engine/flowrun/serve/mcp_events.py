"""The event store of `flowrun serve mcp --http`: what the server sent on each SSE stream, kept
in memory (bounded) so that a client whose connection broke during a long run reconnects with
`Last-Event-ID` and gets what it missed, the result included (the `mcp` SDK's `EventStore`)."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from typing import TYPE_CHECKING

from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId

if TYPE_CHECKING:
    from mcp.types import JSONRPCMessage

MAX_EVENTS = 20_000  # over all streams; the oldest go first


class MemoryEventStore(EventStore):
    """Events by id, in the order they were stored; each remembers its stream."""

    def __init__(self, max_events: int = MAX_EVENTS) -> None:
        self.max_events = max_events
        self._events: OrderedDict[EventId, tuple[StreamId, JSONRPCMessage | None]] = OrderedDict()
        self._ids = itertools.count(1)

    async def store_event(self, stream_id: StreamId, message: JSONRPCMessage | None) -> EventId:
        event_id = str(next(self._ids))
        self._events[event_id] = (stream_id, message)
        while len(self._events) > self.max_events:
            self._events.popitem(last=False)
        return event_id

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        found = self._events.get(last_event_id)
        if found is None:
            return None
        stream_id = found[0]
        after = False
        for event_id, (stream, message) in list(self._events.items()):
            if after and stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
            after = after or event_id == last_event_id
        return stream_id
