"""Glob patterns over base-relative posix paths (`*`, `?`, `[..]`, `**`), matched in time
proportional to the pattern times the path. A regular expression made from a glob backtracks:
`*a*a*a*b` against a long name of `a`s, or many `**`, took seconds to hours with `re`, holding the
interpreter lock all that time, and a model chooses the glob tool's pattern and can name files.

Path level: a `**` segment matches any number of folders (a last `**` also matches nothing, so
`a/**` matches `a`); other segments match one part each, dynamic programming over (segment,
part). Segment level: a single `*` (runs of `*` are one) keeps one regular expression, which
cannot backtrack across parts; a segment with several is matched by the greedy wildcard
algorithm (one backtrack point)."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

GLOBSTAR = "**"
Token = str | re.Pattern[str] | None  # a literal character, a `[..]` class, `?` (None), or STAR
STAR = "*"  # every `*` of a segment is a star: no token is a literal `*`


def glob_matches(rel: str, pattern: str) -> bool:
    """Whether the base-relative posix path `rel` matches a glob (`*`, `?`, `[..]`, `**`)."""
    return _matcher(pattern.strip("/"))(rel)


@lru_cache(maxsize=256)
def _matcher(pattern: str) -> Callable[[str], bool]:
    if not pattern:
        return lambda rel: rel == ""
    segments = _collapsed(pattern.split("/"))
    matchers = [None if s == GLOBSTAR else _segment(s) for s in segments]

    def matches(rel: str) -> bool:
        return _parts_match(matchers, rel.split("/"))

    return matches


def _collapsed(segments: list[str]) -> list[str]:
    """`**/**` is `**`; a run of `*` in a segment is one `*` (same matches, no backtracking)."""
    out: list[str] = []
    for segment in segments:
        if segment != GLOBSTAR:
            segment = re.sub(r"\*{2,}", "*", segment)
        if not (segment == GLOBSTAR and out and out[-1] == GLOBSTAR):
            out.append(segment)
    return out


def _parts_match(matchers: list[Callable[[str], bool] | None], parts: list[str]) -> bool:
    """matchers[i:] against parts[j:], for every (i, j) from the end (None: a `**`)."""
    ends = [False] * (len(parts) + 1)  # row i + 1: does matchers[i + 1:] match parts[j:]
    ends[len(parts)] = True
    for i in range(len(matchers) - 1, -1, -1):
        row = [False] * (len(parts) + 1)
        one = matchers[i]
        for j in range(len(parts), -1, -1):
            if one is None:  # zero folders, or one more
                row[j] = ends[j] or (j < len(parts) and row[j + 1])
            else:
                row[j] = j < len(parts) and ends[j + 1] and one(parts[j])
        ends = row
    return ends[0]


def _segment(segment: str) -> Callable[[str], bool]:
    tokens = _tokens(segment)
    if tokens.count(STAR) <= 1:
        compiled = re.compile("".join(_token_regex(t) for t in tokens), re.DOTALL)
        return lambda part: compiled.fullmatch(part) is not None
    return lambda part: _wildcard_match(tokens, part)


def _tokens(segment: str) -> list[Token]:
    """`*` as STAR, `?` as None, a `[..]` class as a one-character pattern, others as themselves
    (a `[` without a closing `]`, or a class `re` refuses, is a literal `[`)."""
    out: list[Token] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            out.append(STAR)
        elif char == "?":
            out.append(None)
        elif (
            char == "[" and (end := segment.find("]", i + 2)) != -1 and (cls := _class(segment[i + 1 : end]))
        ):
            out.append(cls)
            i = end
        else:
            out.append(char)
        i += 1
    return out


def _class(body: str) -> re.Pattern[str] | None:
    """`[..]` as one character of the set (`!` first negates; never a `/`), or None when `re`
    refuses it. `[`, `&`, `~`, `|` and a doubled `-` are escaped: literal in a glob, and `re`
    would warn of the set operations it may give them one day."""
    negate = body.startswith("!")
    body = body[1:] if negate else body
    body = re.sub(r"[\\\[&~|]", lambda m: "\\" + m.group(0), body).replace("--", "-\\-")
    try:
        return re.compile(("[^/" if negate else "[") + body + "]", re.DOTALL)
    except re.error:
        return None


def _token_regex(token: Token) -> str:
    if token is None:
        return "[^/]"
    if isinstance(token, re.Pattern):
        return token.pattern
    if token == STAR:
        return "[^/]*"
    return re.escape(token)


def _one(token: Token, char: str) -> bool:
    if token is None:
        return True
    if isinstance(token, re.Pattern):
        return token.fullmatch(char) is not None
    return token == char


def _wildcard_match(tokens: list[Token], text: str) -> bool:
    """Greedy matching with one backtrack point (the last star): each star takes as little as it
    can and one more character at a time when what follows fails; O(len(tokens) * len(text))."""
    t = n = 0
    star, mark = -1, 0
    while n < len(text):
        token = tokens[t] if t < len(tokens) else None
        if t < len(tokens) and token == STAR:
            star, mark = t, n
            t += 1
        elif t < len(tokens) and _one(token, text[n]):
            t += 1
            n += 1
        elif star != -1:
            t, mark = star + 1, mark + 1
            n = mark
        else:
            return False
    while t < len(tokens) and tokens[t] == STAR:
        t += 1
    return t == len(tokens)
