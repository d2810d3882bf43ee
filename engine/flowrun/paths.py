"""Where flowrun's built-in manifests live: inside the installed package (`_builtin/`), or at the
repository root when running from a source checkout."""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path, PurePosixPath

BUILTIN_DIRS = ("agents.d", "tools.d", "prompts", "schema")
MANIFEST_DIRS = ("agents.d", "tools.d", "models.d")  # folders of manifests on every search-path root


@cache
def builtin_root() -> Path:
    here = Path(__file__).resolve().parent
    packaged = here / "_builtin"
    if (packaged / "schema").is_dir():
        return packaged
    return here.parents[1]  # a checkout: engine/flowrun/ -> the repository root


@cache
def builtin_corpus() -> Path | None:
    """The offline search corpus shipped with flowrun (the Python docs pages of the research
    examples): `_builtin/corpus/` in the wheel, `examples/corpus/` in a checkout."""
    root = builtin_root()
    for folder in (root / "corpus", root / "examples" / "corpus"):
        if folder.is_dir():
            return folder
    return None


def copy_source(workflow_dir: Path, rel: str) -> Path | None:
    """The file or folder a workflow's `workspace.copy` entry names: next to the workflow, else
    (for `corpus`) the corpus shipped with flowrun, so a copy of an example that copies the
    corpus works from any folder. None when neither exists."""
    here = workflow_dir / rel
    if here.exists():
        return here
    if os.path.normpath(rel) == "corpus":
        return builtin_corpus()
    return None


def is_builtin_file(path: Path | str) -> bool:
    """True for a file of the built-in agents.d/, tools.d/, prompts/ or schema/."""
    resolved = Path(path).resolve()
    root = builtin_root().resolve()
    return any(resolved.is_relative_to(root / folder) for folder in BUILTIN_DIRS)


def search_roots(project_root: Path) -> list[Path]:
    """Where a project's manifests are looked up: its own folder first, then the built-ins."""
    builtin = builtin_root()
    roots = [project_root.resolve()]
    if builtin.resolve() != roots[0]:
        roots.append(builtin)
    return roots


def display_path(path: Path) -> str:
    """A path as diagnostics print it: relative to the current folder when it can be."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def safe_relative(path: str) -> bool:
    """A manifest path that stays inside the folder it is relative to: not empty, not
    absolute, no `..`."""
    p = PurePosixPath(path.replace("\\", "/"))
    return not p.is_absolute() and ".." not in p.parts and bool(path.strip())
