"""The on-disk cache of what checking manifests costs, in a folder that can be deleted at any
time (FLOWRUN_CACHE_DIR, default $XDG_CACHE_HOME/flowrun or ~/.cache/flowrun; FLOWRUN_NO_CACHE=1
turns it off).

Entries are keyed by content, never by time:
- a parsed manifest (YAML with positions, its kind, the JSON Schema and cross-key checks) by the
  file's bytes, so the built-ins are parsed once per installed version and a project's files
  again only when they change;
- a checked project by `fingerprint()`: the bytes of every file a check reads on each folder of
  the search path (the manifest folders, prompts/, schema/, skills/, .claude/ but its agents'
  memories, and the folder's own files), plus the flowrun code that checks them.

An unreadable, damaged or unwritable cache is a miss, never an error. Entries are pickles read
by an unpickler that builds nothing but plain data, so a planted file cannot run code."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import os
import pickle
import stat
import sys
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flowrun._version import __version__
from flowrun.manifest import unions
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.paths import builtin_root, cache_base

if TYPE_CHECKING:
    from flowrun.manifest.yaml_source import Source

FORMAT = "1"
# folders of a search-path root whose files a check may read (a new file kind read by
# `validate` lives in one of these, or is added here)
CHECKED_DIRS = (
    "agents.d",
    "tools.d",
    "models.d",
    "prompts",
    "schema",
    "schemas",  # output schemas of agents
    "cassettes",  # the recorded runs test files name
    "skills",
    ".claude",
)
# agents' memories (.claude/agent-memory*/; flowrun's are in .flowrun/, not walked): runs change
# them all the time, and a check reads only whether an index is over its cap (a probe of its own,
# checks/checked.py), so a memory write does not make the next run check its manifests again
UNCHECKED_DIRS = ("__pycache__", ".git", "agent-memory", "agent-memory-local")
BIG_FILE = 1 << 20  # larger files are fingerprinted by size and mtime, not content
MAX_FILES = 5000  # a root with more files than this is not fingerprinted (no project entry)
MAX_ENTRIES = 2000  # the folder is pruned to the newest entries past this many
_SAFE_GLOBALS = {
    ("datetime", "date"),
    ("datetime", "datetime"),
    ("datetime", "time"),
    ("datetime", "timedelta"),
    ("datetime", "timezone"),
}


def cache_dir() -> Path | None:
    """The cache folder, or None when the cache is off (also while a kind beyond the built-in
    ones is registered: what its code decides is not in any key)."""
    base = cache_base()
    if base is None or unions.extended():
        return None
    return base / f"checks-{FORMAT}"


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> object:
        if (module, name) in _SAFE_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not allowed in the check cache")


def load(key: str) -> Any | None:
    """The value stored under `key`, or None (missing, damaged, cache off or not ours)."""
    folder = _usable_dir()
    if folder is None:
        return None
    try:
        data = (folder / key).read_bytes()
        return _PlainUnpickler(io.BytesIO(data)).load()
    except Exception:  # a damaged entry is a miss: it is rewritten after the check
        return None


def store(key: str, value: object) -> None:
    """Write `value` under `key` atomically; a cache that cannot be written is skipped."""
    folder = _usable_dir(create=True)
    if folder is None:
        return
    tmp = folder / f".{key}.{os.getpid()}.tmp"
    try:
        tmp.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(tmp, folder / key)
        _prune(folder)
    except OSError:
        tmp.unlink(missing_ok=True)


def _usable_dir(create: bool = False) -> Path | None:
    folder = cache_dir()
    if folder is None:
        return None
    try:
        if create:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        info = folder.stat()
    except OSError:
        return None
    # someone else's folder, or one others may write to: not trusted
    if hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & 0o022):
        return None
    return folder


def _prune(folder: Path) -> None:
    entries = [e for e in os.scandir(folder) if not e.name.startswith(".")]
    if len(entries) <= MAX_ENTRIES:
        return
    entries.sort(key=lambda e: e.stat().st_mtime)
    for entry in entries[: len(entries) - MAX_ENTRIES // 2]:
        Path(entry.path).unlink(missing_ok=True)


# ---------------------------------------------------------------- keys


def digest(*parts: str | bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\x00")
    return h.hexdigest()


@cache
def code_stamp() -> str:
    """Which flowrun is checking: its version and the size and mtime of each of its modules
    (a source checkout changes without a new version)."""
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    h = hashlib.sha256(f"{FORMAT}|{__version__}|{sys.version_info[:2]}".encode())
    schema = builtin_root() / "schema"  # the JSON Schema files a manifest is checked against
    for path in [*_modules(package), *sorted(map(str, schema.glob("*.json"))), *map(str, _price_table())]:
        info = os.stat(path)
        h.update(f"{path}|{info.st_size}|{info.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _modules(package: str) -> list[str]:
    """flowrun's modules, as paths (strings, not Paths: every process stats its ~270)."""
    found: list[str] = []
    for folder, subfolders, names in os.walk(package):
        subfolders[:] = [name for name in subfolders if name != "__pycache__"]
        found += [os.path.join(folder, name) for name in names if name.endswith(".py")]
    return sorted(found)


def _price_table() -> list[Path]:
    """The bundled price table validate's warnings consult (found, not imported)."""
    found = importlib.util.find_spec("genai_prices")
    table = Path(found.origin).parent / "data.py" if found and found.origin else None
    return [table] if table is not None and table.is_file() else []


def _file_digest(path: Path, size: int, mtime_ns: int) -> str:
    if size > BIG_FILE:
        return f"stat:{size}:{mtime_ns}"
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _walk(folder: Path, out: list[Path]) -> None:
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.is_dir(follow_symlinks=True):
            if entry.name not in UNCHECKED_DIRS:
                _walk(Path(entry.path), out)
        elif entry.is_file(follow_symlinks=True):
            out.append(Path(entry.path))
        if len(out) > MAX_FILES:
            raise _TooBig


class _TooBig(Exception):
    pass


def root_digest(root: Path) -> str | None:
    """The content of every file a check may read under one search-path root; None when the
    folder is too big to fingerprint."""
    files: list[Path] = []
    try:
        for entry in sorted(os.scandir(root), key=lambda e: e.name):
            if entry.is_file(follow_symlinks=True):
                files.append(Path(entry.path))
            elif entry.name in CHECKED_DIRS and entry.is_dir(follow_symlinks=True):
                _walk(Path(entry.path), files)
        h = hashlib.sha256()
        for path in files:
            info = path.stat()
            found = _file_digest(path, info.st_size, info.st_mtime_ns)
            h.update(f"{path.relative_to(root)}\x00{found}\n".encode())
    except (OSError, _TooBig):
        return None
    return h.hexdigest()


def fingerprint(purpose: str, roots: Iterable[Path], workflow_files: Iterable[Path] | None) -> str | None:
    """The key of a project check: what is checked, where, and the bytes of everything it
    reads. None when a root cannot be fingerprinted (the check then runs uncached)."""
    parts: list[str] = [purpose, code_stamp()]
    for root in roots:
        found = root_digest(root)
        if found is None:
            return None
        parts += [str(root), found]
    files = None if workflow_files is None else sorted(str(f) for f in workflow_files)
    parts.append("*" if files is None else "\n".join(files))
    return "p-" + digest(*parts)


def file_key(content: bytes, folder_hint: str, trusted: bool) -> str:
    return "m-" + digest(code_stamp(), folder_hint, "trusted" if trusted else "checked", content)


# ---------------------------------------------------------------- parsed manifests


CheckResult = tuple[str | None, "Source", list[Diagnostic], bool]  # kind, source, diagnostics, passed
CheckFn = Callable[[Path, str, str, bool], CheckResult]


def cached_check(path: Path, display: str, folder_hint: str, trusted: bool, check: CheckFn) -> CheckResult:
    """`check(path, display, folder_hint, trusted)` (YAML, kind, JSON Schema and cross-key rules
    of one manifest), answered from the cache when a file with the same bytes was checked."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > BIG_FILE:
            return check(path, display, folder_hint, trusted)  # refused there, never read here
        content = path.read_bytes()
    except OSError:
        return check(path, display, folder_hint, trusted)
    key = file_key(content, folder_hint, trusted)
    entry = load(key)
    if entry is not None:
        restored = _restore(entry, path, display)
        if restored is not None:
            return restored
    result = check(path, display, folder_hint, trusted)
    kind, src, diags, passed = result
    store(key, (kind, src.data, src.values, src.keys, src.text, [_plain(d) for d in diags], passed))
    return result


def _plain(d: Diagnostic) -> tuple[object, ...]:
    return (d.line, d.column, d.path, d.message, d.hint, d.code, d.severity)


def _restore(entry: Any, path: Path, display: str) -> CheckResult | None:
    from flowrun.manifest.yaml_source import Source

    try:
        kind, data, values, keys, text, diags, passed = entry
        src = Source(path=path, display=display, data=data, values=values, keys=keys, text=text)
        return kind, src, [Diagnostic(display, *d) for d in diags], bool(passed)
    except (TypeError, ValueError):
        return None
