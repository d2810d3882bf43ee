"""How every command ends: a user's mistake is one line (and a hint) with its exit code, a
flowrun bug is one line with exit 70 (the traceback with -v), Ctrl-C says how to continue."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import click

from flowrun.errors import FlowrunError
from flowrun.redaction import redact

INTERNAL_ERROR = 70
INTERRUPTED = 130


def fail(message: str, hint: str | None = None, code: int = 1) -> NoReturn:
    click.echo(redact(f"error: {message}"), err=True)
    if hint:
        click.echo(redact(f"  hint: {hint}"), err=True)
    sys.exit(code)


def verbosity(quiet: bool, verbose: bool) -> int:
    return -1 if quiet else (1 if verbose else 0)


@contextmanager
def reported(verbose: bool, interrupted_hint: str | None = None) -> Iterator[None]:
    """Turn what a command raises into its one-line message and exit code."""
    try:
        yield
    except FlowrunError as e:
        fail(e.message, e.hint, e.exit_code)
    except KeyboardInterrupt:
        if interrupted_hint is None:
            raise
        fail("interrupted", interrupted_hint, INTERRUPTED)
    except Exception as e:
        if verbose:
            import traceback

            traceback.print_exception(e)
        fail(
            f"internal error: {type(e).__name__}: {e}",
            "this is a flowrun bug; the run folder (if any) is kept; rerun with -v for the traceback",
            INTERNAL_ERROR,
        )
