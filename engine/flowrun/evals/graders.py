"""The deterministic graders: each reads a run's outcome and gives a score from 0 to 1 (the
share of its checks that hold) and what it found. Texts in a grader may be Jinja2 templates of
the case (`{{ expected.term }}`, `{{ inputs.question }}`), rendered before they are checked."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from flowrun.errors import FlowrunError
from flowrun.evals.outcome import Outcome
from flowrun.manifest.eval_specs import (
    BudgetGrader,
    FileGrader,
    GraderBase,
    JsonPathGrader,
    JsonSchemaGrader,
    OutputGrader,
    StatusGrader,
    TrajectoryGrader,
)
from flowrun.pinned import walk
from flowrun.types import decode_json

SHOWN = 200  # characters of a text quoted in a detail


@dataclass(slots=True)
class GraderScore:
    name: str
    kind: str
    score: float  # 0..1
    passed: bool  # the score reached the grader's pass mark
    detail: str  # what held and what did not
    weight: float = 1.0
    error: bool = False  # could not grade (a missing file, a judge that did not answer)


@dataclass(frozen=True, slots=True)
class Checked:
    ok: bool
    detail: str


def short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def scored(grader: GraderBase, name: str, checks: list[Checked]) -> GraderScore:
    """A grader's score from its checks: the share that hold."""
    if not checks:
        return GraderScore(name, grader.kind, 1.0, True, "nothing to check", grader.weight)
    score = sum(c.ok for c in checks) / len(checks)
    failed = [c.detail for c in checks if not c.ok]
    detail = "; ".join(failed) if failed else "; ".join(c.detail for c in checks)
    return GraderScore(name, grader.kind, score, score >= grader.pass_mark - 1e-9, detail, grader.weight)


def failed(grader: GraderBase, name: str, detail: str) -> GraderScore:
    return GraderScore(name, grader.kind, 0.0, False, detail, grader.weight, error=True)


def templated(value: object, variables: Mapping[str, object]) -> object:
    """`value` with every string that holds a Jinja2 tag rendered against the case."""
    if isinstance(value, str) and ("{{" in value or "{%" in value):
        from flowrun.manifest.templates import render

        return render(value, variables, what="a grader's text")
    if isinstance(value, list):
        return [templated(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: templated(v, variables) for k, v in value.items()}
    return value


def grade(
    grader: GraderBase, name: str, outcome: Outcome, variables: Mapping[str, object], here: Path
) -> GraderScore:
    """Score one deterministic grader (judges: evals/judges.py)."""
    try:
        rendered = type(grader).model_validate(templated(grader.model_dump(by_alias=True), variables))
    except FlowrunError as e:
        return failed(grader, name, e.message)
    handler = _GRADERS[grader.kind]
    try:
        return handler(rendered, name, outcome, here)
    except FlowrunError as e:
        return failed(grader, name, e.message)


def _texts(value: str | list[str] | None) -> list[str]:
    return [] if value is None else [value] if isinstance(value, str) else list(value)


def _output(grader: GraderBase, name: str, outcome: Outcome, here: Path) -> GraderScore:
    assert isinstance(grader, OutputGrader)
    spec = grader.output
    text, what = outcome.output_text(spec.file)
    if text is None:
        return failed(grader, name, f"{what} was not written")
    folded = text.casefold() if spec.ignore_case else text

    def norm(needle: str) -> str:
        return needle.casefold() if spec.ignore_case else needle

    checks = [Checked(norm(n) in folded, f"{what} contains {n!r}") for n in _texts(spec.contains)]
    checks += [
        Checked(norm(n) not in folded, f"{what} does not contain {n!r}") for n in _texts(spec.not_contains)
    ]
    if spec.equals is not None:
        same = norm(spec.equals.strip()) == folded.strip()
        checks.append(
            Checked(
                same, f"{what} equals {short(spec.equals)!r}" + ("" if same else f"; it is {short(text)!r}")
            )
        )
    if spec.matches is not None:
        flags = re.MULTILINE | (re.IGNORECASE if spec.ignore_case else 0)
        found = _search(spec.matches, text, flags)
        checks.append(
            Checked(found, f"{what} matches /{spec.matches}/" + ("" if found else f"; it is {short(text)!r}"))
        )
    return scored(grader, name, checks)


def _search(pattern: str, text: str, flags: int) -> bool:
    try:
        return re.search(pattern, text, flags) is not None
    except re.error as e:
        raise FlowrunError(f"invalid regex /{pattern}/: {e}") from None


def _json_of(outcome: Outcome, file: str | None) -> tuple[object, str]:
    text, what = outcome.output_text(file)
    if text is None:
        raise FlowrunError(f"{what} was not written")
    try:
        return decode_json(_unfenced(text)), what
    except ValueError as e:
        raise FlowrunError(f"{what} is not JSON ({e}): {short(text)!r}") from None


def _unfenced(text: str) -> str:
    """A JSON answer inside a ```json fence, as models often write it, without the fence."""
    stripped = text.strip()
    fenced = re.fullmatch(r"```[A-Za-z]*\n(.*)\n```", stripped, re.DOTALL)
    return fenced.group(1) if fenced else stripped


PATH_STEP = re.compile(r"""\.([A-Za-z_][A-Za-z0-9_-]*)|\[(-?\d+)\]|\[['"]([^'"]*)['"]\]""")


def json_path(value: object, path: str) -> tuple[bool, object]:
    """(found, the value) at `path`: `$` then `.key`, `[index]` or `['key']` steps."""
    rest = path.strip()
    if not rest.startswith("$"):
        raise FlowrunError(f"JSON path {path!r} must start with $", "e.g. $.citations[0].source")
    rest = rest[1:]
    while rest:
        step = PATH_STEP.match(rest)
        if step is None:
            raise FlowrunError(f"cannot read JSON path {path!r} at {rest!r}", "steps: .key, [index], ['key']")
        key, index, quoted = step.groups()
        if index is not None:
            if not isinstance(value, list) or not -len(value) <= int(index) < len(value):
                return False, None
            value = value[int(index)]
        else:
            name = key if key is not None else quoted
            if not isinstance(value, dict) or name not in value:
                return False, None
            value = value[name]
        rest = rest[step.end() :]
    return True, value


def _json_path(grader: GraderBase, name: str, outcome: Outcome, here: Path) -> GraderScore:
    assert isinstance(grader, JsonPathGrader)
    spec = grader.json_path
    data, what = _json_of(outcome, spec.file)
    found, value = json_path(data, spec.path)
    if not found:
        return scored(grader, name, [Checked(False, f"{spec.path} is not in {what}")])
    same = value == spec.equals
    detail = f"{spec.path} of {what} equals {spec.equals!r}" + (
        "" if same else f"; it is {short(repr(value))}"
    )
    return scored(grader, name, [Checked(same, detail)])


def _json_schema(grader: GraderBase, name: str, outcome: Outcome, here: Path) -> GraderScore:
    assert isinstance(grader, JsonSchemaGrader)
    from jsonschema import Draft202012Validator

    spec = grader.json_schema
    schema = spec.schema_
    if isinstance(schema, str):
        try:
            schema = decode_json((here / schema).read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise FlowrunError(f"cannot read the schema {spec.schema_}: {e}") from None
    data, what = _json_of(outcome, spec.file)
    errors = sorted(Draft202012Validator(schema).iter_errors(cast("Any", data)), key=lambda e: list(e.path))
    if not errors:
        return scored(grader, name, [Checked(True, f"{what} is valid against the schema")])
    first = errors[0]
    at = "/".join(str(p) for p in first.path) or "(the root)"
    return scored(grader, name, [Checked(False, f"{what} is not valid at {at}: {short(first.message)}")])


def _file(grader: GraderBase, name: str, outcome: Outcome, here: Path) -> GraderScore:
    assert isinstance(grader, FileGrader)
    spec = grader.file
    root = outcome.run_dir
    matched = sorted(p for p in _glob(root, spec.path))
    if not spec.exists:
        return scored(
            grader,
            name,
            [Checked(not matched, f"no file {spec.path}" + (f"; found {matched[0]}" if matched else ""))],
        )
    if not matched:
        return scored(grader, name, [Checked(False, f"{spec.path} exists; it was not written")])
    best: list[Checked] = []
    for rel in matched:  # the file that holds the most checks speaks for the glob
        text = outcome.file_text(rel) or ""
        checks = [Checked(True, f"{rel} exists")]
        checks += [Checked(n in text, f"{rel} contains {n!r}") for n in _texts(spec.contains)]
        if spec.matches is not None:
            checks.append(
                Checked(_search(spec.matches, text, re.MULTILINE), f"{rel} matches /{spec.matches}/")
            )
        if not best or sum(c.ok for c in checks) > sum(c.ok for c in best):
            best = checks
    return scored(grader, name, best)


def _glob(root: Path, pattern: str) -> list[str]:
    """Files of the run folder matching `pattern` (relative paths; never outside the folder)."""
    if not any(c in pattern for c in "*?["):
        path = (root / pattern).resolve()
        return [pattern] if path.is_relative_to(root.resolve()) and path.is_file() else []
    found = []
    real = root.resolve()
    for path in walk(real):  # (the agents' tree: walked without recursion, 256 deep at most)
        rel = path.relative_to(real).as_posix()
        if fnmatch.fnmatchcase(rel, pattern) and path.is_file():
            found.append(rel)
    return found


def _trajectory(grader: GraderBase, name: str, outcome: Outcome, here: Path) -> GraderScore:
    assert isinstance(grader, TrajectoryGrader)
    spec = grader.trajectory
    calls = [c.tool for c in outcome.calls if spec.agent is None or c.agent == spec.agent]
    who = f" by {spec.agent}" if spec.agent else ""
    checks = [Checked(tool in calls, f"{tool} is called{who}") for tool in spec.called]
    if spec.order:
        checks.append(_in_order(spec.order, calls, who))
    for tool, limit in spec.max_calls.items():
        made = len(calls) if tool == "*" else calls.count(tool)
        what = "tool calls" if tool == "*" else f"calls of {tool}"
        checks.append(Checked(made <= limit, f"at most {limit} {what}{who}; {made} made"))
    for tool in spec.never:
        made = calls.count(tool)
        checks.append(
            Checked(made == 0, f"{tool} is never called{who}" + (f"; called {made} time(s)" if made else ""))
        )
    return scored(grader, name, checks)


def _in_order(order: list[str], calls: list[str], who: str) -> Checked:
    position = -1
    for tool in order:
        later = [i for i, called in enumerate(calls) if called == tool and i > position]
        if not later:
            seen = " -> ".join(dict.fromkeys(calls)) or "none"
            return Checked(
                False,
                f"{' before '.join(order)}{who}; {tool} is not called after the one before "
                f"(calls: {short(seen)})",
            )
        position = later[0]
    return Checked(True, f"{' before '.join(order)}{who}")


def _status(grader: GraderBase, name: str, outcome: Outcome, here: Path) -> GraderScore:
    assert isinstance(grader, StatusGrader)
    wanted: list[str] = [grader.status] if isinstance(grader.status, str) else list(grader.status)
    ok = outcome.status in wanted
    detail = f"status {' or '.join(wanted)}" + (
        "" if ok else f"; the run ended {outcome.status}: {short(outcome.message)}"
    )
    return scored(grader, name, [Checked(ok, detail)])


def _budget(grader: GraderBase, name: str, outcome: Outcome, here: Path) -> GraderScore:
    assert isinstance(grader, BudgetGrader)
    spec = grader.budget
    checks = []
    if spec.max_steps is not None:
        checks.append(
            Checked(
                outcome.steps <= spec.max_steps, f"at most {spec.max_steps} model calls; {outcome.steps} made"
            )
        )
    if spec.max_tokens is not None:
        used = outcome.total_tokens
        checks.append(Checked(used <= spec.max_tokens, f"at most {spec.max_tokens} tokens; {used} used"))
    if spec.max_cost_usd is not None:
        cost = outcome.cost_usd
        if cost is None:
            checks.append(Checked(False, "the run's models have no price, so its cost is unknown"))
        else:
            checks.append(
                Checked(cost <= spec.max_cost_usd, f"at most ${spec.max_cost_usd:g}; it cost ${cost:.6f}")
            )
    return scored(grader, name, checks)


_GRADERS = {
    "output": _output,
    "json_path": _json_path,
    "json_schema": _json_schema,
    "file": _file,
    "trajectory": _trajectory,
    "status": _status,
    "budget": _budget,
}
