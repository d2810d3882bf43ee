"""An eval set as `flowrun eval` runs it: the checked manifest, its workflow's path, and its
cases, each with its graders (the eval set's, then its own) and their names."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flowrun.errors import UsageError
from flowrun.evals.graders.judge import JudgeGrader
from flowrun.manifest.checks.eval_files import evalset_cases, grader_names
from flowrun.manifest.diagnostics import ManifestInvalid
from flowrun.manifest.eval_specs import EvalSetManifest, GraderBase
from flowrun.manifest.project import Loaded, display_path, load_project


@dataclass(frozen=True, slots=True)
class Case:
    id: str
    inputs: dict[str, object]
    expected: object
    graders: list[tuple[GraderBase, str]]  # (grader, its name): the eval set's, then the case's


@dataclass
class EvalSet:
    """A checked eval set, its cases and its workflow."""

    path: Path
    spec: EvalSetManifest
    cases: list[Case]
    workflow_path: Path

    @property
    def here(self) -> Path:
        return self.path.parent

    def judges(self) -> list[tuple[JudgeGrader, str]]:
        seen: dict[str, JudgeGrader] = {}
        for case in self.cases:
            for grader, name in case.graders:
                if isinstance(grader, JudgeGrader):
                    seen.setdefault(f"{name}|{grader.judge.model}", grader)
        return [(g, key.split("|")[0]) for key, g in seen.items()]

    def grader_min(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for case in self.cases:
            for grader, name in case.graders:
                if grader.min_score is not None:
                    out.setdefault(name, grader.min_score)
        return out


def load_evalset(path: str | Path) -> EvalSet:
    """The eval set at `path`, checked as `validate` checks it; ManifestInvalid lists its errors."""
    from flowrun.manifest.checks.eval_files import check_evalset

    path = Path(path).resolve()
    if not path.is_file():
        raise UsageError(f"{path} does not exist", "give the eval set file (NAME.eval.yaml)")
    project = load_project(path.parent, [path])
    loaded = next((e for e in project.evalsets if e.source.path.resolve() == path), None)
    own = [d for d in project.errors if d.file == display_path(path)]
    if loaded is None:
        if not own:
            raise UsageError(f"{display_path(path)} is not an eval set", "set `kind: evalset`")
        raise ManifestInvalid(str(path), own)
    errors = own + [d for d in check_evalset(loaded, project) if d.severity == "error"]
    if errors:
        raise ManifestInvalid(str(path), errors)
    return EvalSet(path, loaded.spec, _cases(loaded), (path.parent / loaded.spec.workflow).resolve())


def _cases(loaded: Loaded[EvalSetManifest]) -> list[Case]:
    located, _ = evalset_cases(loaded)
    out = []
    for item in located:
        graders: list[GraderBase] = [*loaded.spec.graders, *item.case.graders]
        named = list(zip(graders, grader_names(graders), strict=True))
        out.append(Case(item.case.id, dict(item.case.inputs), item.case.expected, named))
    return out


def cassette_folder(evalset: EvalSet) -> Path:
    """Where the eval set's recording is kept (`cassettes:`, default cassettes/NAME next to it)."""
    return evalset.here / (evalset.spec.cassettes or f"cassettes/{evalset.spec.name}")


def run_id(case: str, repeat: int) -> str:
    """The name of a case's run folder (and batch item): CASE.rN."""
    return f"{case}.r{repeat}"
