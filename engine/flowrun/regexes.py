"""Regular expressions a manifest or a model gives, compiled with one rule for failure: a pattern
nested deeper than Python's parser recurses (thousands of groups) is re.error like any other
invalid pattern, not a RecursionError that would end the command as a flowrun bug."""

from __future__ import annotations

import re


def compile_regex(pattern: str, flags: int = 0) -> re.Pattern[str]:
    try:
        return re.compile(pattern, flags)
    except RecursionError:
        raise re.error("the pattern nests groups too deep") from None
