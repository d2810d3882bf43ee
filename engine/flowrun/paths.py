"""Where flowrun's built-in manifests live: inside the installed package (`_builtin/`), or at the
repository root when running from a source checkout; and whether a path a run needs has the
right type (a folder, a file). Two built-in roots follow a project's own
folder on the search path: the engine's (`agents.d/`, `tools.d/`, `prompts/`, `schema/`), then
the shipped example rosters' (`_builtin/examples/`, `examples/` in a checkout: their agents,
prompts, tools, skills and output schemas), so a copy of an example workflow finds its roles."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path, PurePosixPath

from flowrun.errors import UsageError

BUILTIN_DIRS = ("agents.d", "tools.d", "prompts", "schema")
# the folders of the examples' root a workflow elsewhere may use (its workflows are templates)
EXAMPLE_DIRS = ("agents.d", "tools.d", "prompts", "skills", "schemas")
MANIFEST_DIRS = ("agents.d", "tools.d", "models.d")  # folders of manifests on every search-path root


def cache_base() -> Path | None:
    """flowrun's cache folder: FLOWRUN_CACHE_DIR, else $XDG_CACHE_HOME/flowrun or ~/.cache/flowrun;
    None when FLOWRUN_NO_CACHE=1. What is in it can be deleted at any time."""
    if os.environ.get("FLOWRUN_NO_CACHE", "").lower() in ("1", "true", "yes"):
        return None
    configured = os.environ.get("FLOWRUN_CACHE_DIR")
    if configured:
        return Path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "flowrun"


def claim_folder(named: Callable[[int], Path]) -> Path:
    """The first of `named(1)`, `named(2)`, ... that mkdir makes here: a folder claimed so is
    never shared by two processes started at once. An OSError but FileExistsError is raised."""
    n = 1
    while True:
        folder = named(n)
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            n += 1


@cache
def builtin_root() -> Path:
    here = Path(__file__).resolve().parent
    packaged = here / "_builtin"
    if (packaged / "schema").is_dir():
        return packaged
    return here.parents[1]  # a checkout: engine/flowrun/ -> the repository root


@cache
def examples_root() -> Path:
    """The shipped example rosters: `_builtin/examples/` in the wheel, `examples/` in a checkout."""
    return builtin_root() / "examples"


@cache
def builtin_corpus() -> Path | None:
    """The offline search corpus shipped with flowrun (the Python docs pages of the research
    examples): `_builtin/examples/corpus/` in the wheel, `examples/corpus/` in a checkout."""
    folder = examples_root() / "corpus"
    return folder if folder.is_dir() else None


def copy_source(workflow_dir: Path, rel: str) -> Path | None:
    """The file or folder a workflow's `workspace.copy` entry names: next to the workflow, else
    (for `corpus`) the corpus shipped with flowrun, so a copy of an example that copies the
    corpus works from any folder. None when neither exists."""
    here = workflow_dir / rel
    if is_file(here) or is_dir(here):
        return here
    if os.path.normpath(rel) == "corpus":
        return builtin_corpus()
    return None


def builtin_roots() -> tuple[Path, Path]:
    """The engine's built-in root, then the examples' (both resolved)."""
    return builtin_root().resolve(), examples_root().resolve()


def is_builtin_file(path: Path | str, project_root: Path | None = None) -> bool:
    """True for a file of the built-in agents.d/, tools.d/, prompts/ or schema/, or of the
    examples' agents.d/, tools.d/, prompts/, skills/ or schemas/, unless that root is
    `project_root` (the project being checked is the built-in folder itself)."""
    resolved = Path(path).resolve()
    own = project_root.resolve() if project_root is not None else None
    core, examples = builtin_roots()
    return any(
        root != own and any(resolved.is_relative_to(root / folder) for folder in folders)
        for root, folders in ((core, BUILTIN_DIRS), (examples, EXAMPLE_DIRS))
    )


def is_builtin_root(root: Path, project_root: Path) -> bool:
    """A search-path root that is one of the built-ins, not the project's own folder."""
    resolved = root.resolve()
    return resolved != project_root.resolve() and resolved in builtin_roots()


def search_roots(project_root: Path) -> list[Path]:
    """Where a project's manifests are looked up: its own folder first, then the engine's
    built-ins, then the examples' roles (each once)."""
    roots = [project_root.resolve()]
    for root in builtin_roots():
        if root not in roots:
            roots.append(root)
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


def need_folder(root: Path, target: Path, what: str) -> None:
    """UsageError when `target` (under `root`), or a folder on the way to it, is not a folder."""
    _parents_are_folders(root, target, what)
    if exists(target) and not is_dir(target):
        raise UsageError(
            f"{what}: {display_path(target)} is a file, not a folder",
            "rename or move the file, or pick another path",
        )


def need_file(root: Path, target: Path, what: str) -> None:
    """UsageError when `target` (under `root`) is a folder, or a folder on the way to it is a file."""
    _parents_are_folders(root, target, what)
    if is_dir(target):
        raise UsageError(
            f"{what}: {display_path(target)} is a folder, not a file",
            "rename or move the folder, or pick another path",
        )


def _parents_are_folders(root: Path, target: Path, what: str) -> None:
    """(And no name on the way too long for a filesystem: UsageError naming it.)"""
    refuse_long_name(target, what)
    try:
        parts = target.relative_to(root).parts[:-1]
    except ValueError:
        return
    here = root
    for part in parts:
        here = here / part
        if not exists(here):
            return
        if not is_dir(here):
            raise UsageError(
                f"{what}: {display_path(here)} is a file, where a folder is needed",
                "rename or move the file, or pick another path",
            )


def exists(path: Path) -> bool:
    """A path that is there, a dangling symlink included; False for one that cannot be looked
    at (a name too long for the system, a folder it may not search, a NUL in it)."""
    try:
        return os.path.lexists(path)
    except (OSError, ValueError):
        return False


def is_file(path: Path) -> bool:
    """`path.is_file()` that is False, never an error, for a path that cannot be looked at (a
    name longer than the system allows, a folder it may not search, a NUL in it): what a
    manifest or an input names is looked for with these."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def is_dir(path: Path) -> bool:
    """`path.is_dir()` that is False for a path that cannot be looked at (see is_file)."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


NAME_MAX = 255  # bytes in one name on Linux's and macOS's filesystems


def long_name(path: str | Path) -> str | None:
    """What is wrong with the first name in `path` longer than a filesystem allows (NAME_MAX
    bytes of UTF-8), the name cut, for a message; None when every name fits."""
    for part in PurePosixPath(str(path).replace("\\", "/")).parts:
        size = len(part.encode("utf-8", "surrogateescape"))
        if size > NAME_MAX:
            return f"the name {part[:40]}... is {size} bytes long (at most {NAME_MAX})"
    return None


def fitting_name(name: str) -> str:
    """`name` when a filesystem takes it; else cut to fit, ending with a digest of the whole, so
    the same long name always gives the same short one (a default folder found again)."""
    data = name.encode("utf-8", "surrogateescape")
    if len(data) <= NAME_MAX:
        return name
    tail = "-" + hashlib.sha256(data).hexdigest()[:12]
    cut = data[: NAME_MAX - len(tail)].decode("utf-8", "ignore")  # no character cut in two
    return cut + tail


def refuse_long_name(path: str | Path, what: str, hint: str = "shorten it") -> None:
    """UsageError `WHAT: the name ... is N bytes long` for a path no filesystem takes."""
    too_long = long_name(path)
    if too_long is not None:
        raise UsageError(f"{what}: {too_long}", hint)
