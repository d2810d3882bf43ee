"""A remote A2A agent, through the official `a2a-sdk` client (imported only here, and only when
a card is read or a message sent): its agent card, and one message sent to it with the result
mapped onto the tool result protocol.

A message is streamed when the card says the agent streams (`SendStreamingMessage`), else sent
at once (`SendMessage`); each status update the agent streams is passed to `progress`. The
result is the text of the task's artifacts (or of the agent's reply message, or of its last
status message), framed as data in a block naming the agent (flowrun/foreign_text.py); a task
that ends `input-required` is a partial result that carries its question and the ids to answer
it with; failed, rejected, canceled and auth-required tasks, HTTP and network errors, an
invalid card and the timeout are error results that name the URL and say what to do."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from flowrun.foreign_text import frame
from flowrun.types import ToolResult

if TYPE_CHECKING:
    from a2a.types import AgentCard, Message, StreamResponse, Task

MAX_TEXT_CHARS = 100_000  # what the model reads of one result
DETAIL_CHARS = 300  # of an error the SDK gives, in the line the model reads
CARD_PATH = "/.well-known/agent-card.json"

Progress = Callable[[str, str], None]  # (task state, the agent's status text)


class CardUnavailable(Exception):
    """The agent card could not be read (network, HTTP status, not a card)."""


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    examples: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CardInfo:
    """What flowrun uses of an agent card: it describes the tool, and says whether to stream."""

    name: str
    description: str
    streaming: bool
    skills: tuple[Skill, ...] = ()
    version: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "description": self.description,
            "streaming": self.streaming,
            "version": self.version,
            "skills": [
                {"name": s.name, "description": s.description, "examples": list(s.examples)}
                for s in self.skills
            ],
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, object]) -> CardInfo:
        skills = raw.get("skills")
        found: list[Skill] = []
        for s in skills if isinstance(skills, list) else []:
            if isinstance(s, dict):
                examples = s.get("examples")
                found.append(
                    Skill(
                        str(s.get("name", "")),
                        str(s.get("description", "")),
                        tuple(str(e) for e in examples) if isinstance(examples, list) else (),
                    )
                )
        return cls(
            str(raw.get("name", "")),
            str(raw.get("description", "")),
            bool(raw.get("streaming")),
            tuple(found),
            str(raw.get("version", "")),
        )


@dataclass(frozen=True, slots=True)
class Target:
    """Where and how to reach one agent: its base URL (the card is below it), the request
    headers (already expanded: they may hold secrets, never recorded) and the time one call may
    take."""

    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 300.0
    card_path: str = CARD_PATH
    shown: str = ""  # the URL as messages name it (as declared: its variables unread)
    name: str = ""  # the agent's declared name

    @property
    def where(self) -> str:
        return self.shown or self.url

    @property
    def source(self) -> str:
        """Who its answers come from, as the block that frames them names it."""
        return f"A2A agent '{self.name}' at {self.where}" if self.name else f"A2A agent at {self.where}"


def _info(card: AgentCard) -> CardInfo:
    skills = tuple(Skill(s.name or s.id, s.description, tuple(s.examples)) for s in card.skills)
    return CardInfo(card.name, card.description, bool(card.capabilities.streaming), skills, card.version)


def _short(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 3] + "..."


CARD_FRESH_S = 300.0  # a card read this long ago is used again (an agent redeployed is read anew after)
_CARDS: dict[tuple[str, str, str], tuple[float, AgentCard]] = {}


def _card_key(target: Target) -> tuple[str, str, str]:
    """The card's URL and a digest of the headers it was read with (they may hold secrets, and
    another token may see another card)."""
    headers = repr(sorted(target.headers.items())).encode()
    return target.url, target.card_path, hashlib.sha256(headers).hexdigest()


async def _card(http: object, target: Target, fresh: bool = False) -> AgentCard:
    """The agent's card, read at most once every CARD_FRESH_S a process: the run's description
    of its tools and every call after it use the card that read got (a call once cost a GET of
    the card before its message)."""
    import httpx
    from a2a.client import A2ACardResolver, AgentCardResolutionError

    key = _card_key(target)
    kept = _CARDS.get(key)
    if kept is not None and not fresh and time.monotonic() - kept[0] < CARD_FRESH_S:
        return kept[1]
    assert isinstance(http, httpx.AsyncClient)
    resolver = A2ACardResolver(http, target.url, target.card_path)
    try:
        card = await resolver.get_agent_card()
    except AgentCardResolutionError as e:
        raise CardUnavailable(_short(e)) from None
    except ValueError as e:  # a card that is JSON but not a card (protobuf's ParseError)
        raise CardUnavailable(f"not an agent card: {_short(e)}") from None
    _CARDS[key] = (time.monotonic(), card)
    return card


def _http(target: Target) -> object:
    import importlib.util

    import httpx

    if importlib.util.find_spec("a2a") is None:
        raise CardUnavailable("the a2a-sdk package is not installed (pip install 'flowrun[a2a]')")

    return httpx.AsyncClient(headers=dict(target.headers), timeout=target.timeout_s)


async def fetch_card(target: Target, fresh: bool = False) -> CardInfo:
    """The agent's card (`fresh`: read now, whatever this process read before); CardUnavailable
    says why there is none."""
    import httpx

    client = _http(target)
    assert isinstance(client, httpx.AsyncClient)
    async with client:
        try:
            async with asyncio.timeout(target.timeout_s):
                return _info(await _card(client, target, fresh))
        except TimeoutError:
            raise CardUnavailable(f"no answer in {target.timeout_s:g} s") from None


def card_url(target: Target) -> str:
    return target.where.rstrip("/") + "/" + target.card_path.lstrip("/")


@dataclass
class _Outcome:
    """What the agent answered so far: a reply message, or the task as its updates built it."""

    message: Message | None = None
    task: Task | None = None
    artifacts: dict[str, tuple[str, str]] = field(default_factory=dict)  # id -> (name, text)


def _text(parts: object) -> str:
    from a2a.helpers import get_text_parts

    return "\n".join(get_text_parts(parts))  # type: ignore[arg-type]  # a repeated Part field


def _fold(outcome: _Outcome, response: StreamResponse, progress: Progress) -> None:
    from a2a.types import Task, TaskState

    kind = response.WhichOneof("payload")
    if kind in ("status_update", "artifact_update") and outcome.task is None:
        # an answer to a question goes on in a task the stream does not send again
        update = response.status_update if kind == "status_update" else response.artifact_update
        outcome.task = Task(id=update.task_id, context_id=update.context_id)
    if kind == "message":
        outcome.message = response.message
    elif kind == "task":
        outcome.task = response.task
        for artifact in response.task.artifacts:
            outcome.artifacts[artifact.artifact_id] = (artifact.name, _text(artifact.parts))
    elif kind == "status_update" and outcome.task is not None:  # (always, as above: for mypy)
        status = response.status_update.status
        outcome.task.status.CopyFrom(status)
        state = TaskState.Name(status.state).removeprefix("TASK_STATE_").lower().replace("_", "-")
        note = _text(status.message.parts) if status.HasField("message") else ""
        progress(state, note)
    elif kind == "artifact_update":
        artifact = response.artifact_update.artifact
        name, before = outcome.artifacts.get(artifact.artifact_id, (artifact.name, ""))
        text = _text(artifact.parts)
        joined = before + text if response.artifact_update.append else text
        outcome.artifacts[artifact.artifact_id] = (name or artifact.name, joined)


def _said(text: str, target: Target) -> str:
    """The remote agent's words as the model reads them: at most MAX_TEXT_CHARS, framed as data
    naming the agent (flowrun/foreign_text.py), a note outside the block when cut."""
    if len(text) <= MAX_TEXT_CHARS:
        return frame(text, target.source)
    return frame(text[:MAX_TEXT_CHARS], target.source) + f"\n[cut: the answer has {len(text)} characters]"


def _result(outcome: _Outcome, target: Target) -> ToolResult:
    from a2a.types import TaskState

    if outcome.message is not None and outcome.task is None:
        m = outcome.message
        return ToolResult.ok(_said(_text(m.parts), target), context_id=m.context_id, state="message")
    task = outcome.task
    if task is None:
        return ToolResult.fail(
            "TOOL_ERROR", f"A2A agent at {target.where} answered with neither a task nor a message"
        )
    state = task.status.state
    name = TaskState.Name(state).removeprefix("TASK_STATE_").lower().replace("_", "-")
    note = _text(task.status.message.parts) if task.status.HasField("message") else ""
    artifacts = [{"name": n, "text": t} for n, t in outcome.artifacts.values()]
    ids = {"task_id": task.id, "context_id": task.context_id, "state": name}
    if state == TaskState.TASK_STATE_COMPLETED:
        body = "\n\n".join(a["text"] for a in artifacts if a["text"]) or note
        text = _said(body, target) if body else "(the task completed with no text)"
        return ToolResult.ok(text, artifacts=artifacts, **ids)
    if state == TaskState.TASK_STATE_INPUT_REQUIRED:
        text = (
            "the remote agent needs more input before it can go on: "
            f"{_said(note, target) if note else '(no question given)'}\n"
            f"Answer it by calling this tool again with the answer as `message` and "
            f"task_id: {task.id}"
        )
        return ToolResult.partial(text, question=note, artifacts=artifacts, **ids)
    reason = f"; it said:\n{_said(note, target)}" if note else ""  # (after the hint: it is the agent's)
    if state == TaskState.TASK_STATE_AUTH_REQUIRED:
        message = f"A2A agent at {target.where} requires authentication"
        hint = "set the agent's `headers:` (e.g. Authorization: Bearer ${TOKEN})"
        return ToolResult.fail("ACCESS_DENIED", f"{message} ({hint}){reason}", **ids)
    message = f"A2A agent at {target.where}: the task ended {name}"
    hint = "the remote agent could not do it; rephrase the message or do without it"
    return ToolResult.fail("TOOL_ERROR", f"{message} ({hint}){reason}", artifacts=artifacts, **ids)


async def send(
    target: Target,
    text: str,
    progress: Progress,
    task_id: str | None = None,
    context_id: str | None = None,
) -> ToolResult:
    """Send `text` to the agent (in task `task_id` when it answers a question) and wait for the
    answer; never raises for what the agent or the network does."""
    started = time.monotonic()
    try:
        async with asyncio.timeout(target.timeout_s):
            result = await _exchange(target, text, progress, task_id, context_id)
    except TimeoutError:
        result = ToolResult.fail(
            "TIMEOUT",
            f"A2A agent at {target.where} did not answer in {target.timeout_s:g} s "
            "(raise the agent's `timeout_s`, or ask for less)",
        )
    except CardUnavailable as e:
        result = ToolResult.fail(
            "UNAVAILABLE",
            f"A2A agent at {target.where}: its card ({card_url(target)}) could not be read: {e} "
            "(check that the agent runs; `flowrun validate --connect` checks it)",
        )
    except Exception as e:
        result = _failure(target, e)
    result.stats.setdefault("time_ms", int((time.monotonic() - started) * 1000))
    return result


def _failure(target: Target, error: Exception) -> ToolResult:
    from a2a.client import A2AClientTimeoutError

    if isinstance(error, A2AClientTimeoutError):
        return ToolResult.fail(
            "TIMEOUT",
            f"A2A agent at {target.where} did not answer in {target.timeout_s:g} s (raise `timeout_s`)",
        )
    detail = _short(error)
    if "401" in detail or "403" in detail:
        hint = "the agent refused the credentials: check the `headers:` and the variables they name"
    else:
        hint = "check that the agent runs and speaks A2A 1.x at this URL"
    return ToolResult.fail("UNAVAILABLE", f"A2A agent at {target.where}: {detail} ({hint})")


async def _exchange(
    target: Target, text: str, progress: Progress, task_id: str | None, context_id: str | None
) -> ToolResult:
    import httpx
    from a2a.client import ClientConfig, ClientFactory
    from a2a.helpers import new_text_message
    from a2a.types import Role, SendMessageRequest

    client = _http(target)
    assert isinstance(client, httpx.AsyncClient)
    async with client:
        card = await _card(client, target)
        a2a = ClientFactory(ClientConfig(httpx_client=client, streaming=True)).create(card)
        message = new_text_message(text, role=Role.ROLE_USER, task_id=task_id, context_id=context_id)
        outcome = _Outcome()
        async for response in a2a.send_message(SendMessageRequest(message=message)):
            _fold(outcome, response, progress)
        return _result(outcome, target)
