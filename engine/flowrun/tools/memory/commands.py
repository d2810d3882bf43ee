"""The memory tool's commands, as Anthropic's memory tool defines them (`view`, `create`,
`str_replace`, `insert`, `delete`, `rename`, paths under /memories), plus `search`, on a
MemoryFolder. A command is planned first (`plan`): what it answers and the one change it would
make, checked against the caps; the caller records the change (an event, before the file
changes) and then applies it (`apply`), holding the memory's writer lock all along. A change
records a digest of what it touches before and after, so a resumed run can tell whether a write
a kill interrupted happened (`applied`)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from flowrun.tools.memory.folder import MemoryFolder, Refused, sha256

COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename", "search")
READ_COMMANDS = ("view", "search")
MAX_VIEW_LINES = 999_999
MAX_SNIPPET_LINES = 4  # around an edit, as Anthropic's tool shows it


@dataclass
class Change:
    """What a write does: the file (or folder) at `path` goes from `before` to `after` (None:
    it is not there); a rename moves `path` to `to`. `digests` are of what it touches."""

    command: str
    path: str
    before: bytes | None = None
    after: bytes | None = None
    to: str | None = None
    before_digest: str | None = None
    after_digest: str | None = None


@dataclass
class Planned:
    text: str
    change: Change | None = None
    data: dict[str, object] = field(default_factory=dict)


def plan(folder: MemoryFolder, arguments: dict[str, object]) -> Planned:
    """What the command in `arguments` answers and changes; Refused for a call it must not make."""
    command = arguments.get("command")
    if command == "view":
        return _view(folder, arguments)
    if command == "create":
        return _create(folder, arguments)
    if command == "str_replace":
        return _str_replace(folder, arguments)
    if command == "insert":
        return _insert(folder, arguments)
    if command == "delete":
        return _delete(folder, arguments)
    if command == "rename":
        return _rename(folder, arguments)
    raise Refused("INVALID_PARAM", f"unknown command {command!r}; use one of: {', '.join(COMMANDS)}")


def apply(folder: MemoryFolder, change: Change) -> None:
    if change.to is not None:
        folder.move(change.path, change.to)
    elif change.after is None:
        folder.remove(change.path)
    else:
        folder.replace(change.path, change.after)


def digest(folder: MemoryFolder, rel: str) -> str | None:
    """What is at `rel` now: a file's sha256, a folder's digest of its files, None when nothing."""
    found = folder.kind(rel)
    if found is None:
        return None
    if found == "file":
        return sha256(folder.read_bytes(rel, limit=1 << 30))
    prefix = f"{rel}/" if rel else ""
    state = {k: v for k, v in folder.state().items() if k.startswith(prefix)}
    return "folder:" + hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()


def applied(
    folder: MemoryFolder, command: str, path: str, to: str | None, before: str | None, after: str | None
) -> bool | None:
    """Whether a recorded change (its digests) is in the folder: True (applied), False (not
    yet: the memory is as it was before it), None (neither: changed since by someone else)."""
    if to is not None:
        now = (digest(folder, path), digest(folder, to))
        return True if now == (None, after) else False if now == (before, None) else None
    now_at = digest(folder, path)
    return True if now_at == after else False if now_at == before else None


# ---------------------------------------------------------------- the commands


def _text(arguments: dict[str, object], name: str, command: str) -> str:
    value = arguments.get(name)
    if not isinstance(value, str):
        raise Refused("INVALID_PARAM", f"`{command}` needs `{name}` (a string)")
    return value


def _view(folder: MemoryFolder, arguments: dict[str, object]) -> Planned:
    rel = folder.rel(arguments.get("path", "/memories"))
    where = folder.virtual(rel)
    found = folder.kind(rel)
    head = f"Here're the files and directories up to 2 levels deep in {where}, excluding hidden items:"
    if found is None and rel == "":
        return Planned(f"{head}\n0\t{where}")
    if found == "folder":
        entries = folder.entries(rel, depth=2)
        total = sum(e.size for e in folder.entries(rel))
        lines = [f"{_size(total)}\t{where}"] + [
            f"{_size(e.size) if not e.folder else '-'}\t{folder.virtual(e.rel)}{'/' if e.folder else ''}"
            for e in entries
        ]
        return Planned("\n".join([head, *lines]), data={"entries": [e.rel for e in entries]})
    text = folder.read_text(rel)
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    if len(lines) > MAX_VIEW_LINES:
        raise Refused("TOO_LARGE", f"{where} has over {MAX_VIEW_LINES} lines")
    start, end = _range(arguments.get("view_range"), len(lines))
    shown = "\n".join(f"{n:6d}\t{line}" for n, line in enumerate(lines[start - 1 : end], start))
    return Planned(f"Here's the content of {where} with line numbers:\n{shown}", data={"lines": len(lines)})


def _range(value: object, count: int) -> tuple[int, int]:
    if value is None:
        return 1, count
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise Refused(
            "INVALID_PARAM", "view_range must be [first line, last line] (-1 as the last: to the end)"
        )
    first, last = value[0], value[1] if value[1] != -1 else count
    if not 1 <= first <= max(count, 1) or last < first or last > count:
        raise Refused("INVALID_PARAM", f"view_range {value} is outside the file's lines [1, {count}]")
    return first, last


def _size(n: int) -> str:
    """A size as `du -h` writes it: 512, 4.0K, 1.2M."""
    if n < 1024:
        return str(n)
    return f"{n / 1024:.1f}K" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f}M"


def _create(folder: MemoryFolder, arguments: dict[str, object]) -> Planned:
    rel = folder.rel(arguments.get("path"))
    text = _text(arguments, "file_text", "create")
    where = folder.virtual(rel)
    if rel == "":
        raise Refused(
            "INVALID_PARAM", f"{where} is the memory's folder; create a file in it, e.g. {where}/MEMORY.md"
        )
    found = folder.kind(rel)
    if found is not None:
        what = "File" if found == "file" else "A folder"
        raise Refused(
            "ALREADY_EXISTS", f"{what} {where} already exists; use str_replace or insert to change it"
        )
    change = check_caps(folder, Change("create", rel, None, text.encode("utf-8")))
    return Planned(f"File created successfully at: {where}", change, {"path": where})


def _str_replace(folder: MemoryFolder, arguments: dict[str, object]) -> Planned:
    rel = folder.rel(arguments.get("path"))
    old, new = _text(arguments, "old_str", "str_replace"), _text(arguments, "new_str", "str_replace")
    where = folder.virtual(rel)
    before = folder.read_text(rel)
    if not old:
        raise Refused("INVALID_PARAM", "old_str is empty; give the exact text to replace")
    count = before.count(old)
    if count == 0:
        raise Refused(
            "NOT_FOUND", f"No replacement was performed, old_str did not appear verbatim in {where}."
        )
    if count > 1:
        lines = [i + 1 for i, line in enumerate(before.split("\n")) if old.split("\n")[0] in line]
        message = (
            f"No replacement was performed. Multiple occurrences of old_str in lines: {lines}. "
            "Please ensure it is unique"
        )
        raise Refused("INVALID_PARAM", message)
    after = before.replace(old, new, 1)
    change = check_caps(folder, Change("str_replace", rel, before.encode("utf-8"), after.encode("utf-8")))
    line = before[: before.index(old)].count("\n")
    return Planned(
        f"The memory file has been edited.\n{_snippet(after, line, new.count(chr(10)) + 1)}",
        change,
        {"path": where},
    )


def _insert(folder: MemoryFolder, arguments: dict[str, object]) -> Planned:
    rel = folder.rel(arguments.get("path"))
    text = _text(arguments, "insert_text", "insert")
    at = arguments.get("insert_line")
    where = folder.virtual(rel)
    before = folder.read_text(rel)
    lines = before.split("\n")
    if before.endswith("\n"):
        lines.pop()
    if not isinstance(at, int) or isinstance(at, bool) or not 0 <= at <= len(lines):
        message = (
            f"Invalid `insert_line` parameter: {at}. It should be within the range of lines of the file: "
            f"[0, {len(lines)}]"
        )
        raise Refused("INVALID_PARAM", message)
    added = text[:-1].split("\n") if text.endswith("\n") else text.split("\n")
    after = "\n".join([*lines[:at], *added, *lines[at:]]) + "\n"
    change = check_caps(folder, Change("insert", rel, before.encode("utf-8"), after.encode("utf-8")))
    return Planned(
        f"The file {where} has been edited.\n{_snippet(after, at, len(added))}", change, {"path": where}
    )


def _delete(folder: MemoryFolder, arguments: dict[str, object]) -> Planned:
    rel = folder.rel(arguments.get("path"))
    where = folder.virtual(rel)
    if rel == "":
        raise Refused("INVALID_PARAM", f"{where} is the memory's folder itself; delete the files in it")
    if folder.kind(rel) is None:
        raise Refused("NOT_FOUND", f"The path {where} does not exist")
    change = Change("delete", rel, None, None, before_digest=digest(folder, rel))
    return Planned(f"Successfully deleted {where}", change, {"path": where})


def _rename(folder: MemoryFolder, arguments: dict[str, object]) -> Planned:
    old, new = (
        folder.rel(arguments.get("old_path"), "old_path"),
        folder.rel(arguments.get("new_path"), "new_path"),
    )
    source, dest = folder.virtual(old), folder.virtual(new)
    if "" in (old, new):
        raise Refused(
            "INVALID_PARAM", f"{folder.virtual('')} is the memory's folder itself; rename the files in it"
        )
    if folder.kind(old) is None:
        raise Refused("NOT_FOUND", f"The path {source} does not exist")
    if folder.kind(new) is not None:
        raise Refused("ALREADY_EXISTS", f"The destination {dest} already exists")
    if new == old or new.startswith(old + "/"):
        raise Refused("INVALID_PARAM", f"{source} cannot move into itself")
    moved = digest(folder, old)
    change = Change("rename", old, to=new, before_digest=moved, after_digest=moved)
    return Planned(f"Successfully renamed {source} to {dest}", change, {"path": dest})


def check_caps(folder: MemoryFolder, change: Change) -> Change:
    """The change within the caps, its digests filled in; Refused when over one."""
    size = len(change.after or b"")
    caps = folder.caps
    where = folder.virtual(change.path)
    if size > caps.max_file_bytes:
        raise Refused(
            "TOO_LARGE",
            f"refused: {where} would hold {size:,} bytes, over the memory's cap of {caps.max_file_bytes:,} "
            "per file; keep memory files short (details in several files, the index in MEMORY.md)",
        )
    total = folder.total_bytes() - len(change.before or b"") + size
    if total > caps.max_bytes:
        raise Refused(
            "TOO_LARGE",
            f"refused: the memory would hold {total:,} bytes, over its cap of {caps.max_bytes:,} in all; "
            "delete or shorten files first",
        )
    change.before_digest = sha256(change.before) if change.before is not None else None
    change.after_digest = sha256(change.after) if change.after is not None else None
    return change


def _snippet(text: str, line: int, count: int) -> str:
    """The edited lines with a few around them, numbered as `view` numbers them."""
    lines = text.split("\n")
    start = max(0, line - MAX_SNIPPET_LINES)
    end = min(len(lines), line + count + MAX_SNIPPET_LINES)
    return "\n".join(f"{n:6d}\t{lines[n - 1]}" for n in range(start + 1, end + 1))
