"""`flowrun serve a2a`: workflows as A2A agents, on the a2a-sdk's JSON-RPC binding (A2A protocol
1.0: SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask).

    GET  /a2a/NAME/.well-known/agent-card.json   a workflow's agent card
    POST /a2a/NAME                                its JSON-RPC endpoint
    GET  /.well-known/agent-card.json             the root card: with one workflow, its card;
                                                  with several, one skill per workflow
    POST /                                        the root endpoint (metadata `skill` chooses)

The cards are public (they hold no run data and say how to authenticate); every other request
passes the Host and Origin check and, when the server has a token, must carry it (as `serve
http`: serve/access.py)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

from flowrun._version import __version__
from flowrun.serve.access import BearerToken, HostCheck, accepted_hosts
from flowrun.serve.served_runs import ServedRuns

if TYPE_CHECKING:
    from a2a.types import AgentCard, AgentSkill
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.types import ASGIApp

    from flowrun.api import Workflow

CARD = "/.well-known/agent-card.json"
PREFIX = "/a2a"
PROTOCOL_VERSION = "1.0"
DOCS = "https://github.com/flowrun/flowrun/blob/main/docs/how-to/a2a-server.md"
INPUT_MODES = ["text/plain", "application/json"]
OUTPUT_MODES = ["text/plain", "application/json"]


def endpoint(name: str | None) -> str:
    """A workflow's endpoint path (None: the root's)."""
    return "/" if name is None else f"{PREFIX}/{name}"


def skill_of(workflow: Workflow) -> AgentSkill:
    """The workflow as a skill: its description and how its inputs are given."""
    from a2a.types import AgentSkill

    lines = [workflow.spec.description or f"The flowrun workflow {workflow.name}."]
    if workflow.inputs:
        lines.append("Inputs (a data part with them by name; the message's text fills the one text input):")
        for name, spec in workflow.inputs.items():
            need = "required" if spec.is_required else f"default {spec.default!r}"
            choices = f", one of {spec.choices}" if spec.choices else ""
            said = f": {spec.description}" if spec.description else ""
            lines.append(f"- {name} ({spec.type}, {need}{choices}){said}")
    else:
        lines.append("It takes no inputs: any message starts it.")
    if workflow.spec.output:
        lines.append(f"Its declared output, {workflow.spec.output}, comes back as an artifact.")
    return AgentSkill(
        id=workflow.name,
        name=workflow.name,
        description="\n".join(lines),
        tags=["flowrun", "workflow"],
        input_modes=INPUT_MODES,
        output_modes=OUTPUT_MODES,
    )


def build_card(workflows: list[Workflow], name: str | None, base: str, token: bool) -> AgentCard:
    """The card of a workflow's endpoint (`name`), or of the root: with one workflow, that
    workflow's card; with several, a card with one skill per workflow whose description says
    where each one's own card is."""
    from a2a.types import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentProvider,
        HTTPAuthSecurityScheme,
        SecurityRequirement,
        SecurityScheme,
    )

    chosen = [wf for wf in workflows if name is None or wf.name == name]
    if name is None and len(chosen) == 1:
        name = chosen[0].name  # one workflow: the root is its card, its endpoint
    skills = [skill_of(wf) for wf in chosen]
    if name is not None:
        description = chosen[0].spec.description or f"The flowrun workflow {name}."
        title = name
    else:
        title = "flowrun"
        description = (
            "flowrun workflows as A2A agents. Each skill is a workflow with its own card at "
            f"{base}{PREFIX}/NAME{CARD}; this endpoint runs the one the message's metadata "
            "`skill` names."
        )
        for skill in skills:
            skill.description += f"\nIts own card: {base}{PREFIX}/{skill.id}{CARD}"
    card = AgentCard(
        name=title,
        description=description,
        supported_interfaces=[
            AgentInterface(
                url=base + endpoint(name).rstrip("/"),
                protocol_binding="JSONRPC",
                protocol_version=PROTOCOL_VERSION,
            )
        ],
        provider=AgentProvider(organization="flowrun", url=DOCS),
        version=__version__,
        documentation_url=DOCS,
        capabilities=AgentCapabilities(streaming=True, push_notifications=False, extended_agent_card=False),
        default_input_modes=INPUT_MODES,
        default_output_modes=OUTPUT_MODES,
        skills=skills,
    )
    if token:
        card.security_schemes["bearer"].CopyFrom(
            SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer"))
        )
        requirement = SecurityRequirement()
        requirement.schemes["bearer"].SetInParent()
        card.security_requirements.append(requirement)
    return card


SERVER_FAULTS = ("Unhandled exception",)  # the SDK's words for its handler's own failure


class OneLine(logging.Formatter):
    """The a2a-sdk's log records as one line each: a client's malformed request (which the SDK
    logs with its traceback) is the client's mistake, not the server's; a record that says
    the handler itself failed keeps its traceback."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        line = f"a2a: {message}"
        if record.exc_info and message.startswith(SERVER_FAULTS):
            return line + "\n" + self.formatException(record.exc_info)
        return line


def quiet_client_errors() -> None:
    """Route the a2a-sdk's log (WARNING and up) through OneLine, once per process: a client
    sending malformed JSON-RPC would otherwise fill the server's log with tracebacks."""
    logger = logging.getLogger("a2a")
    if any(isinstance(h.formatter, OneLine) for h in logger.handlers):
        return
    handler = logging.StreamHandler()
    handler.setFormatter(OneLine())
    handler.setLevel(logging.WARNING)
    logger.addHandler(handler)
    logger.propagate = False


def build_app(
    workflows: list[Workflow],
    served: Callable[[], ServedRuns],
    host: str = "127.0.0.1",
    token: str | None = None,
    allowed_hosts: tuple[str, ...] = (),
    on_start: Callable[[ServedRuns], None] | None = None,
) -> ASGIApp:
    """The ASGI app. `served` makes the server's ServedRuns once the loop runs."""
    from a2a.server.request_handlers.response_helpers import agent_card_to_dict
    from a2a.server.routes import create_jsonrpc_routes
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import BaseRoute, Route

    from flowrun.serve.a2a_handler import RunsHandler
    from flowrun.serve.deep_json import DeepJsonGuard

    holder: list[ServedRuns] = []

    def runs() -> ServedRuns:
        return holder[0]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        holder.append(served())
        if on_start is not None:
            on_start(holder[0])
        try:
            yield
        finally:
            await holder[0].close()  # each run ends cancelled: resumable after a restart

    def card_route(name: str | None) -> Callable[[Request], Awaitable[Response]]:
        async def answer(request: Request) -> Response:
            base = str(request.base_url).rstrip("/")
            card = build_card(workflows, name, base, token is not None)
            return JSONResponse(agent_card_to_dict(card), headers={"cache-control": "no-store"})

        return answer

    quiet_client_errors()
    routes: list[BaseRoute] = [Route(CARD, card_route(None), methods=["GET"])]
    routes += create_jsonrpc_routes(RunsHandler(runs, None), "/")
    for wf in workflows:
        routes.append(Route(f"{PREFIX}/{wf.name}{CARD}", card_route(wf.name), methods=["GET"]))
        routes += create_jsonrpc_routes(RunsHandler(runs, wf.name), endpoint(wf.name))
    app: ASGIApp = DeepJsonGuard(Starlette(routes=routes, lifespan=lifespan))
    if token is not None:
        app = BearerToken(app, token, public=lambda path: path.endswith(CARD))
    return HostCheck(app, accepted_hosts(host, allowed_hosts))
