"""Remote A2A agents as tools: an agent's tool entry `NAME` for an agent declared in the
workflow's `a2a_agents:`, or declared in the entry itself (`- NAME: {a2a: {url: ...}}`). The
model calls the tool `NAME` with `{message, task_id?}`.

The tool is described from the agent's card (its words framed as data, as its answers are:
flowrun/foreign_text.py), read once per run when the first agent that lists
it is about to call its model (`prepare`), and recorded (`a2a_card`): a resume and a replay
describe it from the log, and a replay never reads the card. A card that cannot be read leaves
the tool described from its declaration; its calls then say why they fail. A call is an effect:
`tool_intent` before it, and a resume or replay (`flowrun test` too) gives the recorded result
instead of sending the message again. Streamed status updates are `tool_progress` events."""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass, field

from flowrun.events import A2aCardEvent, Event, ToolProgressEvent
from flowrun.foreign_text import frame
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.ecosystem.a2a_config import resolved
from flowrun.manifest.ecosystem.a2a_refs import a2a_ref, check_entry
from flowrun.manifest.kinds import EntryRef
from flowrun.manifest.project import Project
from flowrun.manifest.specs import A2aAgentSpec
from flowrun.runtime.durable.ledger import KindRecord, Ledger
from flowrun.runtime.loop.contracts import (
    AgentInstance,
    BindRequest,
    BoundTool,
    Invocation,
    RunServices,
    ToolKind,
)
from flowrun.runtime.loop.prompt_version import frames_foreign_text
from flowrun.tools.remote.a2a_client import CardInfo, CardUnavailable, Target, card_url, fetch_card, send
from flowrun.types import ToolResult, ToolSpec

CALL_GRACE_S = 5.0  # the runtime's own deadline, past the agent's timeout_s
PARAMETERS: dict[str, object] = {
    "type": "object",
    "properties": {
        "message": {
            "type": "string",
            "description": "What to ask the remote agent, as one self-contained request in plain language "
            "(it does not see your conversation).",
        },
        "task_id": {
            "type": "string",
            "description": "Only to answer a question the remote agent asked (a result with state "
            "input-required): that result's task_id.",
        },
    },
    "required": ["message"],
    "additionalProperties": False,
}


@dataclass(frozen=True, slots=True)
class Pending:
    """A placeholder: the tool is described once its card is read."""

    name: str


@dataclass(frozen=True, slots=True)
class Remote:
    name: str


def target_of(name: str, spec: A2aAgentSpec) -> Target:
    """How to reach a declared agent now (its variables read); KeyError names an unset one."""
    url, headers = resolved(spec)
    return Target(url, headers, spec.timeout_s, spec.card_path, shown=spec.url, name=name)


def describe(name: str, spec: A2aAgentSpec, card: CardInfo | None, framed: bool) -> str:
    """What the model reads about the tool: the declared description or the card's, its skills
    (the card's words framed as data: the remote agent is not the workflow's author; `framed`
    false only in a run recorded before flowrun framed them)."""
    if card is None:
        return spec.description or f"The remote A2A agent '{name}' ({spec.url})."
    lines = [spec.description or f"The remote A2A agent '{name}'."]
    said = [card.description] if card.description and not spec.description else []
    if card.skills:
        said.append("Its skills:")
        for skill in card.skills:
            example = f" (e.g. {skill.examples[0]!r})" if skill.examples else ""
            said.append(f"- {skill.name}: {skill.description}{example}".rstrip(": "))
    if said:
        text = "\n".join(said)
        lines.append(frame(text, f"the card of A2A agent '{name}' ({spec.url})") if framed else text)
    lines.append("It is a remote agent: send it one self-contained request as `message`; it answers in text.")
    return "\n".join(lines)


class RecordedCards(KindRecord):
    """The A2A agents' cards the recording read, by agent name: a resume and a replay describe
    the tool as the recording did, and a replay reads no card."""

    reads = (A2aCardEvent,)

    def __init__(self, ledger: Ledger | None = None) -> None:
        super().__init__(ledger)
        self.cards: dict[str, dict[str, object]] = {}

    def add(self, event: Event) -> None:
        if isinstance(event, A2aCardEvent):
            self.cards.setdefault(event.name, event.card)


@dataclass
class Cards:
    """The cards of one run, each read at most once."""

    run: RunServices
    found: dict[str, CardInfo | None] = field(default_factory=dict)
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    async def card(self, name: str) -> CardInfo | None:
        async with self.locks.setdefault(name, asyncio.Lock()):
            if name not in self.found:
                self.found[name] = await self._read(name)
            return self.found[name]

    async def _read(self, name: str) -> CardInfo | None:
        recording = self.run.recorded(RecordedCards)
        recorded = recording.cards.get(name)
        if recorded is not None:
            return CardInfo.from_dict(recorded)
        if recording.replaying:
            return None  # a replay reaches no network: described as the recording was without one
        spec = self.run.project.a2a_agents[name].spec
        try:
            card = await fetch_card(target_of(name, spec))
        except (KeyError, CardUnavailable):
            return None  # the calls say why
        self.run.emit(A2aCardEvent(name=name, url=spec.url, card=card.to_dict()))
        return card


_CARDS: weakref.WeakKeyDictionary[RunServices, Cards] = weakref.WeakKeyDictionary()


def cards_of(run: RunServices) -> Cards:
    found = _CARDS.get(run)
    if found is None:
        found = _CARDS[run] = Cards(run)
    return found


class A2aKind(ToolKind):
    name = "a2a"
    implementation = None  # agents are declared in the workflow's `a2a_agents:`, not tools.d
    records = (RecordedCards,)

    def claims(self, name: str, project: Project) -> bool:
        return a2a_ref(name, project)

    def check_entry(self, entry: EntryRef) -> list[Diagnostic]:
        return check_entry(entry.src, entry.index, entry.name, entry.config)

    def bind(self, request: BindRequest) -> list[BoundTool]:
        spec = ToolSpec(request.name, "", dict(PARAMETERS))
        return [BoundTool(request.name, spec, self, target=Pending(request.name), foreign_text=True)]

    async def prepare(self, inst: AgentInstance, run: RunServices) -> bool:
        """Describe the agent's A2A tools from their cards; True when something changed."""
        if not any(isinstance(b.target, Pending) and b.kind is self for b in inst.tools.values()):
            return False
        cards = cards_of(run)
        tools: dict[str, BoundTool] = {}
        for key, bound in inst.tools.items():
            if isinstance(bound.target, Pending) and bound.kind is self:
                name = bound.target.name
                spec = run.project.a2a_agents[name].spec
                card = await cards.card(name)
                bound = self._remote(bound, name, describe(name, spec, card, frames_foreign_text(run)), spec)
            tools[key] = bound
        inst.tools = tools
        return True

    def _remote(self, placeholder: BoundTool, name: str, described: str, spec: A2aAgentSpec) -> BoundTool:
        bound = BoundTool(
            placeholder.name,
            ToolSpec(placeholder.name, described, dict(PARAMETERS)),
            self,
            config=placeholder.config,
            limits={"timeout_s": spec.timeout_s + CALL_GRACE_S},
            target=Remote(name),
            foreign_text=True,  # its card and its answers are the remote agent's words
        )
        bound.approve = placeholder.approve
        bound.sandbox_layers = placeholder.sandbox_layers
        bound.idempotent = False  # a message sent is an effect: never sent twice blindly
        bound.replay = "recorded"  # the network: a replay and `flowrun test` give what it answered then
        bound.in_dry_run = "simulate"
        return bound

    async def invoke(self, bound: BoundTool, call: Invocation) -> ToolResult:
        target = bound.target
        if not isinstance(target, Remote):  # a placeholder the loop was never prepared for
            return ToolResult.fail("UNAVAILABLE", f"{bound.name} is not connected")
        spec = call.run.project.a2a_agents[target.name].spec
        try:
            where = target_of(target.name, spec)
        except KeyError as e:
            return ToolResult.fail(
                "UNAVAILABLE",
                f"A2A agent '{target.name}' ({spec.url}) names ${{{e.args[0]}}}, which is not set "
                f"(set it in the environment or a .env file, or give a default: ${{{e.args[0]}:-VALUE}})",
            )
        ctx = call.ctx

        def progress(state: str, text: str) -> None:
            ctx.services.emit(
                ToolProgressEvent(
                    agent=ctx.agent_name,
                    agent_id=ctx.agent_id,
                    call_id=ctx.call_id,
                    tool=bound.name,
                    state=state,
                    message=text,
                )
            )

        task_id = call.arguments.get("task_id")
        return await send(
            where, str(call.arguments["message"]), progress, task_id if isinstance(task_id, str) else None
        )


async def check_cards(project: Project) -> list[Diagnostic]:
    """`flowrun validate --connect`: read every declared agent's card; one diagnostic each that
    cannot be read, at its declaration."""
    names = sorted(project.a2a_agents)
    found = await asyncio.gather(*(_card_problem(name, project) for name in names))
    return [d for d in found if d is not None]


async def _card_problem(name: str, project: Project) -> Diagnostic | None:
    loaded = project.a2a_agents[name]
    spec = loaded.spec
    where = project.a2a_paths.get(name, ("a2a_agents", name))
    try:
        target = target_of(name, spec)
    except KeyError as e:
        hint = f"set {e.args[0]}, or give a default: ${{{e.args[0]}:-VALUE}}"
        return loaded.source.diag(
            where, f"A2A agent '{name}' names ${{{e.args[0]}}}, which is not set", hint, "a2a-connect"
        )
    try:
        await fetch_card(target, fresh=True)  # a check reads the card as it is now
    except CardUnavailable as e:
        message = f"A2A agent '{name}': its card ({card_url(target)}) could not be read: {e}"
        hint = "check the url (the agent's base URL), that the agent runs, and its headers"
        return loaded.source.diag(where, message, hint, "a2a-connect")
    return None


KIND = A2aKind()
