"""The acceptance walk of issue 39: every project of the field's agent files in ../shared/foreign
(SOURCES.md says where each came from) that its format can run without the user's own Python
validates and dry-runs through `flowrun.load`; every other one fails with errors whose codes
say why, one line each (docs/how-to/foreign-formats.md counts them). A project whose tools are
MCP servers is validated but not dry-run: a dry run starts its servers (npx, Docker's MCP
gateway, remote URLs), which an offline machine does not have.

The corpus is not in this repository; the walk runs where a checkout sits beside it (this
machine's worktrees, CI's clone) or FLOWRUN_FOREIGN_CORPUS names it, and is skipped elsewhere.
`pytest tests/test_foreign_corpus.py -s` prints the table the docs quote."""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

import pytest

import flowrun
from flowrun import ManifestInvalid

CORPUS = Path(
    os.environ.get("FLOWRUN_FOREIGN_CORPUS") or Path(__file__).resolve().parents[2] / "shared/foreign"
)
# why a project cannot run as it is: the error codes the formats give for it
CANNOT_RUN = {
    "python-tool": "a tool is the project's own Python that is not a plain function",
    "python-agent": "an agent is a Python class or is built in Python",
    "python-capability": "a pydantic-ai capability registered in Python",
    "unsupported": "a construct flowrun does not read (ADK GraphAgent, an Agent Framework workflow, "
    "an Agent Spec CatchExceptionNode, a cycle without a BranchingNode)",
    "missing-tool": "an Agent Spec ServerTool: the file has only its signature, the host runs it",
    "no-root": "an Agent Spec file of referenced components only, with no one agent or flow on top",
    "unknown-component": "an Agent Spec plugin's component type",
    "schema": "a value the Agent Spec JSON Schema refuses",
    "json-syntax": "a CLI template with {{placeholders}}, not JSON until filled in",
    "unknown-agent": "names an agent defined elsewhere (another docs page, a catalog image)",
    "missing-key": "a fragment (no model) or a task bound to its agent in Python only",
    "unknown-key": "a key newer than the format's published schema (docker-agent's harness)",
}
UNSET = re.compile(r"names \$\{([A-Za-z_][A-Za-z0-9_]*)\}, which is not set")
pytestmark = pytest.mark.skipif(
    not (CORPUS / "SOURCES.md").is_file(), reason=f"no foreign corpus at {CORPUS}"
)


def projects() -> list[tuple[str, Path]]:
    """(format, entry file) of every foreign project of the corpus, each once."""
    from flowrun.manifest.foreign.registry import detect_in

    found: dict[Path, str] = {}
    for folder, dirs, _files in os.walk(CORPUS):
        dirs.sort()
        for one in detect_in(Path(folder)):
            found.setdefault(one.entry.resolve(), one.format)
    return [(fmt, entry) for entry, fmt in sorted(found.items())]


def inputs_of(wf: flowrun.Workflow) -> dict[str, object]:
    values = {"integer": 1, "number": 1.0, "boolean": True, "list": ["x"]}
    return {name: values.get(spec.type, "x") for name, spec in wf.inputs.items() if spec.is_required}


def outcome(entry: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """ "runs", "validates (MCP servers)", or "refused: CODE, ..." for one project."""
    from flowrun.manifest.foreign.registry import convert, detect

    try:
        wf = flowrun.load(entry)
    except ManifestInvalid as e:
        unset = [m.group(1) for d in e.errors if (m := UNSET.search(d.message))]
        if not unset or len(unset) < len(e.errors):
            return "refused: " + ", ".join(sorted({d.code for d in e.errors}))
        for name in unset:  # the user's deployment variables: set, the project validates
            monkeypatch.setenv(name, "m")
        wf = flowrun.load(entry)
    found = detect(entry)
    workflow = convert(found).workflow if found is not None else None
    if workflow is not None and workflow.data.get("mcp_servers"):
        return "validates (MCP servers)"
    result = wf.run_sync(inputs_of(wf), runs_dir=tmp_path / "runs", dry_run=True)
    assert result.status == "completed", (entry, result)
    return "runs"


def test_every_project_runs_or_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table: Counter[tuple[str, str]] = Counter()
    wrong: list[str] = []
    for fmt, entry in projects():
        got = outcome(entry, tmp_path, monkeypatch)
        table[(fmt, got)] += 1
        codes = got.removeprefix("refused: ").split(", ") if got.startswith("refused") else []
        if any(code not in CANNOT_RUN for code in codes):
            wrong.append(f"{entry.relative_to(CORPUS)}: {got}")
    for (fmt, got), n in sorted(table.items()):
        print(f"{fmt:13} {n:4}  {got}")
    assert not wrong, "\n".join(wrong)
    runnable = {fmt for (fmt, got) in table if got == "runs"}
    assert {"crewai", "adk", "docker-agent", "pydantic-ai", "maf", "agentspec"} <= runnable
