"""A project's `.env`: `KEY=VALUE` lines loaded into the environment before a command reads its
workflow, as the designs flowrun was made from keep their keys and endpoints.

Two files are read, when they exist: the `.env` of the current folder, then the `.env` next to
the workflow (or each path `validate` is given). A variable that is already set is never changed:
the environment wins over both files, and the current folder's file over the workflow's. Values
are never printed or logged (a line that cannot be read is reported by its line number only), and
a value whose name looks secret is redacted like any key. python-dotenv is imported only when a
`.env` exists, so commands start as fast without one."""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterable
from pathlib import Path

import click

ENV_FILE = ".env"


def load_env_files(near: Iterable[Path | None] = ()) -> list[Path]:
    """Load the current folder's `.env`, then the one in (or next to) each path of `near`;
    the files read, in order."""
    folders = [Path.cwd()] + [p if p.is_dir() else p.parent for p in near if p is not None]
    read: list[Path] = []
    for folder in folders:
        path = folder / ENV_FILE
        try:
            if not path.is_file() or any(path.samefile(seen) for seen in read):
                continue
        except OSError:
            continue
        _load(path)
        read.append(path)
    return read


def _load(path: Path) -> None:
    from dotenv import dotenv_values
    from dotenv.parser import parse_stream

    from flowrun.errors import UsageError
    from flowrun.paths import display_path

    shown = display_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{shown} is not UTF-8 text", "save it as UTF-8 (NAME=VALUE lines)") from None
    except OSError as e:
        raise UsageError(f"cannot read {shown}: {e.strerror or e}", "check its permissions") from None
    for binding in parse_stream(io.StringIO(text)):
        if binding.error:  # only where it is: the line may hold a secret
            line = binding.original.line
            click.echo(f"warning: {shown}:{line}: not a NAME=VALUE line, skipped", err=True)
    values = _quietly(lambda: dotenv_values(stream=io.StringIO(text)))
    for name, value in values.items():
        if value is not None and name not in os.environ:
            os.environ[name] = value


def _quietly(read: Callable[[], dict[str, str | None]]) -> dict[str, str | None]:
    """python-dotenv logs the lines it cannot parse itself: reported above, once, with the file."""
    import logging

    logger = logging.getLogger("dotenv.main")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        return read()
    finally:
        logger.setLevel(level)
