"""JSON with comments (`//`, `/* */`) and trailing commas, as CrewAI's JSON-first crews write it:
read into a Source with the line and column of every key and value, like a YAML manifest.

Comments and trailing commas are blanked with spaces (newlines kept), so every position in
the cleaned text is the position in the file. The data is the JSON reading of that text (a
JSON number stays a number); the positions come from reading the same text as YAML, which
JSON is."""

from __future__ import annotations

import json
from pathlib import Path

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.yaml_source import Source, parse_text
from flowrun.yaml_limits import read_limited


def blank_comments(text: str) -> tuple[str, tuple[int, int] | None]:
    """`text` with comments and trailing commas replaced by spaces, and the (line, column) of
    an unterminated block comment (None when there is none)."""
    out = list(text)
    i, n = 0, len(text)
    in_string = escaped = False
    last_comma: int | None = None  # a comma with only blanks after it so far
    while i < n:
        char = text[i]
        if in_string:
            escaped, in_string = (not escaped and char == "\\"), not (char == '"' and not escaped)
            i += 1
            continue
        pair = text[i : i + 2]
        if pair in ("//", "/*"):
            end = text.find("\n", i) if pair == "//" else text.find("*/", i + 2)
            if end < 0 and pair == "/*":
                return "".join(out), _line_column(text, i)
            end = n if end < 0 else end + (0 if pair == "//" else 2)
            for j in range(i, end):
                out[j] = text[j] if text[j] in "\r\n" else " "
            i = end
            continue
        if char in "}]" and last_comma is not None:
            out[last_comma] = " "
        if not char.isspace():
            last_comma = i if char == "," else None
        in_string = char == '"'
        i += 1
    return "".join(out), None


def _line_column(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def load_jsonc(path: Path, display: str) -> tuple[Source, list[Diagnostic]]:
    """The file as a Source (data None when it cannot be read), and its problems."""
    src = Source(path=path, display=display)
    text = read_limited(path)
    if not isinstance(text, str):
        return src, [Diagnostic(display, text.line, text.column, "", text.message, text.hint, text.code)]
    cleaned, open_comment = blank_comments(text)
    if open_comment is not None:
        line, column = open_comment
        return src, [
            Diagnostic(display, line, column, "", "a /* comment is never closed", "add */", "json-syntax")
        ]
    try:
        data = json.loads(cleaned)
    except json.JSONDecodeError as e:
        hint = "check the quotes and commas on this line and the one before it"
        return src, [
            Diagnostic(display, e.lineno, e.colno, "", f"JSON syntax error: {e.msg}", hint, "json-syntax")
        ]
    except RecursionError:  # nested past the parser: a broken file, not a flowrun bug
        message = "the JSON nests arrays or objects too deep to read"
        return src, [Diagnostic(display, 1, 1, "", message, "flatten the file", "json-syntax")]
    src.text = cleaned
    positions = Source(path=path, display=display, text=cleaned)
    parse_text(positions)  # only for where each value is: the JSON reading above is the data
    src.values, src.keys, src.data = positions.values, positions.keys, data
    return src, []
