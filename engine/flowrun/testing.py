"""`flowrun test`: each test file (`kind: test`, `*.flowrun.yaml`) names a workflow, its inputs
and a recorded run (a cassette); the run is replayed offline with the workflow as it is now,
every model answer coming from the cassette, and what the file expects is checked. A prompt,
tool or manifest edit that changes what an agent is asked makes the replay diverge, which is
reported with the first differing step. `record_cassette` makes a cassette (and a test file)
from a live run (`flowrun record`).

    recording = await flowrun.testing.record_cassette(
        "tests/research.flowrun.yaml", "examples/research.yaml", {"question": "..."}, dry_run=True
    )

    report = await flowrun.testing.run_test_file("tests/research.flowrun.yaml")
    print(report.ok, [(c.name, c.ok, c.detail) for c in report.checks])
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from flowrun import api
from flowrun.errors import FlowrunError, UsageError
from flowrun.manifest.checks.test_files import cassette_events
from flowrun.manifest.diagnostics import ManifestInvalid
from flowrun.manifest.inputs import resolve_inputs
from flowrun.manifest.project import display_path, parse_manifest
from flowrun.manifest.specs import NAME, FlowTestManifest
from flowrun.manifest.yaml_source import Source
from flowrun.records import RunRecord, run_record
from flowrun.runtime.durable.event_log import read_events, read_lines
from flowrun.runtime.options import RunOptions
from flowrun.runtime.replay.expectations import Check, Replayed, check_all
from flowrun.tools.sandbox import Mode

SUFFIXES = (".flowrun.yaml", ".flowrun.yml")
SKIP = {"runs", "node_modules", "__pycache__", "cassettes"}
CASSETTE_FILES = ("events.jsonl", "run.json", "usage.json")


@dataclass
class CaseReport:
    """One test file's result: its checks, or why it could not run."""

    file: Path
    name: str
    checks: list[Check] = field(default_factory=list)
    error: str | None = None  # the file could not run (bad file, missing workflow or cassette)
    duration_s: float = 0.0
    source: Source | None = None  # for the line of each check

    @property
    def ok(self) -> bool:
        return self.error is None and all(c.ok for c in self.checks)

    @property
    def display(self) -> str:
        return display_path(self.file)

    def line_of(self, check: Check | None = None) -> int:
        """The line of a check's expectation in the test file (1 when unknown)."""
        if self.source is None:
            return 1
        return self.source.position(check.parts if check is not None else (), key=True)[0]


def find_test_files(paths: Iterable[Path]) -> list[Path]:
    """`*.flowrun.yaml` files among `paths` (files, or folders searched below)."""
    found: list[Path] = []
    for path in paths:
        if path.is_file():
            found.append(path)
            continue
        for candidate in sorted(path.rglob("*.flowrun.y*ml")):
            relative = candidate.relative_to(path).parts[:-1]
            if candidate.name.endswith(SUFFIXES) and not any(
                p in SKIP or p.startswith(".") for p in relative
            ):
                found.append(candidate)
    return list(dict.fromkeys(p.resolve() for p in found))


def read_test_file(path: Path) -> tuple[FlowTestManifest, Source]:
    """The test file as its typed spec; a ManifestInvalid (with file:line) when it is not one."""
    kind, spec, src, diags = parse_manifest(path)
    errors = [d for d in diags if d.severity == "error"]
    if errors or not isinstance(spec, FlowTestManifest):
        if not errors and kind is not None:
            errors = [
                src.diag(("kind",), f"a {kind} manifest, not a test file", "set `kind: test`", "invalid")
            ]
        raise ManifestInvalid(str(path), errors)
    return spec, src


def cassette_meta(events: Path) -> RunRecord:
    """What the cassette's run recorded about itself: its run_start event, and run.json's status
    when the cassette is a run folder."""
    start = next((e for e in read_lines(events) if e.get("type") == "run_start"), None)
    if start is None:
        raise FlowrunError(f"cassette {display_path(events)} has no run_start event", "record it again")
    return run_record(dict(start))


async def run_test_file(
    path: str | Path, *, keep: Path | None = None, sandbox: Mode | None = None
) -> CaseReport:
    """Replay one test file's cassette and check its expectations. `keep`: replay into
    `keep/<name>` and leave it there (else a temporary folder, removed afterwards)."""
    path = Path(path)
    started = time.monotonic()
    report = CaseReport(path, path.name.split(".")[0])
    try:
        spec, report.source = read_test_file(path)
        report.name = spec.name
        report.checks = await _replayed_checks(path, spec, keep, sandbox)
    except FlowrunError as e:
        report.error = str(e)
    report.duration_s = time.monotonic() - started
    return report


async def _replayed_checks(
    path: Path, spec: FlowTestManifest, keep: Path | None, sandbox: Mode | None
) -> list[Check]:
    here = path.parent
    events = cassette_events(here / spec.cassette)
    if not events.is_file():
        raise UsageError(
            f"{path.name}: cassette '{spec.cassette}' not found", "record it with `flowrun record`"
        )
    meta = cassette_meta(events)
    options = api.replay_options(meta, sandbox=sandbox or spec.sandbox)
    workflow = api.load(here / spec.workflow, list(options.overrides), prefetch=False)  # offline
    given = spec.inputs if spec.inputs is not None else dict(meta.get("inputs") or {})
    inputs = resolve_inputs(workflow.spec.inputs, given, workflow.name)
    target = keep / spec.name if keep is not None else Path(tempfile.mkdtemp(prefix="flowrun-test-"))
    if keep is not None:
        shutil.rmtree(target, ignore_errors=True)
    try:
        result, ledger = await api.replay_events(
            workflow, events, {**meta, "inputs": inputs}, target, options
        )
        calls = sum(1 for _ in ledger.responses)
        if ledger.divergence is not None:
            from flowrun.runtime.replay.diff import divergence_details

            details = divergence_details(events, target / "events.jsonl", ledger.divergence)
            detail = ledger.divergence.message + "".join(f"\n    {line}" for line in details[:12])
            return [Check("cassette", False, detail, ("cassette",))]
        replayed = Replayed(
            result.status,
            result.message,
            read_events(target / "events.jsonl"),
            target,
            result.usage,
            workflow.spec.output,
        )
        cassette = Check(
            "cassette", True, f"every model call came from the cassette ({calls} recorded)", ("cassette",)
        )
        return [cassette, *check_all(spec.expect, replayed)]
    finally:
        if keep is None:
            shutil.rmtree(target, ignore_errors=True)


# ---------------------------------------------------------------- recording


@dataclass
class Recording:
    """What `record_cassette` did: the live run, where its cassette went, and the test file
    (`drafted`: written from the run, else an existing one kept as it was)."""

    result: api.RunResult
    cassette: Path
    test_file: Path
    drafted: bool


def recording_target(test_file: Path, workflow: str | Path | None) -> tuple[str, api.Workflow, str]:
    """(test name, workflow, cassette path relative to the test file) of a recording: from the
    test file when it exists, else from `workflow` (cassettes/NAME next to the test file)."""
    if test_file.exists():
        spec, _ = read_test_file(test_file)
        return spec.name, api.load(test_file.parent / spec.workflow), spec.cassette
    if workflow is None:
        raise UsageError(f"{test_file} does not exist", "give the WORKFLOW to record for a new test file")
    name = test_file.name.split(".")[0]
    if not re.match(NAME, name):
        raise UsageError(
            f"'{name}' is not a test name", "name the file NAME.flowrun.yaml (letters, digits, _ and -)"
        )
    return name, api.load(workflow), f"cassettes/{name}"


async def record_cassette(
    test_file: str | Path,
    workflow: str | Path | None = None,
    inputs: Mapping[str, object] | None = None,
    options: RunOptions | None = None,
    **changes: Any,
) -> Recording:
    """Run a workflow live and keep the run as a test file's cassette (`flowrun record`). An
    existing test file names the workflow, its inputs (unless `inputs` are given) and the
    cassette, which is replaced, its expectations kept. A new one needs `workflow`: the
    cassette goes to cassettes/NAME/ next to it and the test file is drafted from the run.
    `options` and the keyword arguments are `Workflow.run`'s (model, dry_run, stream,
    sandbox, ..., on_event, approve)."""
    test_file = Path(test_file)
    exists = test_file.exists()
    name, wf, cassette_rel = recording_target(test_file, workflow)
    if inputs is None and exists:
        inputs = dict(read_test_file(test_file)[0].inputs or {})
    values = dict(inputs or {})
    scratch = Path(tempfile.mkdtemp(prefix="flowrun-record-"))
    try:
        result = await wf.run(values, options, run_dir=scratch / name, **changes)
        cassette = test_file.parent / cassette_rel
        save_cassette(result.run_dir, cassette, wf.spec.output)
        if not exists:
            _write_draft(test_file, name, wf, cassette_rel, values, result)
        kept = cassette / wf.spec.output if wf.spec.output else None
        output = kept if kept is not None and kept.is_file() else None
        return Recording(replace(result, run_dir=cassette, output=output), cassette, test_file, not exists)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _write_draft(
    test_file: Path,
    name: str,
    wf: api.Workflow,
    cassette: str,
    inputs: Mapping[str, object],
    result: api.RunResult,
) -> None:
    relative = os.path.relpath(wf.path.resolve(), test_file.parent.resolve())
    given = {k: v for k, v in inputs.items() if v is not None}  # unset optional inputs left out
    text = draft_test_file(name, relative, cassette, given, result.run_dir, result, wf.spec.output)
    test_file.parent.mkdir(parents=True, exist_ok=True)
    test_file.write_text(text, encoding="utf-8")


def save_cassette(run_dir: Path, cassette: Path, output: str | None) -> None:
    """Keep what a replay needs from a run folder (its log, run.json, usage.json, and the
    declared output for reference) as the cassette folder, replacing an older one."""
    if cassette.exists():
        shutil.rmtree(cassette)
    cassette.mkdir(parents=True)
    for name in [*CASSETTE_FILES, *([output] if output else [])]:
        source = run_dir / name
        if source.is_file():
            (cassette / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, cassette / name)


def draft_test_file(
    name: str,
    workflow: str,
    cassette: str,
    inputs: Mapping[str, object],
    run_dir: Path,
    result: api.RunResult,
    output: str | None,
) -> str:
    """A test file for a run just recorded: its status, the tools it called (in no particular
    order), and its output file; edit the expectations to say what matters."""
    calls: list[dict[str, str]] = []
    for event in read_lines(run_dir / "events.jsonl"):
        if event.get("type") == "tool_call":
            entry = {"tool": str(event.get("tool")), "agent": str(event.get("agent"))}
            if entry not in calls:
                calls.append(entry)
    expect: dict[str, object] = {"status": result.status}
    if calls:
        expect["tool_calls"] = calls
    if output and (run_dir / output).is_file():
        expect["files"] = [output]
    body = {
        "version": 1,
        "kind": "test",
        "name": name,
        "workflow": workflow,
        "cassette": cassette,
        "inputs": inputs,
        "expect": expect,
    }
    header = (
        f"# Recorded by `flowrun record` from a run of {workflow}.\n"
        "# `flowrun test` replays the cassette offline and checks `expect`: add what matters\n"
        "# (output.contains / matches, tool call arguments, files, a budget);\n"
        "# see the docs: how-to/testing.md.\n"
    )
    return header + yaml.safe_dump(body, sort_keys=False, allow_unicode=True)
