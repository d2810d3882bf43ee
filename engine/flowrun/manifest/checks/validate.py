"""`flowrun validate`: find manifests under the given paths, load each project they belong to,
and collect every problem in one pass."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.paths import MANIFEST_DIRS, display_path, is_dir, is_file

if TYPE_CHECKING:
    from flowrun.manifest.foreign.registry import Detected

# the names below are those of yaml_limits, mcp_config and skill_lint, not imported from there:
# they bring the YAML parser and pydantic, which a warm `validate` never needs (a test keeps
# them equal)
HEAD_BYTES = 1_000_000  # yaml_limits.MAX_FILE_BYTES
MCP_FILE = ".mcp.json"  # mcp_config.MCP_FILE
SKILL_FILE = "SKILL.md"  # skill_lint.SKILL_FILE

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
        claude = _claude_root(path)
        if claude is not None:  # .claude/, .claude/agents/x.md, .mcp.json: their project, no workflow
            add(claude, [])
            continue
        if is_file(path):
            found = _file_root(path)
            if found is not None:
                add(*found)
            continue
        for folder in _walk_dirs(path):
            if folder.name in MANIFEST_DIRS:
                add(folder.parent, [])
                continue
            foreign = _foreign_in(folder)
            for entry in foreign:
                add(entry.parent, [entry])
            tops = _tops(folder, foreign)
            if (
                tops
                or any(is_dir(folder / d) for d in (*MANIFEST_DIRS, ".claude"))
                or is_file(folder / MCP_FILE)
            ):
                add(folder, tops)
    return roots


def _file_root(path: Path) -> tuple[Path, list[Path]] | None:
    """The project of a file named on the command line, and the top-level files to check there."""
    if path.name == SKILL_FILE:
        return None  # a skill alone: see skill_targets
    found = _foreign(path)
    if found is not None:  # another framework's file: its project, run as the workflow
        return found.entry.parent, [found.entry.resolve()]
    if path.parent.name in MANIFEST_DIRS:
        return path.parent.parent, []
    return path.parent, [path.resolve()]


def _tops(folder: Path, foreign: list[Path]) -> list[Path]:
    """The YAML files of `folder` that look like flowrun manifests (not another framework's)."""
    tops = [f.resolve() for f in sorted(folder.iterdir()) if is_file(f) and _is_yaml(f)]
    return [f for f in tops if f not in foreign and _looks_like_manifest(f) and _foreign(f) is None]


def _foreign(path: Path) -> Detected | None:
    """Another framework's project `path` is (a CrewAI crew, an ADK agent, a docker-agent file, ...)."""
    from flowrun.manifest.foreign.registry import detect

    return detect(path)


def _foreign_in(folder: Path) -> list[Path]:
    """The entry files of the other frameworks' projects in `folder` (resolved)."""
    from flowrun.manifest.foreign.registry import detect_in

    return [found.entry.resolve() for found in detect_in(folder)]


def _one_project_each(files: list[Path] | None) -> list[list[Path] | None]:
    """A folder's files to check, split so that each foreign file is checked as the project it
    is (docker-agent files side by side each have a `root` agent; examples folders hold many)."""
    if files is None:
        return [None]
    foreign = [f for f in files if _foreign(f) is not None]
    rest = [f for f in files if f not in foreign]
    parts: list[list[Path] | None] = [rest] if rest or not foreign else []
    return parts + [[f] for f in foreign]


def focus_of(paths: list[Path]) -> dict[Path, set[str]]:
    """Project roots → the files named on the command line in them (absolute paths), for the
    roots no named folder covers: those report only the named files' problems and what they
    use (checks/focus.py)."""
    whole: set[Path] = set()
    named: dict[Path, set[str]] = {}
    for path in paths:
        if is_dir(path):
            whole |= set(find_roots([path]))
        elif is_file(path) and path.name != SKILL_FILE and _foreign(path) is None:
            for root in find_roots([path]):
                named.setdefault(root, set()).add(os.path.abspath(path))
    return {root: files for root, files in named.items() if root not in whole}


def _claude_root(path: Path) -> Path | None:
    """The project a Claude Code path belongs to: the folder holding `.claude/` or `.mcp.json`."""
    resolved = path.resolve()
    if resolved.name == MCP_FILE and is_file(resolved):
        return resolved.parent
    parts = resolved.parts
    if ".claude" not in parts:
        return None
    index = len(parts) - 1 - parts[::-1].index(".claude")
    return Path(*parts[:index])


def named_skills(paths: list[Path], roots: list[Path]) -> list[Path]:
    """Skill folders the paths name (a SKILL.md, a skill folder, or a folder of skills) that are
    not in a project root's own skill library (those are linted with their project)."""
    found: list[Path] = []
    for path in paths:
        resolved = path.resolve()
        if is_file(resolved) and resolved.name == SKILL_FILE:
            found.append(resolved.parent)
        elif is_file(resolved / SKILL_FILE):
            found.append(resolved)
        elif is_dir(resolved):
            found += sorted(p for p in resolved.iterdir() if is_file(p / SKILL_FILE))
    libraries = {lib for root in roots for lib in (root / "skills", root / ".claude" / "skills")}
    return [p for p in dict.fromkeys(p.resolve() for p in found) if p.parent not in libraries]


def _walk_dirs(top: Path) -> list[Path]:
    out = [top]
    for child in sorted(top.iterdir()):
        if is_dir(child) and not child.name.startswith(".") and child.name not in SKIP_DIRS:
            if child.name in MANIFEST_DIRS:
                out.append(child)
            else:
                out.extend(_walk_dirs(child))
    return out


def validate_paths(paths: list[Path]) -> tuple[list[Diagnostic], int]:
    """All diagnostics for the manifests under `paths`, and how many files were checked. Each
    project folder's result (its skills included) comes from the check cache while none of the
    files it reads changed."""
    from flowrun.manifest.checks.checked import check_root

    diagnostics: list[Diagnostic] = []
    checked: set[str] = set()
    for special in [p for p in paths if not is_file(p) and not is_dir(p)]:
        # a FIFO, socket or device named on the command line: refused, never opened for reading
        from flowrun.manifest.yaml_source import load_source

        diagnostics += load_source(special, display_path(special))[1]
        checked.add(os.path.abspath(special))
    paths = [p for p in paths if is_file(p) or is_dir(p)]
    roots = find_roots(paths)
    focus = focus_of(paths)
    for folder in named_skills(paths, list(roots)):
        from flowrun.manifest.ecosystem.skill_lint import lint_skill

        display = display_path(folder / SKILL_FILE)
        diagnostics += [d for d in lint_skill(folder, display) if d not in diagnostics]
        checked.add(os.path.abspath(display))
    for root, files in roots.items():
        for part in _one_project_each(files):
            found, files_checked = check_root(root, part, focus.get(root))
            diagnostics += [d for d in found if d not in diagnostics]
            checked |= files_checked
    diagnostics.sort(key=lambda d: (d.file, d.line, d.column))
    return diagnostics, len(checked)
