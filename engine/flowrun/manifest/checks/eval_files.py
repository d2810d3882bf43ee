"""Eval sets (`kind: evalset`): their cases, inline or read from a JSONL or CSV dataset (each
with where it was written, for file:line), and what `validate` checks of them: the workflow and
the files they name exist, each case's inputs are the workflow's, case ids and grader names are
unique, and each grader's own checks (its kind's, manifest/kinds.py) hold."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from flowrun.errors import UsageError
from flowrun.manifest.checks.csv_files import csv_lines
from flowrun.manifest.diagnostics import Diagnostic, Severity
from flowrun.manifest.eval_specs import EvalCase, EvalSetManifest, GraderBase
from flowrun.manifest.kinds import Problem, grader_kind
from flowrun.manifest.project import Loaded, Project, display_path, readable_manifest
from flowrun.manifest.schema.check import did_you_mean
from flowrun.manifest.specs import WorkflowManifest
from flowrun.paths import is_file
from flowrun.regexes import compile_regex
from flowrun.types import decode_json

MAX_ROW_PROBLEMS = 20


@dataclass(frozen=True, slots=True)
class Where:
    """Where a case (or a part of it) was written: a file and line."""

    file: str
    line: int
    column: int = 1
    path: str = ""

    def diag(
        self, message: str, hint: str = "", code: str = "invalid", severity: Severity = "error"
    ) -> Diagnostic:
        return Diagnostic(self.file, self.line, self.column, self.path, message, hint, code, severity)

    def problem(self, problem: Problem) -> Diagnostic:
        if len(problem) == 4:
            return self.diag(problem[0], problem[1], problem[2], problem[3])
        return self.diag(*problem)


@dataclass(frozen=True, slots=True)
class LocatedCase:
    case: EvalCase
    where: Where


def evalset_cases(loaded: Loaded[EvalSetManifest]) -> tuple[list[LocatedCase], list[Diagnostic]]:
    """The eval set's cases (inline, or its dataset's rows) and the problems reading them."""
    spec, src = loaded.spec, loaded.source
    if (spec.cases is None) == (spec.dataset is None):
        if src.lost((), "cases", "dataset"):
            return [], []  # the schema error there says it
        where = ("cases",) if spec.cases is not None else ()
        message = "an eval set needs exactly one of `cases` or `dataset`"
        return [], [src.diag(where, message, "keep one of them", "invalid")]
    if spec.cases is not None:
        out = []
        for i, case in enumerate(spec.cases):
            line, column = src.position(("cases", i))
            out.append(LocatedCase(case, Where(src.display, line, column, f"cases[{i}]")))
        return out, []
    assert spec.dataset is not None
    path = src.path.parent / spec.dataset
    if not is_file(path):
        message = f"dataset '{spec.dataset}' not found"
        return [], [src.diag(("dataset",), message, "the path is relative to the eval set", "missing-file")]
    return read_dataset(path)


def read_dataset(path: Path) -> tuple[list[LocatedCase], list[Diagnostic]]:
    """A JSONL dataset (one case a line: {id, inputs, expected, graders}) or a CSV one (columns
    `id`, `expected` and one per input)."""
    from pydantic import ValidationError

    display = display_path(path)
    csv_rows = path.suffix.lower() == ".csv"
    try:
        rows = list(_csv_rows(path) if csv_rows else _jsonl_rows(path))
    except (OSError, UnicodeDecodeError) as e:
        return [], [
            Where(display, 1).diag(f"cannot read the dataset: {e}", "save it as UTF-8 text", "bad-file")
        ]
    row_hint = "a header row, then a row a case" if csv_rows else "one JSON object a line"
    cases: list[LocatedCase] = []
    problems: list[Diagnostic] = []
    for line, row in rows:
        where = Where(display, line)
        if isinstance(row, str):
            problems.append(where.diag(row, row_hint, "bad-row"))
            continue
        try:
            cases.append(LocatedCase(EvalCase.model_validate(row), where))
        except ValidationError as e:
            err = e.errors()[0]
            at = ".".join(str(p) for p in err["loc"])
            hint = "each line: {id, inputs, expected, graders}"
            if err["type"] == "extra_forbidden":
                hint = did_you_mean(str(err["loc"][-1]), EvalCase.model_fields) or hint
            problems.append(Where(display, line, 1, at).diag(err["msg"], hint, "bad-row"))
        if len(problems) >= MAX_ROW_PROBLEMS:
            break
    if not rows:
        problems.append(Where(display, 1).diag("the dataset has no cases", "add a case a line", "empty"))
    return cases, problems


def _jsonl_rows(path: Path) -> Iterator[tuple[int, dict[str, object] | str]]:
    with path.open(encoding="utf-8-sig") as f:
        for number, text in enumerate(f, start=1):
            if not text.strip():
                continue
            try:
                value = decode_json(text)
            except json.JSONDecodeError as e:
                yield number, f"not JSON: {e.msg} at column {e.colno}"
                continue
            yield (
                number,
                value if isinstance(value, dict) else f"a case is a JSON object, got {type(value).__name__}",
            )


def _csv_rows(path: Path) -> Iterator[tuple[int, dict[str, object] | str]]:
    with path.open(encoding="utf-8-sig", newline="") as f:
        lines = csv_lines(f)
        names = [h.strip() for h in next(lines, (0, []))[1]]
        if "id" not in names:
            yield 1, "a CSV dataset needs an `id` column (and `expected`, and one column per input)"
            return
        for line, cells in lines:
            if not any(c.strip() for c in cells):
                continue
            if len(cells) != len(names):
                yield line, f"{len(cells)} cells for {len(names)} columns"
                continue
            row = dict(zip(names, cells, strict=True))
            case: dict[str, object] = {"id": row.pop("id")}
            if "expected" in row:
                case["expected"] = row.pop("expected")
            case["inputs"] = {k: v for k, v in row.items() if v != ""}
            yield line, case


# ---------------------------------------------------------------- validate


def evalset_files(spec: EvalSetManifest) -> list[str]:
    """The files an eval set names (relative to it), whose state its check depends on."""
    named = [spec.workflow, *([spec.dataset] if spec.dataset else [])]
    graders = [*spec.graders, *(g for case in spec.cases or [] for g in case.graders)]
    for grader in graders:
        named += grader_kind(grader).files(grader)
    return named


def check_evalsets(project: Project) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for loaded in project.evalsets:
        out += check_evalset(loaded, project)
    return out


def check_evalset(loaded: Loaded[EvalSetManifest], project: Project) -> list[Diagnostic]:
    spec, src = loaded.spec, loaded.source
    here = src.path.parent
    out: list[Diagnostic] = []
    workflow, inputs_known = _workflow(here / spec.workflow)
    if workflow is None:
        message = f"workflow '{spec.workflow}' not found, or not a valid workflow"
        hint = "the path is relative to the eval set; `flowrun validate` the workflow for its problems"
        out.append(src.diag(("workflow",), message, hint, "missing-file"))
    tools = None if workflow is None else WorkflowTools.of(here / spec.workflow, workflow, project)
    at = GraderAt(here, workflow, project, tools)
    cases, problems = evalset_cases(loaded)
    out += problems
    for i, grader in enumerate(spec.graders):
        where = Where(src.display, *src.position(("graders", i)), f"graders[{i}]")
        out += [where.problem(p) for p in grader_kind(grader).check(grader, at)]
    seen: dict[str, Where] = {}
    for located in cases:
        case, where = located.case, located.where
        if case.id in seen:
            other = seen[case.id]
            message = f"case id '{case.id}' repeats {other.file}:{other.line}"
            out.append(where.diag(message, "give each case its own id", "duplicate-id"))
        seen.setdefault(case.id, where)
        if workflow is not None and inputs_known:
            out += _input_problems(case, where, workflow)
        names = grader_names([*spec.graders, *case.graders])
        for name in sorted({n for n in names if names.count(n) > 1}):
            message = f"case '{case.id}' has two graders named '{name}'"
            out.append(where.diag(message, "give them distinct `name:`s", "duplicate-name"))
        for j, grader in enumerate(case.graders):
            written = _grader_where(loaded, where, j)
            out += [written.problem(p) for p in grader_kind(grader).check(grader, at)]
    if spec.cassettes is not None and Path(spec.cassettes).is_absolute():
        out.append(src.diag(("cassettes",), "`cassettes` must be relative to the eval set", "", "bad-path"))
    return _unique(out)


def _grader_where(loaded: Loaded[EvalSetManifest], case: Where, index: int) -> Where:
    """Where a case's grader was written: its line in the eval set, or its case's dataset row."""
    if case.file != loaded.source.display:
        return case
    parts = (*_path_parts(case.path), "graders", index)
    line, column = loaded.source.position(parts)
    return Where(case.file, line, column, f"{case.path}.graders[{index}]")


def _path_parts(path: str) -> tuple[str | int, ...]:
    """`cases[3]` as ("cases", 3)."""
    name, _, index = path.partition("[")
    return (name, int(index.rstrip("]"))) if index else (name,)


def _unique(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """A problem of an eval set's own graders is found once per case: keep one."""
    out: list[Diagnostic] = []
    for d in diagnostics:
        if d not in out:
            out.append(d)
    return out


def _workflow(path: Path) -> tuple[WorkflowManifest | None, bool]:
    """The workflow an eval set runs, as far as it can be read (its own problems are reported
    with it), and whether its inputs all could be."""
    if not is_file(path):
        return None, False
    _, spec, src, _ = readable_manifest(path)
    if not isinstance(spec, WorkflowManifest):
        return None, False
    return spec, not src.cut_within(("inputs",))


def _input_problems(case: EvalCase, where: Where, workflow: WorkflowManifest) -> list[Diagnostic]:
    from flowrun.manifest.inputs import resolve_inputs

    unknown = [name for name in case.inputs if name not in workflow.inputs]
    if unknown:
        hint = did_you_mean(unknown[0], workflow.inputs) or "its inputs: " + (
            ", ".join(workflow.inputs) or "(none)"
        )
        return [
            where.diag(
                f"case '{case.id}': unknown input '{unknown[0]}' of workflow '{workflow.name}'",
                hint,
                "unknown-input",
            )
        ]
    try:
        resolve_inputs(workflow.inputs, case.inputs, workflow.name)
    except UsageError as e:
        return [where.diag(f"case '{case.id}': {e.message}", e.hint or "", "bad-input")]
    return []


def grader_names(graders: list[GraderBase]) -> list[str]:
    """Each grader's name: its own, else its kind (numbered from the second of a kind)."""
    counts: dict[str, int] = {}
    out = []
    for grader in graders:
        if grader.name is not None:
            out.append(grader.name)
            continue
        counts[grader.kind] = counts.get(grader.kind, 0) + 1
        n = counts[grader.kind]
        out.append(grader.kind if n == 1 else f"{grader.kind}-{n}")
    return out


def regex_problems(pattern: str | None) -> list[Problem]:
    """A grader's regex that does not compile (one with a Jinja2 tag is rendered first: later)."""
    if pattern is None or "{{" in pattern:
        return []
    try:
        compile_regex(pattern)
    except re.error as e:
        return [(f"invalid regex /{pattern}/: {e}", "quote it with single quotes in YAML", "bad-regex")]
    return []


@dataclass(frozen=True, slots=True)
class WorkflowTools:
    """The agents a run of the workflow may start and the tools they may call (an agent called
    as a tool by its name; an MCP server's tools as SERVER__TOOL, known only at run time)."""

    workflow: str
    agents: frozenset[str]
    tools: frozenset[str]
    servers: frozenset[str]  # MCP servers: any SERVER__TOOL name is theirs

    @classmethod
    def of(cls, path: Path, workflow: WorkflowManifest, project: Project) -> WorkflowTools | None:
        """None when the workflow's project does not load (its own validate says why)."""
        from flowrun.manifest.graph import offered_tools, run_agents
        from flowrun.manifest.kinds import tool_kind_for
        from flowrun.manifest.project import load_project

        if not project.roots or path.parent.resolve() != project.roots[0].resolve():
            project = load_project(path.parent, [path])
        if any(d.severity == "error" for d in project.errors):
            return None
        agents = run_agents(workflow, project)
        tools: set[str] = set()
        servers: set[str] = set()
        for agent in agents & set(project.agents):
            for name, _ in offered_tools(project.agents[agent].spec):  # (the memory tool too)
                kind = tool_kind_for(name, project)
                (servers if kind is not None and kind.name == "mcp" else tools).add(name)
        return cls(workflow.name, frozenset(agents), frozenset(tools), frozenset(servers))

    def problems(self, agent: str | None, needed: list[str], guarded: list[str]) -> list[Problem]:
        """An `agent` the workflow does not run; tools its agents do not have: an error for one
        that is `needed`, a warning for a near miss of one that is only `guarded` against."""
        out: list[Problem] = []
        if agent is not None and agent not in self.agents:
            hint = did_you_mean(agent, self.agents) or "its agents: " + ", ".join(sorted(self.agents))
            message = f"trajectory: workflow '{self.workflow}' runs no agent '{agent}'"
            out.append((message, hint, "unknown-agent"))
        for tool in [*needed, *guarded]:
            if tool in self.tools or any(tool.startswith(f"{s}__") for s in self.servers):
                continue
            near = did_you_mean(tool, self.tools)
            message = f"trajectory: no agent of workflow '{self.workflow}' has the tool '{tool}'"
            if tool in needed:
                hint = near or "its agents' tools: " + (", ".join(sorted(self.tools)) or "(none)")
                out.append((message, hint, "unknown-tool"))
            elif near:
                out.append((message, near, "unknown-tool", "warning"))
        return out


@dataclass(frozen=True, slots=True)
class GraderAt:
    """Where an eval set's grader is checked: the eval set's folder, its workflow (None when it
    does not load), the project, and what the workflow's agents may call (None: unknown)."""

    here: Path
    workflow: WorkflowManifest | None
    project: Project
    tools: WorkflowTools | None
