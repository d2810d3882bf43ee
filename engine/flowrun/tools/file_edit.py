"""edit_file: targeted edits of a text file, in replace mode (old_string -> new_string),
line-range mode (lines start..end -> new_content) or insert mode (new_content before or after
line insert_line). Files are read and written in `encoding` (UTF-8 by default). Writes are atomic."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from flowrun.tools.base import ToolContext, error, tool
from flowrun.tools.file_io import (
    atomic_write,
    encode_text,
    encoding_problem,
    file_update,
    numbered,
    plural,
    read_text,
    run_path_tool,
)
from flowrun.tools.paths import display_path
from flowrun.types import ToolResult

SNIPPET_CONTEXT = 3
SNIPPET_MAX_LINES = 40
MAX_LINES_LISTED = 200  # the lines of a replace_all a result lists (its count says how many)
DEFAULT_MAX_EDIT_BYTES = 10_000_000  # a file is read, changed and written whole


def _edit_repeat_safe(arguments: Mapping[str, object]) -> bool:
    """Only a replacement whose new text does not contain the old one: run again, it finds
    nothing to replace. A line-range edit (or any other mode) run again edits the new lines."""
    old, new = arguments.get("old_string"), arguments.get("new_string")
    if not isinstance(old, str) or not old or arguments.get("start_line") is not None:
        return False
    return old not in (new if isinstance(new, str) else "")


@tool(files="write", idempotent=_edit_repeat_safe)
async def edit_file(
    ctx: ToolContext,
    *,
    path: str,
    old_string: str | None = None,
    new_string: str | None = None,
    replace_all: bool = False,
    start_line: int | None = None,
    end_line: int | None = None,
    new_content: str | None = None,
    insert_line: int | None = None,
    position: str = "after",
    encoding: str = "utf-8",
) -> ToolResult:
    params: dict[str, object] = {
        "path": path,
        "old_string": old_string,
        "new_string": new_string,
        "replace_all": replace_all,
        "start_line": start_line,
        "end_line": end_line,
        "new_content": new_content,
        "insert_line": insert_line,
        "position": position,
        "encoding": encoding,
    }
    problem = _mode_problem(old_string, new_string, start_line, end_line, new_content, insert_line, position)
    problem = problem or encoding_problem(encoding)
    if problem:
        return error("INVALID_PARAM", problem)

    limit = int(ctx.config.get("max_bytes", DEFAULT_MAX_EDIT_BYTES))

    def work(resolved: Path) -> ToolResult:
        with file_update(resolved):  # two agents editing one file at once: both edits kept
            return edit(resolved)

    def edit(resolved: Path) -> ToolResult:
        shown = display_path(ctx, resolved)
        if resolved.is_dir():
            return error("IS_DIRECTORY", f"{shown} is a directory")
        text = read_text(resolved, shown, encoding, limit)
        if old_string is not None:
            result, new_text = _replace(text, shown, old_string, new_string or "", replace_all, limit)
        elif insert_line is not None:
            assert new_content is not None
            result, new_text = _insert(text, shown, insert_line, position, new_content)
        else:
            assert start_line is not None and new_content is not None
            result, new_text = _replace_lines(text, shown, start_line, end_line or start_line, new_content)
        if new_text is not None:
            data = encode_text(new_text, encoding, shown)
            if isinstance(data, ToolResult):
                return data
            if len(data) > limit:
                return _too_large(shown, len(data), limit)
            atomic_write(resolved, data)
        return result

    return await run_path_tool(ctx, params, path, work, write=True)


def _mode_problem(
    old_string: str | None,
    new_string: str | None,
    start_line: int | None,
    end_line: int | None,
    new_content: str | None,
    insert_line: int | None = None,
    position: str = "after",
) -> str | None:
    replace_mode = old_string is not None or new_string is not None
    if insert_line is not None:
        others = replace_mode or start_line is not None or end_line is not None
        return _insert_problem(others, new_content, insert_line, position)
    line_mode = start_line is not None or end_line is not None or new_content is not None
    if replace_mode and line_mode:
        return (
            "use either old_string/new_string (replace mode) or start_line/end_line/new_content "
            "(line mode), not both"
        )
    if replace_mode:
        if not old_string:
            return "old_string must be a non-empty string (the exact text to replace)"
        if new_string is None:
            return 'new_string is required in replace mode (use "" to delete old_string)'
        if old_string == new_string:
            return "old_string and new_string are identical; nothing to change"
        return None
    if line_mode:
        if start_line is None or new_content is None:
            return "line mode needs start_line and new_content (end_line defaults to start_line)"
        if start_line < 1 or (end_line is not None and end_line < start_line):
            return f"need 1 <= start_line <= end_line (got {start_line}, {end_line})"
        return None
    return (
        "give old_string + new_string (replace mode), start_line + new_content (line mode) or "
        "insert_line + new_content (insert mode)"
    )


def _insert_problem(others: bool, new_content: str | None, insert_line: int, position: str) -> str | None:
    if others:
        return "insert mode (insert_line) goes with new_content only, not with old_string or start_line"
    if new_content is None:
        return "insert mode needs new_content (the text to insert)"
    if insert_line < 0:
        return f"insert_line must be 0 or more (got {insert_line})"
    if position not in ("before", "after"):
        return f"position must be before or after (got {position!r})"
    return None


def _insert(
    text: str, shown: str, line: int, position: str, new_content: str
) -> tuple[ToolResult, str | None]:
    """new_content as whole lines before or after line `line` (after line 0: at the top)."""
    lines = text.splitlines(keepends=True)
    total = len(lines)
    at = line - 1 if position == "before" else line
    if line > total or (position == "before" and line < 1):
        where = "1" if position == "before" else "0"
        return error(
            "INVALID_PARAM", f"{shown} has {total} lines; insert_line must be {where}..{total}"
        ), None
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    if at > 0 and not lines[at - 1].endswith("\n"):
        lines[at - 1] += newline  # the last line had no newline: the inserted text starts a new line
    block = new_content if new_content.endswith("\n") or not new_content else new_content + newline
    new_text = "".join(lines[:at]) + block + "".join(lines[at:])
    added = len(block.splitlines())
    snippet = _snippet(new_text, at + 1, at + max(added, 1))
    message = f"Inserted {plural(added, 'line')} {position} line {line} of {shown}. Now:\n{snippet}"
    result = ToolResult.ok(
        message, applied=True, operation="insert", lines_added=added, at_line=at + 1, path=shown
    )
    return result, new_text


def _replace(
    text: str, shown: str, old: str, new: str, replace_all: bool, limit: int
) -> tuple[ToolResult, str | None]:
    positions = _find_all(text, old)
    if not positions and "\r\n" in text and "\r\n" not in old:
        # the model usually writes \n; the file uses CRLF
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        positions = _find_all(text, old)
    if not positions:
        return error("NOT_FOUND", f"old_string was not found in {shown}. {_near_miss_hint(text, old)}"), None
    lines = _line_numbers(text, positions)
    if len(positions) > 1 and not replace_all:
        distinct = list(dict.fromkeys(lines))  # (several occurrences on one line: named once)
        where = ", ".join(str(n) for n in distinct[:20]) + (" ..." if len(distinct) > 20 else "")
        message = (
            f"old_string occurs {len(positions)} times in {shown} (at lines {where}); include more "
            "surrounding text to make it unique, or set replace_all=true to replace every occurrence"
        )
        return error("CONFLICT", message, occurrences=len(positions), lines=lines[:MAX_LINES_LISTED]), None
    count = len(positions) if replace_all else 1
    size = len(text) + count * (len(new) - len(old))  # characters: at most the bytes written
    if size > limit:  # (checked before the text is made: a short old_string, a long new one)
        return _too_large(shown, size, limit), None
    new_text = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    # show the first edited site; with replace_all the others are listed by line
    snippet = _snippet(new_text, lines[0], lines[0] + new.count("\n"))
    text_out = f"Replaced {plural(count, 'occurrence')} in {shown}. Now:\n{snippet}"
    shown_lines = lines[:MAX_LINES_LISTED]
    return (
        ToolResult.ok(
            text_out, applied=True, operation="replace", replacements=count, lines=shown_lines, path=shown
        ),
        new_text,
    )


def _line_numbers(text: str, positions: list[int]) -> list[int]:
    """The line of each position (ascending), counting each newline once: O(len(text)), where
    counting from the start for each one was quadratic (replace_all of a short string)."""
    lines, line, last = [], 1, 0
    for pos in positions:
        line += text.count("\n", last, pos)
        last = pos
        lines.append(line)
    return lines


def _too_large(shown: str, size: int, limit: int) -> ToolResult:
    return error(
        "INVALID_PARAM",
        f"the edit would make {shown} {size} bytes or more, over this tool's max_bytes={limit}; "
        "edit less at a time",
    )


def _replace_lines(
    text: str, shown: str, start: int, end: int, new_content: str
) -> tuple[ToolResult, str | None]:
    lines = text.splitlines(keepends=True)
    total = len(lines)
    if start > total or end > total:
        return error("INVALID_PARAM", f"{shown} has {total} lines; lines {start}-{end} do not exist"), None
    replaced_last = lines[end - 1]
    newline = "\r\n" if replaced_last.endswith("\r\n") else "\n"
    if new_content and not new_content.endswith("\n") and replaced_last.endswith("\n"):
        new_content += newline
    new_text = "".join(lines[: start - 1]) + new_content + "".join(lines[end:])
    added = len(new_content.splitlines())
    snippet = _snippet(new_text, start, start + max(added, 1) - 1)
    count = end - start + 1
    message = (
        f"Replaced lines {start}-{end} of {shown} ({plural(count, 'line')}) with {plural(added, 'line')}. "
        f"Now:\n{snippet}"
    )
    return (
        ToolResult.ok(
            message,
            applied=True,
            operation="line_range",
            lines_replaced=end - start + 1,
            lines_added=added,
            path=shown,
        ),
        new_text,
    )


def _find_all(text: str, needle: str) -> list[int]:
    positions: list[int] = []
    pos = text.find(needle)
    while pos != -1:
        positions.append(pos)
        pos = text.find(needle, pos + len(needle))
    return positions


def _near_miss_hint(text: str, old: str) -> str:
    """Point at lines that match old_string's first line once whitespace is ignored."""
    first = next((line.strip() for line in old.splitlines() if line.strip()), "")
    if not first:
        return "Read the file to copy the exact text."
    hits = [n for n, line in enumerate(text.splitlines(), 1) if line.strip() == first]
    if hits:
        where = ", ".join(str(n) for n in hits[:10])
        return (
            f"Its first line appears at line(s) {where}, so the rest differs (whitespace, indentation or "
            "later lines); read those lines and copy the text exactly."
        )
    return "Read the file (read_file or grep) and copy the exact text, including whitespace."


def _snippet(text: str, first: int, last: int) -> str:
    lines = text.splitlines()
    lo = max(1, first - SNIPPET_CONTEXT)
    hi = min(len(lines), last + SNIPPET_CONTEXT, lo + SNIPPET_MAX_LINES - 1)
    if not lines:
        return "(the file is now empty)"
    return numbered(lines[lo - 1 : hi], lo)
