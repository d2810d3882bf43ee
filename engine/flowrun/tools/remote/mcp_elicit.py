"""MCP elicitation: a server that asks for input during a tool call (`elicitation/create`) gets
the answer of a person, asked as the calling agent's `ask_user` question (the terminal asks;
without one the run waits for `flowrun answer` like any question, and a resumed or replayed run
takes the recorded answer instead of asking again).

The SDK answers the server's request in its own receiving task; the question is asked in the
task of the tool call instead (`drive`), so a run that stops to wait stops that call. A request
goes to the oldest call in flight on the connection (the protocol does not say which call a
request belongs to). The answer: `decline`, `cancel`, or the content: a JSON object matching
the requested schema, or for a schema of one field its plain value; `accept` or an empty answer
takes the schema's defaults, and a field left out takes its default (SEP-1034); an answer that
does not match is asked again (at most ASK_ROUNDS times), then the request is cancelled."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeVar, cast

from flowrun.types import decode_json

if TYPE_CHECKING:
    from mcp.client.session import ClientRequestContext
    from mcp.types import ElicitRequestParams, ElicitResult

ASK_ROUNDS = 3
Ask = Callable[[str], Awaitable[str] | str]
T = TypeVar("T")
Content = dict[str, str | int | float | bool | list[str] | None]  # the protocol's values
Action = Literal["accept", "decline", "cancel"]


class AskStopped(Exception):
    """Asking stopped the tool call (the run waits for the answer): `error` is raised for it."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


@dataclass(slots=True)
class _Asking:
    """One tool call in flight, and the server's requests waiting for it to ask."""

    tool: str
    ask: Ask | None
    requests: asyncio.Queue[tuple[ElicitRequestParams, asyncio.Future[ElicitResult]]] = field(
        default_factory=asyncio.Queue
    )


class Elicitations:
    def __init__(self, server: str) -> None:
        self.server = server
        self._calls: list[_Asking] = []

    async def callback(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        """The SDK's elicitation callback: hand the request to the asking call and wait."""
        from mcp.types import ElicitResult

        asking = next((c for c in self._calls if c.ask is not None), None)
        if asking is None:  # no call that may ask a person is in flight
            return ElicitResult(action="decline")
        answered: asyncio.Future[ElicitResult] = asyncio.get_running_loop().create_future()
        asking.requests.put_nowait((params, answered))
        return await answered

    async def drive(self, call: Awaitable[T], tool: str, ask: Ask | None) -> T:
        """Run one tool call, asking its person each request the server makes meanwhile."""
        asking = _Asking(tool, ask)
        self._calls.append(asking)
        task = asyncio.ensure_future(call)
        try:
            while True:
                waiting = asyncio.ensure_future(asking.requests.get())
                done, _ = await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
                if task in done:
                    waiting.cancel()
                    return task.result()
                params, answered = waiting.result()
                try:
                    result = await self._answer(tool, params, ask)
                except BaseException as e:
                    answered.set_result(_result("cancel"))
                    raise AskStopped(e) from None
                answered.set_result(result)
        finally:
            self._calls.remove(asking)
            if not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task

    async def _answer(self, tool: str, params: ElicitRequestParams, ask: Ask | None) -> ElicitResult:
        if ask is None:
            return _result("decline")
        if getattr(params, "mode", "form") == "url":  # a page to open: not asked in a terminal
            return _result("decline")
        schema = dict(getattr(params, "requested_schema", None) or {})
        message = str(getattr(params, "message", "") or "")
        problem = ""
        for _ in range(ASK_ROUNDS):
            try:
                given = ask(question(self.server, tool, message, schema, problem))
                text = await given if inspect.isawaitable(given) else given
            except (EOFError, TimeoutError):  # nobody answered (put off, or past the deadline)
                return _result("cancel")
            action, content, problem = parse_answer(str(text), schema)
            if not problem:
                return _result(action, content)
        return _result("cancel")


def _result(action: Action, content: Content | None = None) -> ElicitResult:
    from mcp.types import ElicitResult

    return ElicitResult(action=action, content=content)


def question(server: str, tool: str, message: str, schema: Mapping[str, object], problem: str = "") -> str:
    """What the person reads: the server's message, the fields it wants, how to refuse."""
    props = schema.get("properties")
    fields = props if isinstance(props, dict) else {}
    lines = [f"The MCP server '{server}' asks (during {tool}): {message}"]
    if problem:
        lines.append(f"That answer did not fit: {problem}.")
    defaults = " (accept: the defaults)" if _defaults(fields) else ""
    if len(fields) == 1:
        name, spec = next(iter(fields.items()))
        lines.append(f"Answer with the {name} ({_kind(spec)}), or decline, or cancel{defaults}.")
    elif fields:
        listed = ", ".join(f"{name} ({_kind(spec)})" for name, spec in fields.items())
        lines.append(f"Answer with a JSON object of: {listed}; or decline, or cancel{defaults}.")
    else:
        lines.append("Answer accept, decline or cancel.")
    return "\n".join(lines)


def _kind(spec: object) -> str:
    if not isinstance(spec, dict):
        return "text"
    if isinstance(spec.get("enum"), list):
        return "one of " + ", ".join(map(str, spec["enum"]))
    kind = str(spec.get("type", "string"))
    kind += f", default {json.dumps(spec['default'])}" if "default" in spec else ""
    return kind + (f": {spec['description']}" if spec.get("description") else "")


def _defaults(fields: Mapping[str, object]) -> dict[str, object]:
    """The fields' declared defaults (what a person who leaves a field out gets)."""
    return {
        name: spec["default"] for name, spec in fields.items() if isinstance(spec, dict) and "default" in spec
    }


def parse_answer(text: str, schema: Mapping[str, object]) -> tuple[Action, Content | None, str]:
    """(action, content, problem): a refusal, or content that matches the schema, or what is
    wrong with the answer (then it is asked again)."""
    answer = text.strip()
    word = answer.lower()
    if word == "decline":
        return "decline", None, ""
    if word == "cancel":
        return "cancel", None, ""
    props = schema.get("properties")
    fields = props if isinstance(props, dict) else {}
    if not fields:
        return ("accept", {}, "") if word in ("accept", "yes", "ok", "") else ("decline", None, "")
    content: object
    if word in ("accept", ""):  # the defaults, as they are
        content = {}
    elif len(fields) == 1 and not answer.startswith("{"):
        name, spec = next(iter(fields.items()))
        content = {name: _plain(answer, spec)}
    else:
        try:
            content = decode_json(answer)
        except json.JSONDecodeError as e:
            return "accept", None, f"not a JSON object ({e.msg})"
    if not isinstance(content, dict):
        return "accept", None, "not a JSON object"
    from jsonschema import Draft202012Validator

    given = cast(Content, _defaults(fields) | content)
    errors = [e.message for e in Draft202012Validator(dict(schema)).iter_errors(given)]
    if errors:
        return "accept", None, "; ".join(errors[:3])
    return "accept", given, ""


def _plain(answer: str, spec: object) -> object:
    """A one-field answer as the field's type (a number, yes/no), else the text."""
    kind = spec.get("type") if isinstance(spec, dict) else "string"
    if kind == "boolean" and answer.lower() in ("yes", "true", "y", "no", "false", "n"):
        return answer.lower() in ("yes", "true", "y")
    if kind in ("integer", "number"):
        with contextlib.suppress(ValueError):
            return int(answer) if kind == "integer" else float(answer)
    return answer
