"""Path safety for every tool that touches files: confine paths to `ctx.base_dir`, keep tools
off the engine's own files (`ctx.protected`) and apply the agent's path policy (`read_only`,
`paths`, `write_paths` in the tool config).

Checks run on the path after `Path.resolve()` (symlinks followed), never on the string alone,
so `a/../../x`, a symlink pointing outside and an absolute path are all caught the same way.
"""

from __future__ import annotations

import os
from pathlib import Path, PureWindowsPath

from flowrun.pinned import MAX_DEPTH
from flowrun.tools.base import ToolContext, error
from flowrun.tools.globs import glob_matches
from flowrun.types import ToolResult

MAX_PATH_CHARS = 4096
MAX_PATH_PARTS = MAX_DEPTH  # (the depth the walks stop at: no longer path is taken)


class PathDenied(Exception):
    """A path a tool must not touch; the tool turns it into an error result."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def to_result(self) -> ToolResult:
        return error(self.code, self.message)


def resolve_path(
    ctx: ToolContext,
    path: str,
    *,
    write: bool = False,
    enforce_paths: bool = True,
    follow_symlinks: bool = True,
) -> Path:
    """The absolute, symlink-free path `path` names, or PathDenied.

    Relative paths start at `ctx.cwd` (or at the base when the cwd lies outside it).
    `enforce_paths=False` skips the `paths` glob check (not the confinement, not the write
    policy): folder walkers use it for their root and filter each entry with `path_allowed`.
    `follow_symlinks=False` resolves only the parent, so a final symlink names the link itself
    (delete_file removes links, never their targets).
    """
    check_path_text(path)
    base = ctx.real(ctx.base_dir)
    start = ctx.real(ctx.cwd)
    if not _inside(start, base):
        start = base
    try:
        resolved = _resolve(start / path, follow_symlinks)
    except (OSError, RuntimeError, ValueError) as e:  # symlink loops, names too long
        raise PathDenied("INVALID_PARAM", f"cannot resolve {path!r}: {e}") from e
    if not _inside(resolved, base):
        raise PathDenied("ACCESS_DENIED", _outside(ctx, path, base))
    if _protected(ctx, resolved):
        raise PathDenied("PERMISSION_DENIED", f"{path!r} is a file the engine owns; tools may not touch it")
    rel = _rel(resolved, base)
    if write:
        _check_write(ctx, path, rel)
    if enforce_paths and not _matches_any(rel, _string_list(ctx.config.get("paths"))):
        raise PathDenied(
            "PERMISSION_DENIED", f"{path!r} is outside the paths this agent may access: {_show(ctx, 'paths')}"
        )
    return resolved


def check_path_text(path: object) -> None:
    """PathDenied for a path string no file tool takes, before any file is looked at."""
    if not isinstance(path, str) or path.strip() == "":
        raise PathDenied("INVALID_PARAM", "path must be a non-empty string")
    if "\x00" in path:
        raise PathDenied("ACCESS_DENIED", "path contains a NUL byte")
    try:
        os.fsencode(path)
    except UnicodeEncodeError as e:  # a lone surrogate (JSON's "\ud800") no file name can hold
        raise PathDenied("INVALID_PARAM", f"path has a character no file name holds at {e.start}") from None
    parts = path.replace("\\", "/").split("/")
    if len(path) > MAX_PATH_CHARS or any(len(part) > 255 for part in parts):
        raise PathDenied("INVALID_PARAM", f"path is too long ({len(path)} characters); use a shorter name")
    if len(parts) > MAX_PATH_PARTS:  # (making its folders, one call per level, would overflow the stack)
        deep = f"path is nested {len(parts)} levels deep, over {MAX_PATH_PARTS}; use a shallower path"
        raise PathDenied("INVALID_PARAM", deep)
    if path.startswith(("/", "\\")) or PureWindowsPath(path).drive or Path(path).is_absolute():
        raise PathDenied(
            "ACCESS_DENIED",
            f"absolute paths are not allowed ({path!r}); use a path relative to the workspace",
        )


def _outside(ctx: ToolContext, path: str, base: Path) -> str:
    """Which confinement `path` leaves: the workspace, or the tool's `base_dir` in it."""
    if base != ctx.real(ctx.workspace):
        folder = ctx.relative(base)
        return (
            f"{path!r} points outside {folder}/, the base_dir this tool is confined to (its `base_dir` "
            f"config); paths must stay inside it"
        )
    return f"{path!r} points outside the workspace; paths must stay inside it"


def _resolve(candidate: Path, follow_symlinks: bool) -> Path:
    if follow_symlinks or candidate.name in ("", ".", ".."):
        return candidate.resolve()
    return candidate.parent.resolve() / candidate.name


def path_allowed(ctx: ToolContext, resolved: Path, *, write: bool = False) -> bool:
    """Whether an already resolved path passes the agent's path policy (for filtering walks)."""
    base = ctx.real(ctx.base_dir)
    if not _inside(resolved, base) or _protected(ctx, resolved):
        return False
    rel = _rel(resolved, base)
    if not _matches_any(rel, _string_list(ctx.config.get("paths"))):
        return False
    if write:
        try:
            _check_write(ctx, str(resolved), rel)
        except PathDenied:
            return False
    return True


def display_path(ctx: ToolContext, resolved: Path) -> str:
    """How a tool shows a path back to the model: relative to the cwd, so it can be passed again."""
    return Path(os.path.relpath(resolved, ctx.real(ctx.cwd))).as_posix()


def _check_write(ctx: ToolContext, path: str, rel: str) -> None:
    if ctx.write_within is not None:
        inside = ctx.real(ctx.write_within)
        if not _inside(ctx.real(ctx.base_dir) / rel, inside):
            raise PathDenied(
                "PERMISSION_DENIED",
                f"cannot write {path!r}: this agent may write only under {ctx.relative(inside)}/ "
                "(the output_dir it was called with)",
            )
    if ctx.config.get("read_only"):
        raise PathDenied("PERMISSION_DENIED", f"cannot write {path!r}: this agent's file access is read-only")
    write_paths = _string_list(ctx.config.get("write_paths"))
    if write_paths and not _matches_any(rel, write_paths, empty_allows=False):
        raise PathDenied(
            "PERMISSION_DENIED", f"cannot write {path!r}: writes are limited to {_show(ctx, 'write_paths')}"
        )


def _matches_any(rel: str, patterns: list[str], *, empty_allows: bool = True) -> bool:
    """A pattern covers what it matches and everything below it (`notes` covers `notes/a.md`)."""
    if not patterns:
        return empty_allows
    parts = rel.split("/") if rel else []
    prefixes = ["/".join(parts[:i]) for i in range(len(parts), -1, -1)]
    return any(glob_matches(prefix, pattern) for pattern in patterns for prefix in prefixes)


def _protected(ctx: ToolContext, resolved: Path) -> bool:
    """Engine-owned files in the run folder's root (events.jsonl, ...; a name ending in "/" is a
    folder, with everything below it), wherever the agents' root is."""
    if not ctx.protected:
        return False
    for root in {ctx.real(ctx.workspace), ctx.real(ctx.run_dir)}:
        if resolved.parent == root and (
            resolved.name in ctx.protected or f"{resolved.name}/" in ctx.protected
        ):
            return True
        folders = [root / name.rstrip("/") for name in ctx.protected if name.endswith("/")]
        if any(resolved.is_relative_to(folder) for folder in folders):
            return True
    return False


def _inside(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def _rel(resolved: Path, base: Path) -> str:
    rel = resolved.relative_to(base).as_posix()
    return "" if rel == "." else rel


def _string_list(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return []


def _show(ctx: ToolContext, key: str) -> str:
    return ", ".join(_string_list(ctx.config.get(key)))
