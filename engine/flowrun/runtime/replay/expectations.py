"""What a `flowrun test` file expects of a replayed run, checked against the replay's events,
its run folder and its usage: one `Check` per expectation, with the YAML path of that
expectation in the test file (for file:line in reports)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from flowrun.events import Event, ModelResponseEvent, ToolCallEvent
from flowrun.manifest.specs import FileExpect, FlowTestExpect, MessageExpect, OutputExpect, ToolCallExpect
from flowrun.records import UsageRecord

YamlPath = tuple[str | int, ...]
SHOWN = 300  # characters of an output quoted in a failure


@dataclass(slots=True)
class Check:
    name: str  # e.g. "status", "tool_calls[1]", "output contains"
    ok: bool
    detail: str  # what was expected, and what was found when it failed
    parts: YamlPath = ()  # where the expectation is in the test file


@dataclass(slots=True)
class Replayed:
    """What a replay left: its status and final message, its events, folder and usage."""

    status: str
    message: str
    events: list[Event]
    run_dir: Path
    usage: UsageRecord
    declared_output: str | None


def _texts(value: str | list[str] | None) -> list[str]:
    return [] if value is None else [value] if isinstance(value, str) else list(value)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def check_all(expect: FlowTestExpect, run: Replayed) -> list[Check]:
    checks = [_status(expect, run)]
    if expect.output is not None:
        checks += _output(expect.output, run)
    if expect.message is not None:
        checks += _text_checks("message", expect.message, run.message, "the run's final message")
    checks += _tool_calls(expect, run)
    for i, name in enumerate(expect.not_called):
        made = [e for e in _calls(run) if e.tool == name]
        detail = f"{name} is never called" + (f"; it was called {len(made)} time(s)" if made else "")
        checks.append(Check(f"not_called[{i}]", not made, detail, ("expect", "not_called", i)))
    for i, entry in enumerate(expect.files):
        checks.append(_file(i, entry if isinstance(entry, FileExpect) else FileExpect(path=entry), run))
    if expect.budget is not None:
        checks += _budget(expect, run)
    return checks


def _status(expect: FlowTestExpect, run: Replayed) -> Check:
    ok = run.status == expect.status
    detail = f"status {expect.status}"
    if not ok:
        detail += f"; the run ended {run.status}" + (f": {_short(run.message)}" if run.message else "")
    return Check("status", ok, detail, ("expect", "status"))


def _output_text(output: OutputExpect, run: Replayed) -> tuple[str | None, str]:
    """(text, what it is); text None when the file is missing."""
    name = output.file or run.declared_output
    if name is None:
        return run.message, "the final answer"
    path = (run.run_dir / name).resolve()
    if not path.is_relative_to(run.run_dir.resolve()) or not path.is_file():
        return None, name
    return path.read_text(encoding="utf-8", errors="replace"), name


def _output(output: OutputExpect, run: Replayed) -> list[Check]:
    text, what = _output_text(output, run)
    if text is None:
        return [Check("output", False, f"{what} was not written", ("expect", "output"))]
    return _text_checks("output", output, text, what)


def _text_checks(key: str, spec: MessageExpect, text: str, what: str) -> list[Check]:
    """`contains`, `not_contains` and `matches` of `expect.KEY` against `text`."""
    where: YamlPath = ("expect", key)
    checks = [
        Check(
            f"{key} contains",
            needle in text,
            f"{what} contains {needle!r}" + ("" if needle in text else f"; it is: {_short(text)!r}"),
            (*where, "contains"),
        )
        for needle in _texts(spec.contains)
    ]
    checks += [
        Check(
            f"{key} not_contains",
            needle not in text,
            f"{what} does not contain {needle!r}",
            (*where, "not_contains"),
        )
        for needle in _texts(spec.not_contains)
    ]
    if spec.matches is not None:
        try:
            found = re.search(spec.matches, text, re.MULTILINE) is not None
        except re.error as e:
            bad = f"invalid regex /{spec.matches}/: {e}"
            return [*checks, Check(f"{key} matches", False, bad, (*where, "matches"))]
        detail = f"{what} matches /{spec.matches}/" + ("" if found else f"; it is: {_short(text)!r}")
        checks.append(Check(f"{key} matches", found, detail, (*where, "matches")))
    return checks


def _calls(run: Replayed) -> Iterator[ToolCallEvent]:
    return (e for e in run.events if isinstance(e, ToolCallEvent))


def subset(expected: object, actual: object) -> bool:
    """`expected` is found in `actual`: keys of a mapping recursively, other values equal."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and subset(v, actual[k]) for k, v in expected.items()
        )
    return bool(expected == actual)


def _matches(want: ToolCallExpect, call: ToolCallEvent) -> bool:
    return (
        call.tool == want.tool
        and (want.agent is None or call.agent == want.agent)
        and subset(want.arguments, call.arguments)
    )


def _describe(want: ToolCallExpect) -> str:
    who = f" by {want.agent}" if want.agent else ""
    args = f" with {want.arguments}" if want.arguments else ""
    return f"{want.tool} is called{who}{args}"


def _tool_calls(expect: FlowTestExpect, run: Replayed) -> list[Check]:
    calls = list(_calls(run))
    used: set[int] = set()
    after = -1
    checks = []
    for i, want in enumerate(expect.tool_calls):
        start = after + 1 if expect.ordered else 0
        index = next(
            (k for k in range(start, len(calls)) if k not in used and _matches(want, calls[k])), None
        )
        detail = _describe(want) + (" (after the one before)" if expect.ordered and i else "")
        if index is None:
            same = [c.arguments for c in calls if c.tool == want.tool]
            detail += (
                f"; calls of {want.tool}: {_short(str(same))}" if same else f"; {want.tool} was never called"
            )
        else:
            used.add(index)
            after = index
        checks.append(Check(f"tool_calls[{i}]", index is not None, detail, ("expect", "tool_calls", i)))
    return checks


def _file(i: int, want: FileExpect, run: Replayed) -> Check:
    where: YamlPath = ("expect", "files", i)
    path = (run.run_dir / want.path).resolve()
    if not path.is_relative_to(run.run_dir.resolve()) or not path.is_file():
        return Check(f"files[{i}]", False, f"{want.path} exists; it was not written", where)
    text = path.read_text(encoding="utf-8", errors="replace")
    missing = [n for n in _texts(want.contains) if n not in text]
    detail = f"{want.path} exists" + "".join(f" and contains {n!r}" for n in _texts(want.contains))
    if missing:
        detail += f"; it is: {_short(text)!r}"
    return Check(f"files[{i}]", not missing, detail, where)


def _budget(expect: FlowTestExpect, run: Replayed) -> list[Check]:
    budget = expect.budget
    assert budget is not None
    where: YamlPath = ("expect", "budget")
    steps = sum(isinstance(e, ModelResponseEvent) for e in run.events)
    cost = run.usage.get("total_cost_usd")
    tokens = int(run.usage.get("total_tokens") or 0)
    checks = []
    if budget.max_tokens is not None:
        ok = tokens <= budget.max_tokens
        checks.append(
            Check(
                "budget max_tokens",
                ok,
                f"at most {budget.max_tokens} tokens; the run used {tokens}",
                (*where, "max_tokens"),
            )
        )
    if budget.max_steps is not None:
        ok = steps <= budget.max_steps
        checks.append(
            Check(
                "budget max_steps",
                ok,
                f"at most {budget.max_steps} model calls; the run made {steps}",
                (*where, "max_steps"),
            )
        )
    if budget.max_cost_usd is not None:
        if cost is None:
            checks.append(
                Check(
                    "budget max_cost_usd",
                    False,
                    "the run's models have no price, so its cost is unknown",
                    (*where, "max_cost_usd"),
                )
            )
        else:
            ok = float(cost) <= budget.max_cost_usd
            checks.append(
                Check(
                    "budget max_cost_usd",
                    ok,
                    f"at most ${budget.max_cost_usd:g}; the run cost ${float(cost):.6f}",
                    (*where, "max_cost_usd"),
                )
            )
    return checks
