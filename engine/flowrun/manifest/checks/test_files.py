"""`validate` on `flowrun test` files (`kind: test`): the workflow and the cassette they name
exist, and their regexes compile."""

from __future__ import annotations

import re
from pathlib import Path

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.project import Loaded, Project
from flowrun.manifest.specs import FlowTestManifest
from flowrun.paths import is_dir, is_file
from flowrun.regexes import compile_regex


def cassette_events(cassette: Path) -> Path:
    """The event log of a cassette: a run folder's events.jsonl, or the file itself."""
    return cassette / "events.jsonl" if is_dir(cassette) else cassette


def check_test_files(project: Project) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for loaded in project.tests:
        out += _check_test_file(loaded)
    return out


def _check_test_file(loaded: Loaded[FlowTestManifest]) -> list[Diagnostic]:
    spec, src = loaded.spec, loaded.source
    here = src.path.parent
    out: list[Diagnostic] = []
    if not is_file(here / spec.workflow):
        message = f"workflow file '{spec.workflow}' not found"
        out.append(src.diag(("workflow",), message, "the path is relative to the test file", "missing-file"))
    if not is_file(cassette_events(here / spec.cassette)):
        message = f"cassette '{spec.cassette}' not found (a run folder with events.jsonl, or an events file)"
        hint = "record one with `flowrun record` (see `flowrun record --help`)"
        out.append(src.diag(("cassette",), message, hint, "missing-file"))
    for key in ("output", "message"):
        texts = getattr(spec.expect, key)
        if texts is not None and texts.matches is not None:
            try:
                compile_regex(texts.matches)
            except re.error as e:
                hint = "quote the pattern with single quotes in YAML so backslashes stay"
                out.append(src.diag(("expect", key, "matches"), f"invalid regex: {e}", hint, "bad-regex"))
    return out
