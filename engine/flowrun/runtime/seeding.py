"""What a run writes into the agents' folder before it starts (`workspace.files`, then
`workspace.copy`), and the places its workflow names, checked before anything is written.

In a folder of the user's (--workdir, workspace.dir) nothing that exists is replaced: a seed
file or a copied file that is already there is kept, and the run says so (a `seed_kept` event:
"kept your TASK.md; the roster's version is not written"), unless the seed says
`overwrite: true`. A run folder that is the agents' root holds no files of the user's: seeds
are written there as they are (an engine file's name is refused).

A dry run writes nothing outside its run folder: its agents work in `<run folder>/workdir/`, a
stand-in for the user's folder that holds what the real run would find there: the seeds (the
user's own version where theirs is kept) and the copies. Its decisions are the real run's: the
same files are reported kept, the same wrong paths refused.

A path that exists with the wrong type (a file where a folder is needed, a folder where a file
goes) is a one-line UsageError naming it, never a traceback: seeds and copies, the workflow's
`output`, and the steps' `workdir`, `output` and `collect` paths that only the inputs decide."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from flowrun.atomic_files import replace_beneath
from flowrun.errors import ManifestError, UsageError
from flowrun.events import SeedKeptEvent
from flowrun.manifest.checks.step_checks import step_templates
from flowrun.manifest.specs import seed
from flowrun.manifest.templates import WORKFLOW_BUILTINS, analyse, render
from flowrun.paths import copy_source, display_path, exists, is_dir, is_file, need_file, need_folder
from flowrun.runtime.durable.run_folder import PROTECTED
from flowrun.runtime.run import Run

FOLDER_KEYS = ("workdir",)  # step keys that name a folder; the other path keys name files


@dataclass
class SeedPlan:
    """What seeding will do: (relative path, text) to write, user files kept, copies."""

    write: list[tuple[str, str]] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    copies: list[tuple[str, Path]] = field(default_factory=list)  # (workspace.copy entry, source)


def user_folder(run: Run) -> Path | None:
    """The folder of the user's the agents' paths mean (None: the run folder is their root)."""
    workdir = run.options.workdir
    return workdir.resolve() if workdir is not None else None


def plan_seeds(run: Run) -> SeedPlan:
    """Every seed rendered and checked against the folder it goes to (UsageError for a path of
    the wrong type, or an engine file's name in a run folder); nothing is written."""
    plan = SeedPlan()
    ws = run.spec.workspace
    users = user_folder(run)
    variables = run.template_vars()
    for rel, value in ws.files.items():
        entry = seed(value)
        text = render(entry.content, variables, what=f"seed file {rel}")
        if users is None:
            _refuse_engine_name(rel, "workspace.files")
        else:
            target = users / rel
            need_file(users, target, f"workspace.files: {rel}")
            if exists(target) and not entry.overwrite:
                plan.kept.append(rel)
                continue
        plan.write.append((rel, text))
    for rel in ws.copy_paths:
        source = copy_source(run.workflow_dir, rel)
        if source is None:
            raise ManifestError(f"workspace.copy: '{rel}' not found next to the workflow", "check the path")
        plan.copies.append((rel, source))
    return plan


def write_seeds(run: Run, plan: SeedPlan) -> list[SeedKeptEvent]:
    """Write the plan into the agents' folder; the events that say what was kept. In a dry
    run the kept files are copied from the user's folder into its stand-in."""
    root = run.workspace
    users = user_folder(run)
    kept = [_kept_event(rel) for rel in plan.kept]
    try:
        for rel, text in plan.write:
            replace_beneath(root, root / rel, text)
        if users is not None and users != root:  # a dry run: its stand-in shows the user's files
            for rel in plan.kept:
                _copy_file(users / rel, root / rel)
        for rel, source in plan.copies:
            name = (run.workflow_dir / rel).name
            found = _copy_entry(source, root / name, users / name if users is not None else None)
            if found:
                kept.append(_kept_copies(name, found, is_dir(source)))
    except OSError as e:
        where = e.filename or root
        raise UsageError(
            f"cannot seed the agents' folder: {e.strerror or e} ({where})",
            "check that the folder can be written",
        ) from None
    return kept


def preflight(run: Run) -> None:
    """What a new run checks before its folder exists (the places it names, its seeds), so a
    path of the wrong type leaves nothing behind; prepare() checks again under the lock."""
    check_places(run)
    plan_seeds(run)


def check_places(run: Run) -> None:
    """The places the workflow names that exist with the wrong type, before anything is
    written: the agents' folder itself, `output`, and each step path only the inputs decide
    (UsageError naming the first). Paths that depend on an iteration or an item are checked
    when the step comes to them."""
    root = user_folder(run) or run.run_real
    if run.options.workdir is not None:
        need_folder(Path(root.anchor), root, "the agents' folder (--workdir, workspace.dir)")
    if run.spec.output:
        need_file(root, root / run.spec.output, f"output {run.spec.output}")
    known = set(run.inputs) | (WORKFLOW_BUILTINS - {"iteration", "workspace"})
    for template in step_templates(run.spec.steps):
        info = analyse(template.text)
        if not template.path or info.error or not set(info.variables) <= known:
            continue
        rel = render(template.text, run.template_vars(), what="a step path").strip()
        key = str(template.parts[-1])
        if not rel:
            continue
        if key in FOLDER_KEYS:
            need_folder(root, root / rel, f"{key} {rel}")
        else:
            need_file(root, root / rel, f"{key} {rel}")


def _refuse_engine_name(rel: str, what: str) -> None:
    first = Path(rel).parts[0] if Path(rel).parts else rel
    if first in PROTECTED or f"{first}/" in PROTECTED:
        raise UsageError(
            f"{what}: {rel} is a file the engine keeps in the run folder", "give the seed another name"
        )


def _kept_event(rel: str) -> SeedKeptEvent:
    return SeedKeptEvent(path=rel, message=f"kept your {rel}; the roster's version is not written")


def _kept_copies(name: str, found: list[str], folder: bool) -> SeedKeptEvent:
    if not folder:
        return _kept_event(name)
    shown = ", ".join(found[:3]) + (", ..." if len(found) > 3 else "")
    message = f"kept {len(found)} file(s) of your {name}/ ({shown}); the roster's copies are not written"
    return SeedKeptEvent(path=f"{name}/", message=message)


def _copy_entry(source: Path, target: Path, mirror: Path | None) -> list[str]:
    """Copy a file or a folder to `target`, never over a file the user's folder already has
    (`mirror`: the same place in the user's folder, which is `target` itself unless this is a
    dry run; None in a run folder). The kept files' paths, relative to `target`'s parent."""
    if is_file(source):
        return _copy_one(source, target, mirror, target.parent)
    kept: list[str] = []
    for folder, dirs, files in os.walk(source):
        dirs.sort()
        rel = Path(folder).relative_to(source)
        here, there = target / rel, None
        need_folder(target.parent, here, f"workspace.copy: {display_path(source)}")
        if mirror is not None:
            there = mirror / rel
            need_folder(mirror.parent, there, f"workspace.copy: {display_path(source)}")
        here.mkdir(parents=True, exist_ok=True)
        for name in sorted(files):
            mirrored = there / name if there is not None else None
            kept += _copy_one(Path(folder) / name, here / name, mirrored, target.parent)
    return kept


def _copy_one(source: Path, target: Path, mirror: Path | None, base: Path) -> list[str]:
    what = f"workspace.copy: {display_path(source)}"
    need_file(base, target, what)
    if mirror is not None:
        need_file(mirror.parent, mirror, what)
        if exists(mirror):
            if mirror != target:
                _copy_file(mirror, target)  # a dry run's stand-in shows the user's file
            return [target.relative_to(base).as_posix()]
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(source, target)
    return []


def _copy_file(source: Path, target: Path) -> None:
    if is_file(source):
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
