"""The process environment's variables, decoded once per change. Reading `os.environ` decodes
every name and value in Python (about a microsecond each); a run reads all of them more than
once (the secret values its redaction hides, the SDKs' variables that pick a client), so a
batch of many runs would decode the same environment thousands of times."""

from __future__ import annotations

import os
import sys

_seen: dict[bytes, bytes] | None = None  # the environment as last decoded (os.environ's own data)
_variables: tuple[tuple[str, str], ...] = ()


def variables() -> tuple[tuple[str, str], ...]:
    """Every (name, value) of the environment now."""
    global _seen, _variables
    data = getattr(os.environ, "_data", None)
    if not isinstance(data, dict) or os.name != "posix":  # (not CPython on a POSIX system)
        return tuple(os.environ.items())
    if data != _seen:  # (a comparison in C: no decoding)
        snapshot = dict(data)
        encoding = sys.getfilesystemencoding()
        _variables = tuple(
            (name.decode(encoding, "surrogateescape"), value.decode(encoding, "surrogateescape"))
            for name, value in snapshot.items()
        )
        _seen = snapshot
    return _variables
