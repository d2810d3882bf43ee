"""What `flowrun validate` checks of an agent's `guardrails:` across the project: a judge must
be another agent of it, a Python check must import (in a child process, as Python tools are
checked). The rules within the file are in manifest/guardrails/rules.py."""

from __future__ import annotations

from fnmatch import fnmatchcase

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.graph import tool_entries
from flowrun.manifest.guardrails.rules import entries
from flowrun.manifest.project import Loaded, Project
from flowrun.manifest.schema.check import did_you_mean
from flowrun.manifest.specs import AgentManifest
from flowrun.manifest.yaml_source import PathKey


def check_guardrails(loaded: Loaded[AgentManifest], project: Project) -> list[Diagnostic]:
    """Judges that must be agents of the project, Python checks that must import (in a child
    process, as Python tools are checked)."""
    spec = loaded.spec.guardrails
    if spec is None or spec.empty:
        return []
    src = loaded.source
    out: list[Diagnostic] = []
    python: list[tuple[PathKey, str]] = []
    for path, _, guard in entries(src.data.get("guardrails") if isinstance(src.data, dict) else None):
        judge, function = guard.get("judge"), guard.get("python")
        if isinstance(judge, str):
            out += _judge_problems(loaded, project, (*path, "judge"), judge)
        if isinstance(function, str):
            python.append(((*path, "python"), function))
    if python:
        out += _python_problems(loaded, python)
    return out + _tool_name_problems(loaded)


def _tool_name_problems(
    loaded: Loaded[AgentManifest],
) -> list[Diagnostic]:
    """A tool guardrail group naming a tool the agent does not have never applies (a warning; an
    MCP tool's name, SERVER__TOOL, is known only when its server runs)."""
    spec = loaded.spec
    if spec.guardrails is None or spec.extends is not None:
        return []  # an inherited list is resolved later
    names = {name for _, name, _ in tool_entries(spec)}
    out: list[Diagnostic] = []
    for j, group in enumerate(spec.guardrails.tools):
        for k, pattern in enumerate(group.tools or []):
            if "__" in pattern or any(fnmatchcase(name, pattern) for name in names):
                continue
            message = f"no tool of agent '{spec.name}' is named {pattern!r}: this group never applies"
            hint = did_you_mean(pattern, names) or f"its tools: {', '.join(sorted(names)) or '(none)'}"
            where = ("guardrails", "tools", j, "tools", k)
            out.append(loaded.source.diag(where, message, hint, "unknown-tool", severity="warning"))
    return out


def _judge_problems(
    loaded: Loaded[AgentManifest], project: Project, path: PathKey, judge: str
) -> list[Diagnostic]:
    src = loaded.source
    if judge not in project.agents:
        hint = (
            did_you_mean(judge, set(project.agents))
            or "name an agent of agents.d/ that answers with a verdict"
        )
        return [src.diag(path, f"judge '{judge}' is not an agent here", hint, "unknown-agent")]
    if judge == loaded.spec.name:
        return [src.diag(path, f"agent '{judge}' cannot judge itself", "name another agent", "invalid")]
    if project.agents[judge].spec.output_schema is not None:
        message = (
            f"judge '{judge}' has an output_schema: a judge answers the verdict {{pass, reason}} instead"
        )
        hint = f"remove output_schema from {judge}, or use another agent as the judge"
        return [src.diag(path, message, hint, "invalid", severity="warning")]
    return []


def _python_problems(loaded: Loaded[AgentManifest], found: list[tuple[PathKey, str]]) -> list[Diagnostic]:
    from flowrun.manifest.checks.python_tools import _probe

    reports, problem = _probe(loaded.root, sorted({target for _, target in found}))
    out: list[Diagnostic] = []
    for path, target in found:
        module, _, func = target.partition(":")
        if problem is not None:
            out.append(loaded.source.diag(path, problem, "", "import-failed"))
            continue
        report = reports.get(target, {})
        error = report.get("error") if isinstance(report, dict) else None
        if error in ("missing-module", "import-failed"):
            detail = report.get("detail", "")
            message = f"guardrail function '{target}': module '{module}' does not import ({detail})"
            hint = "modules are found from the agent's project folder (the workflow's folder)"
            out.append(loaded.source.diag(path, message, hint, "import-failed"))
        elif error in ("missing-function", "not-callable"):
            hint = did_you_mean(func, set(report.get("names") or [])) or "point at a function of the module"
            out.append(
                loaded.source.diag(
                    path, f"module '{module}' has no function '{func}'", hint, "missing-function"
                )
            )
    return out
