"""A2A sample agents written with the `a2a-sdk` server classes, served over JSON-RPC on
127.0.0.1 (uvicorn in a thread): an answering agent (one reply message), a streaming one (a task
with status updates and an artifact), one that fails its task, one that asks for more input, and
one that never finishes.
Every request's path and headers are kept, so a test counts the calls and sees the headers."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill


class Answering(AgentExecutor):
    """Answers with one message: `answer: TEXT`."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        await event_queue.enqueue_event(new_text_message(f"answer: {text}", context_id=context.context_id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


class Streaming(AgentExecutor):
    """A task: two `working` updates, an artifact with the translation, then completed."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        for step in ("reading the text", "translating"):
            await updater.start_work(updater.new_agent_message([new_text_part(step)]))
        text = context.get_user_input()
        await updater.add_artifact([new_text_part(f"translated: {text.upper()}")], name="translation")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


class Failing(AgentExecutor):
    """A task that fails with a reason."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        await updater.failed(updater.new_agent_message([new_text_part("the index is offline")]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


class Asking(AgentExecutor):
    """Asks which city first; with an answer in the same task, completes."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        if context.current_task is None:
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if context.current_task is None:
            await updater.requires_input(updater.new_agent_message([new_text_part("Which city?")]))
            return
        answer = context.get_user_input()
        await updater.add_artifact([new_text_part(f"weather in {answer}: sunny")], name="weather")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


class Silent(AgentExecutor):
    """Starts a task, then never says another word (until the call is cancelled)."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        await asyncio.Event().wait()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


AGENTS: dict[str, tuple[type[AgentExecutor], bool, str]] = {
    "answer": (Answering, False, "Answers any question in one message."),
    "stream": (Streaming, True, "Translates a text, reporting its progress."),
    "fail": (Failing, False, "Searches an index that is offline."),
    "ask": (Asking, True, "Tells the weather of a city it asks for."),
    "silent": (Silent, True, "Thinks for ever."),
}


def card(kind: str, url: str) -> AgentCard:
    _, streaming, description = AGENTS[kind]
    return AgentCard(
        name=f"{kind}-agent",
        description=description,
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id=f"{kind}-skill",
                name=f"{kind} skill",
                description=f"The {kind} skill.",
                tags=[kind],
                examples=[f"an example for {kind}"],
            )
        ],
    )


@dataclass
class Seen:
    """What the server was asked: (method, path, headers) per request."""

    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    def posts(self, path: str) -> int:
        return sum(1 for method, p, _ in self.requests if method == "POST" and p == path)


class SampleServer:
    """All the sample agents on one port: agent KIND at `/KIND` (its card at
    `/KIND/.well-known/agent-card.json`)."""

    def __init__(self) -> None:
        import uvicorn
        from starlette.applications import Starlette

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.seen = Seen()
        routes: list[Any] = []
        for kind, (executor, _, _) in AGENTS.items():
            agent_card = card(kind, self.url(kind))
            handler = DefaultRequestHandler(
                agent_executor=executor(), task_store=InMemoryTaskStore(), agent_card=agent_card
            )
            routes += create_agent_card_routes(agent_card, card_url=f"/{kind}/.well-known/agent-card.json")
            routes += create_jsonrpc_routes(handler, rpc_url=f"/{kind}")
        app = Starlette(routes=routes)

        async def recording(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                headers = {k.decode(): v.decode() for k, v in scope["headers"]}
                self.seen.requests.append((scope["method"], scope["path"], headers))
            await app(scope, receive, send)

        # a silent agent's stream is still open at the end: stop without waiting for it
        config = uvicorn.Config(recording, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started and time.monotonic() < deadline:  # wait for readiness
            time.sleep(0.02)

    def url(self, kind: str) -> str:
        return f"http://127.0.0.1:{self.port}/{kind}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()
