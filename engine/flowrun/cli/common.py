"""How every command ends: a user's mistake is one line (and a hint) with its exit code, a
flowrun bug is one line with exit 70 (the traceback with -v), Ctrl-C says how to continue."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, NoReturn, TypeVar

import click

from flowrun.cli.exit import output_closed
from flowrun.errors import FlowrunError
from flowrun.redaction import redact

if TYPE_CHECKING:
    from flowrun.manifest.diagnostics import Diagnostic

INTERNAL_ERROR = 70
INTERRUPTED = 130
TERMINATED = 143  # 128 + SIGTERM, as a shell reports a process SIGTERM ended
T = TypeVar("T")


class Terminated(BaseException):  # like KeyboardInterrupt: no `except Exception` swallows it
    """The command was stopped by SIGTERM (after the run recorded `cancelled`)."""


Hint = str | Callable[[], str] | None


def fail(message: str, hint: str | None = None, code: int = 1) -> NoReturn:
    click.echo(redact(f"error: {message}"), err=True)
    if hint:
        click.echo(redact(f"  hint: {hint}"), err=True)
    sys.exit(code)


def warn_skipped(diagnostics: list[Diagnostic]) -> None:
    """One line per Claude Code agent file a run skips because it does not load."""
    for d in diagnostics:
        if d.code == "skipped-agent":
            click.echo(redact(f"warning: {d.location}: {d.message}"), err=True)


def _hint_text(hint: Hint) -> str:
    return (hint() if callable(hint) else hint) or ""


def verbosity(quiet: bool, verbose: bool) -> int:
    return -1 if quiet else (1 if verbose else 0)


@contextmanager
def reported(verbose: bool, interrupted_hint: Hint = None) -> Iterator[None]:
    """Turn what a command raises into its one-line message and exit code. `interrupted_hint`
    (or a function giving it, asked once the command stopped) says how to continue after
    Ctrl-C or SIGTERM; with it, SIGTERM is handled from the start (as Terminated), so one
    that comes before the run starts (while loading, or reading `--question @-`) also ends
    with a line rather than a silent death."""
    previous = _sigterm_raises() if interrupted_hint is not None else None
    try:
        yield
    except FlowrunError as e:
        fail(e.message, e.hint, e.exit_code)
    except KeyboardInterrupt:
        if interrupted_hint is None:
            raise
        fail("cancelled (Ctrl-C)", _hint_text(interrupted_hint), INTERRUPTED)
    except Terminated:
        fail("cancelled (SIGTERM)", _hint_text(interrupted_hint) or None, TERMINATED)
    except OSError as e:  # the system refused (a name too long, no permission, a full disk): not a bug
        if isinstance(e, BrokenPipeError) and output_closed():
            raise  # `flowrun ... | head`: click ends the command, the entry says how (cli/__init__.py)
        if verbose:
            import traceback

            traceback.print_exception(e)
        fail(system_refused(e), "check the path, its permissions and the free space", 1)
    except Exception as e:
        if verbose:
            import traceback

            traceback.print_exception(e)
        fail(
            f"internal error: {type(e).__name__}: {e}",
            "this is a flowrun bug; the run folder (if any) is kept; rerun with -v for the traceback",
            INTERNAL_ERROR,
        )
    finally:
        if previous is not None:
            _restore_sigterm(previous)


def system_refused(e: OSError) -> str:
    """What the system refused and where, in one line: `File name too long: /tmp/yyy...`."""
    where = [str(name) for name in (e.filename, e.filename2) if name is not None]
    shown = [name if len(name) <= 200 else name[:200] + "..." for name in where]
    return f"{e.strerror or type(e).__name__}" + (f": {' -> '.join(shown)}" if shown else f": {e}")


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated()


def _sigterm_raises() -> object:
    """Make SIGTERM raise Terminated; the handler it replaces (None off the main thread)."""
    import signal

    try:
        return signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # not the main thread: signals are not ours to handle
        return None


def _restore_sigterm(previous: object) -> None:
    import signal

    with contextlib.suppress(ValueError, TypeError):
        if signal.getsignal(signal.SIGTERM) is _raise_terminated:  # not ignored meanwhile
            signal.signal(signal.SIGTERM, previous)  # type: ignore[arg-type]


async def read_in_background(read: Callable[[], T]) -> T:
    """Run a blocking read of the terminal (a chat message, an answer, an approval) in a
    daemon thread. In asyncio's default executor a Ctrl-C while it waits would leave the
    process waiting for that read at exit (asyncio.run joins its executor's threads)."""
    import asyncio
    import threading

    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(value: T | None, error: BaseException | None) -> None:
        if done.done():  # the waiting call was cancelled meanwhile
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(value)  # type: ignore[arg-type]

    def work() -> None:
        try:
            value, error = read(), None
        except BaseException as e:  # handed to the waiting call
            value, error = None, e
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=work, name="flowrun-terminal-read", daemon=True).start()
    return await done
