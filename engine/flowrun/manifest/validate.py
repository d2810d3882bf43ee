"""`flowrun validate`: find manifests under the given paths, load each project they belong to,
and collect every problem in one pass."""

from __future__ import annotations

import re
from pathlib import Path

from flowrun.manifest.crossref import check_project
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.mcp_config import MCP_FILE
from flowrun.manifest.project import MANIFEST_DIRS, display_path, load_project
from flowrun.manifest.skill_lint import SKILL_FILE, lint_skill, skill_folders
from flowrun.manifest.yaml_source import load_source
from flowrun.paths import builtin_root, is_builtin_file
from flowrun.yaml_limits import MAX_FILE_BYTES

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
    "schemas",
}
HAS_KIND = re.compile(r"^kind:\s*\S", re.MULTILINE)


def _is_yaml(path: Path) -> bool:
    return path.suffix in (".yaml", ".yml")


def _looks_like_manifest(path: Path) -> bool:
    """A `kind:` line near the top (only the first MAX_FILE_BYTES are read: a bigger file that
    looks like a manifest is then reported as too large)."""
    try:
        with path.open("rb") as f:
            head = f.read(MAX_FILE_BYTES).decode("utf-8", errors="replace")
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
        claude = _claude_root(path)
        if claude is not None:  # .claude/, .claude/agents/x.md, .mcp.json: their project, no workflow
            add(claude, [])
            continue
        if path.is_file():
            if path.name == SKILL_FILE:
                continue  # a skill alone: see skill_targets
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
            if (
                tops
                or any((folder / d).is_dir() for d in (*MANIFEST_DIRS, ".claude"))
                or (folder / MCP_FILE).is_file()
            ):
                add(folder, tops)
    return roots


def _claude_root(path: Path) -> Path | None:
    """The project a Claude Code path belongs to: the folder holding `.claude/` or `.mcp.json`."""
    resolved = path.resolve()
    if resolved.name == MCP_FILE and resolved.is_file():
        return resolved.parent
    parts = resolved.parts
    if ".claude" not in parts:
        return None
    index = len(parts) - 1 - parts[::-1].index(".claude")
    return Path(*parts[:index])


def skill_targets(paths: list[Path], roots: list[Path]) -> list[Path]:
    """Skill folders to lint: those of each project root, and the ones the paths name (a
    SKILL.md, a skill folder, or a folder of skills)."""
    found: list[Path] = []
    for root in roots:
        found += skill_folders(root)
    for path in paths:
        resolved = path.resolve()
        if resolved.is_file() and resolved.name == SKILL_FILE:
            found.append(resolved.parent)
        elif (resolved / SKILL_FILE).is_file():
            found.append(resolved)
        elif resolved.is_dir():
            found += sorted(p for p in resolved.iterdir() if (p / SKILL_FILE).is_file())
    return list(dict.fromkeys(p.resolve() for p in found))


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
    """All diagnostics for the manifests under `paths`, and how many files were checked."""
    diagnostics: list[Diagnostic] = []
    checked: set[str] = set()
    builtin = builtin_root().resolve()
    for special in [p for p in paths if not p.is_file() and not p.is_dir()]:
        # a FIFO, socket or device named on the command line: refused, never opened for reading
        diagnostics += load_source(special, display_path(special))[1]
        checked.add(display_path(special))
    paths = [p for p in paths if p.is_file() or p.is_dir()]
    roots = find_roots(paths)
    for folder in skill_targets(paths, list(roots)):
        display = display_path(folder / SKILL_FILE)
        diagnostics += [d for d in lint_skill(folder, display) if d not in diagnostics]
        checked.add(display)
    named = {p.resolve() for p in paths if p.is_file()}
    for root, files in roots.items():
        project = load_project(root, files)
        # a file named on the command line was read and checked, whatever its kind
        checked.update(display_path(f) for f in files or [] if f in named)
        own_builtins = root == builtin
        found = project.diagnostics + check_project(project, include_builtins=own_builtins)
        for d in found:
            if not own_builtins and is_builtin_file(d.file):
                continue
            if d not in diagnostics:
                diagnostics.append(d)
        for group in (project.agent_layers.values(), [[t] for t in project.tools.values()]):
            for layers in group:
                for loaded in layers:
                    if own_builtins or not loaded.builtin:
                        checked.add(loaded.source.display)
        checked.update(m.source.display for m in project.models.values() if own_builtins or not m.builtin)
        checked.update(w.source.display for w in project.workflows)
        checked.update(s.source.display for s in project.scripts)
        checked.update(m.source.display for m in project.mcp_servers.values())
        checked.update(d.file for d in found if own_builtins or not is_builtin_file(d.file))
        checked.update(display_path(f) for f in files or [])  # named or found top-level files
    diagnostics.sort(key=lambda d: (d.file, d.line, d.column))
    return diagnostics, len(checked)
