"""`flowrun validate`: find manifests under the given paths, load each project they belong to,
and collect every problem in one pass."""

from __future__ import annotations

import os
import re
from pathlib import Path

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.paths import MANIFEST_DIRS, display_path

SKIP_DIRS = {
    "runs",
    "node_modules",
    "__pycache__",
    "build",
    "dist",
    "venv",
    "prompts",
    "skills",
    "corpus",
    "schema",
}
HAS_KIND = re.compile(r"^kind:\s*\S", re.MULTILINE)
HEAD_BYTES = 1_000_000  # yaml_limits.MAX_FILE_BYTES (not imported: it brings the YAML parser)


def _is_yaml(path: Path) -> bool:
    return path.suffix in (".yaml", ".yml")


def _looks_like_manifest(path: Path) -> bool:
    """A `kind:` line near the top (only the first HEAD_BYTES are read: a bigger file that
    looks like a manifest is then reported as too large)."""
    try:
        with path.open("rb") as f:
            head = f.read(HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return False
    return bool(HAS_KIND.search(head))


def find_roots(paths: list[Path]) -> dict[Path, list[Path] | None]:
    """Project roots → the workflow/script files to check there (None: all in the root)."""
    roots: dict[Path, list[Path] | None] = {}

    def add(root: Path, files: list[Path] | None) -> None:
        root = root.resolve()
        if root in roots and roots[root] is None:
            return
        if files is None:
            roots[root] = None
        else:
            roots.setdefault(root, [])
            existing = roots[root] or []
            roots[root] = existing + [f for f in files if f not in existing]

    for path in paths:
        if path.is_file():
            if path.parent.name in MANIFEST_DIRS:
                add(path.parent.parent, [])
            else:
                add(path.parent, [path.resolve()])
            continue
        for folder in _walk_dirs(path):
            if folder.name in MANIFEST_DIRS:
                add(folder.parent, [])
                continue
            tops = [f.resolve() for f in sorted(folder.iterdir()) if f.is_file() and _is_yaml(f)]
            tops = [f for f in tops if _looks_like_manifest(f)]
            if tops or any((folder / d).is_dir() for d in MANIFEST_DIRS):
                add(folder, tops)
    return roots


def _walk_dirs(top: Path) -> list[Path]:
    out = [top]
    for child in sorted(top.iterdir()):
        if child.is_dir() and not child.name.startswith(".") and child.name not in SKIP_DIRS:
            if child.name in MANIFEST_DIRS:
                out.append(child)
            else:
                out.extend(_walk_dirs(child))
    return out


def validate_paths(paths: list[Path]) -> tuple[list[Diagnostic], int]:
    """All diagnostics for the manifests under `paths`, and how many files were checked. Each
    project folder's result comes from the check cache while none of its files changed."""
    from flowrun.manifest.checked import check_root

    diagnostics: list[Diagnostic] = []
    checked: set[str] = set()
    for special in [p for p in paths if not p.is_file() and not p.is_dir()]:
        # a FIFO, socket or device named on the command line: refused, never opened for reading
        from flowrun.manifest.yaml_source import load_source

        diagnostics += load_source(special, display_path(special))[1]
        checked.add(os.path.abspath(special))
    paths = [p for p in paths if p.is_file() or p.is_dir()]
    for root, files in find_roots(paths).items():
        found, files_checked = check_root(root, files)
        diagnostics += [d for d in found if d not in diagnostics]
        checked |= files_checked
    diagnostics.sort(key=lambda d: (d.file, d.line, d.column))
    return diagnostics, len(checked)
