"""One guardrail's verdict on one subject (an agent's task, its final answer, a tool call's
arguments): a regex that must (not) match, a JSON Schema, a Python function by import path. A
judge agent's verdict needs the run: runtime/guardrails/judge.py."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast

from flowrun.errors import ManifestError
from flowrun.manifest.guardrails.specs import PythonGuardrail, RegexGuardrail, SchemaGuardrail
from flowrun.runtime.loop.structured import parse_answer, schema_problems

Where = Literal["input", "output", "tool"]
PYTHON_TIMEOUT_S = 60.0  # as a Python hook's default
REASON_CHARS = 1000  # a reason the model reads: never a flood


@dataclass(frozen=True, slots=True)
class Subject:
    """What a guardrail checks: the text, and the value a schema checks (the parsed answer,
    the workflow's inputs or a sub-agent's call arguments, a tool call's arguments)."""

    where: Where
    agent: str
    text: str
    value: object = None
    tool: str | None = None


@dataclass(frozen=True, slots=True)
class Verdict:
    passed: bool
    reason: str = ""
    judge_id: str | None = None  # the judge agent's instance, when one judged


def regex_verdict(guard: RegexGuardrail, subject: Subject) -> Verdict:
    text = subject.text
    if guard.argument is not None and isinstance(subject.value, dict):
        found = cast(dict[str, object], subject.value).get(guard.argument)
        text = "" if found is None else found if isinstance(found, str) else json.dumps(found)
    flags = re.IGNORECASE if guard.ignore_case else 0
    where = f"argument `{guard.argument}`" if guard.argument is not None else _what(subject)
    if guard.match is not None and not re.search(guard.match, text, flags):
        return Verdict(False, f"the {where} does not match /{guard.match}/")
    if guard.forbid is not None and (hit := re.search(guard.forbid, text, flags)):
        return Verdict(False, f"the {where} matches the forbidden /{guard.forbid}/ ({_quoted(hit.group(0))})")
    return Verdict(True)


def schema_verdict(guard: SchemaGuardrail, subject: Subject) -> Verdict:
    value = subject.value
    if subject.where == "output" and value is None:
        value, problem = parse_answer(subject.text)
        if problem is not None:
            return Verdict(False, problem)
    problem = schema_problems(guard.schema_, value)
    if problem is not None:
        return Verdict(False, f"the {_what(subject)} does not match the guardrail's JSON Schema: {problem}")
    return Verdict(True)


async def python_verdict(guard: PythonGuardrail, subject: Subject, root: Path) -> Verdict:
    """Call the function with the subject as a dict; a function that cannot be imported, raises,
    times out or answers something else is a failed check (a guardrail fails closed)."""
    from flowrun.runtime.tool_kinds.python import import_function

    try:
        func = cast(Callable[[dict[str, object]], object], import_function(guard.python, root))
    except ManifestError as e:
        return Verdict(False, f"the check cannot run: {e.message}")
    given: dict[str, object] = {
        "where": subject.where,
        "agent": subject.agent,
        "text": subject.text,
        "value": subject.value,
        "tool": subject.tool,
    }
    try:
        if inspect.iscoroutinefunction(func):
            answer = await asyncio.wait_for(cast(Awaitable[object], func(given)), PYTHON_TIMEOUT_S)
        else:
            answer = await asyncio.wait_for(asyncio.to_thread(func, given), PYTHON_TIMEOUT_S)
    except TimeoutError:
        return Verdict(False, f"the check {guard.python} did not answer within {PYTHON_TIMEOUT_S:g} s")
    except Exception as e:  # user code: its crash is a failed check, never the run's
        return Verdict(False, f"the check {guard.python} raised {type(e).__name__}: {e}")
    return read_verdict(answer, guard.python)


def read_verdict(answer: object, source: str) -> Verdict:
    """A verdict as a function or a judge gives it: a bool, (passed, reason), or {pass, reason}."""
    if isinstance(answer, bool):
        return Verdict(answer, "" if answer else f"{source} said no")
    if isinstance(answer, tuple) and len(answer) == 2 and isinstance(answer[0], bool):
        return Verdict(answer[0], _clip(str(answer[1])))
    if isinstance(answer, dict):
        raw = cast(dict[str, object], answer)
        passed = raw.get("pass", raw.get("passed"))
        if isinstance(passed, bool):
            return Verdict(passed, _clip(str(raw.get("reason") or "")))
    shown = _quoted(repr(answer))
    wanted = "return a bool, (bool, reason) or {pass, reason}"
    return Verdict(False, f"{source} gave no verdict ({shown}): {wanted}")


def _what(subject: Subject) -> str:
    return {"input": "task", "output": "answer", "tool": "call's arguments"}[subject.where]


def _clip(text: str) -> str:
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


def _quoted(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")
