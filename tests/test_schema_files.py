"""The committed JSON Schema files, used the way editors and CI use them: `check-jsonschema`
(a dev dependency) with each shipped schema over the shipped manifests and the examples."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO

SCHEMAS = REPO / "schema"
MANIFESTS = {
    "agent": sorted([*REPO.glob("agents.d/*.yaml"), *REPO.glob("examples/**/agents.d/*.yaml")]),
    "tool": sorted([*REPO.glob("tools.d/*.yaml"), *REPO.glob("examples/**/tools.d/*.yaml")]),
    "workflow": sorted(p for p in REPO.glob("examples/**/*.yaml") if "\nkind: workflow" in p.read_text()),
    "evalset": sorted(p for p in REPO.glob("examples/**/*.yaml") if "\nkind: evalset" in p.read_text()),
}


def check_jsonschema(schema: Path, files: list[Path]) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "check-jsonschema"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "check_jsonschema"]
    return subprocess.run(
        [*command, "--schemafile", str(schema), *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("kind", sorted(MANIFESTS))
def test_check_jsonschema_accepts_the_shipped_manifests(kind: str) -> None:
    files = MANIFESTS[kind]
    assert files, kind
    proc = check_jsonschema(SCHEMAS / f"{kind}.schema.json", files)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_shipped_manifest_is_checked_above() -> None:
    """Every YAML manifest shipped at the top level or in examples/ is in one of the lists above."""
    import re

    found = [
        p for top in ("agents.d", "tools.d", "models.d", "examples") for p in REPO.glob(f"{top}/**/*.yaml")
    ]
    shipped = {p for p in found if re.search(r"(?m)^version: 1$", p.read_text())}
    assert len(shipped) > 30
    assert shipped <= {p for files in MANIFESTS.values() for p in files}


def test_every_shipped_schema_is_used() -> None:
    shipped = {p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json")}
    assert shipped == {*MANIFESTS, "models", "script", "test"}  # test: tests/test_flowrun_test.py


@pytest.mark.parametrize("kind", ["agent", "tool"])
def test_kind_may_be_left_out_in_its_folder(tmp_path: Path, kind: str) -> None:
    """The README says `kind` is optional inside agents.d/ and tools.d/: the schema agrees."""
    source = MANIFESTS[kind][0]
    stripped = tmp_path / source.name
    stripped.write_text(
        "".join(line for line in source.read_text().splitlines(keepends=True) if not line.startswith("kind:"))
    )
    assert check_jsonschema(SCHEMAS / f"{kind}.schema.json", [stripped]).returncode == 0
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(source.read_text().replace(f"kind: {kind}", "kind: workflow"))
    assert check_jsonschema(SCHEMAS / f"{kind}.schema.json", [wrong]).returncode == 1


def test_models_and_script_schemas_check_their_manifests(tmp_path: Path) -> None:
    models = tmp_path / "models.yaml"
    models.write_text("version: 1\nmodels:\n  fast: {preset: deepseek, model: deepseek-chat}\n")
    assert check_jsonschema(SCHEMAS / "models.schema.json", [models]).returncode == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nmodels:\n  fast: {preset: deepseek, modle: deepseek-chat}\n")
    assert check_jsonschema(SCHEMAS / "models.schema.json", [bad]).returncode == 1
    script = REPO / "tests" / "data" / "legacy_v1" / "legacy.script.yaml"
    assert check_jsonschema(SCHEMAS / "script.schema.json", [script]).returncode == 0
    workflow_without_kind = tmp_path / "wf.yaml"
    workflow_without_kind.write_text("version: 1\nname: w\nentry: a\n")
    assert check_jsonschema(SCHEMAS / "workflow.schema.json", [workflow_without_kind]).returncode == 1
