"""<scenario name>: the entry point of design/scenario.md (<module>:<function>)."""

from __future__ import annotations

# constants, each with the rule that defines it
FACTOR = 1.0  # R1: <source>


def function_name(value: float, mode: str) -> float:
    """<what it returns, in which unit>; raises ValueError when <condition> (R<n>)."""
    if mode not in ("a", "b"):  # R<n>: an unknown mode is an error
        raise ValueError(f"unknown mode {mode!r}")
    return value * FACTOR  # R1
