"""Allow / deny patterns for commands (execute_shell, declared command tools).

Patterns are fnmatch-style and matched against each simple command of a shell line, so
`ls; rm -rf /` is checked as `ls` and `rm -rf /`. A pattern without wildcards also matches the
command with arguments (`rm` covers `rm -rf x`). Deny wins; with a non-empty allow list every
simple command must match one allowed pattern.

This is a guardrail against mistakes, not a sandbox: it errs on the strict side (a quoted `;`
or heredoc text is checked as a command too) but cannot see through every shell trick.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import PurePosixPath
from typing import Any

SEPARATOR_CHARS = set(";&|()\n")
SHELL_KEYWORDS = {
    "{",
    "}",
    "!",
    "if",
    "then",
    "else",
    "elif",
    "fi",
    "do",
    "done",
    "while",
    "until",
    "for",
    "case",
}
WRAPPERS = {
    "sudo", "doas", "env", "nohup", "time", "nice", "ionice", "timeout", "xargs", "exec", "command",
    "builtin", "stdbuf", "setsid", "watch", "strace", "chroot",
}  # fmt: skip
SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "fish"}
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
WRAPPER_ARG = re.compile(r"^(-.*|\d+(\.\d+)?[smhd]?|[A-Za-z_][A-Za-z0-9_]*=.*)$")
MAX_DEPTH = 8


@dataclass(slots=True, frozen=True)
class Denial:
    command: str
    pattern: str | None  # the deny pattern that matched; None: no allow pattern matched
    reason: str


def check_command(command: str, allow: Iterable[str] = (), deny: Iterable[str] = ()) -> Denial | None:
    """The first reason `command` (a bash line) is not permitted, or None."""
    allow, deny = list(allow), list(deny)
    if not allow and not deny:
        return None
    try:
        simple = list(simple_commands(command))
    except ValueError as e:
        return Denial(command, None, f"cannot check the command ({e}); fix its quoting")
    for argv in simple:
        denial = _check_argv_forms(argv, allow, deny)
        if denial is not None:
            return denial
    return None


def check_argv(argv: list[str], allow: Iterable[str] = (), deny: Iterable[str] = ()) -> Denial | None:
    """Like check_command for an argv run without a shell."""
    allow, deny = list(allow), list(deny)
    if not allow and not deny:
        return None
    return _check_argv_forms(argv, allow, deny)


def config_patterns(config: dict[str, Any], key: str) -> list[str]:
    """The `allow` / `deny` list of a tool config (a single string counts as a list of one)."""
    value = config.get(key) or []
    return [value] if isinstance(value, str) else [str(p) for p in value]


def describe(denial: Denial, allow: Iterable[str]) -> str:
    """The message the model reads."""
    if denial.pattern is not None:
        return f"command {denial.command!r} is denied by pattern {denial.pattern!r}"
    if denial.reason:
        return denial.reason
    allowed = ", ".join(repr(p) for p in allow)
    return f"command {denial.command!r} matches none of the allowed patterns ({allowed})"


def simple_commands(line: str, depth: int = 0) -> Iterable[list[str]]:
    """The argv of every simple command in a bash line, including those inside `$(...)`,
    backticks, process substitutions and `bash -c '...'` strings."""
    if depth > MAX_DEPTH:
        raise ValueError("commands nested too deeply")
    current: list[str] = []
    for token in _tokens(line):
        if _is_separator(token):
            if current:
                yield current
            current = []
        else:
            current.append(token)
    if current:
        yield current
    for inner in _substitutions(line):
        yield from simple_commands(inner, depth + 1)


def _check_argv_forms(argv: list[str], allow: list[str], deny: list[str]) -> Denial | None:
    readings = _readings(argv)
    if not readings:
        return None
    shown = " ".join(argv)
    forms = [_join(words) for words in readings]
    for form in forms:
        for pattern in deny:
            if _matches(form, pattern):
                return Denial(shown, pattern, "")
    if allow and not any(_matches(forms[0], pattern) for pattern in allow):
        return Denial(shown, None, "")
    for words in readings:
        for nested in _nested_shell_line(words):
            denial = check_command(nested, allow, deny)
            if denial is not None:
                return denial
    return None


def _readings(argv: list[str]) -> list[list[str]]:
    """Ways to read one simple command: as written (without leading `VAR=x` and keywords),
    then with each wrapper like `sudo` / `env` / `timeout 5` peeled off."""
    words = _strip_prefix(argv)
    readings = [words] if words else []
    while words and PurePosixPath(words[0]).name in WRAPPERS:
        words = words[1:]
        while words and WRAPPER_ARG.match(words[0]):
            words = words[1:]
        words = _strip_prefix(words)
        if words:
            readings.append(words)
    return readings


def _strip_prefix(words: list[str]) -> list[str]:
    i = 0
    while i < len(words) and (words[i] in SHELL_KEYWORDS or ASSIGNMENT.match(words[i])):
        i += 1
    return words[i:]


def _join(words: list[str]) -> str:
    """The command as patterns see it: program name without its folder, then the arguments."""
    return " ".join([PurePosixPath(words[0]).name or words[0], *words[1:]])


def _matches(command: str, pattern: str) -> bool:
    """`rm` matches `rm` and `rm -rf x`; `ls *` matches `ls -l` and a bare `ls`."""
    pattern = pattern.strip()
    bare = pattern.removesuffix(" *")
    return any(fnmatchcase(command, p) for p in (pattern, pattern + " *", bare))


def _nested_shell_line(words: list[str]) -> list[str]:
    """The command line hidden in `eval ...` or `bash -c '...'`."""
    name = PurePosixPath(words[0]).name
    if name == "eval":
        return [" ".join(words[1:])]
    if name in SHELLS:
        for i, word in enumerate(words[1:-1], 1):
            if word.startswith("-") and not word.startswith("--") and "c" in word:
                return [words[i + 1]]
    return []


def _tokens(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""  # `a#b; rm x` must not hide `rm x`
    return list(lexer)


def _is_separator(token: str) -> bool:
    if "(" in token or ")" in token:
        return True
    return bool(token) and set(token) <= SEPARATOR_CHARS


def _substitutions(line: str) -> list[str]:
    """The bodies of `$(...)`, `<(...)`, `>(...)` and backticks, even inside double quotes."""
    found: list[str] = []
    i = 0
    while i < len(line):
        if line[i] == "`":
            end = line.find("`", i + 1)
            if end == -1:
                break
            found.append(line[i + 1 : end])
            i = end + 1
            continue
        if line[i] in "$<>" and line[i + 1 : i + 2] == "(":
            end = _closing_paren(line, i + 1)
            found.append(line[i + 2 : end])
            i = end + 1
            continue
        i += 1
    return found


def _closing_paren(line: str, open_at: int) -> int:
    depth = 0
    for j in range(open_at, len(line)):
        if line[j] == "(":
            depth += 1
        elif line[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    return len(line)
