"""Reading a chat's messages: the agent's answer on stdout, the `you> ` prompt on stderr, the
next message from stdin (a terminal or a pipe). Used by `flowrun chat` and by `flowrun resume`
of a chat's run folder."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from flowrun.cli.common import read_in_background
from flowrun.pinned import read_json_object

if TYPE_CHECKING:
    from flowrun.cli.views.progress import Progress

END_WORDS = ("/exit", "/quit", "/bye")
PROMPT = "you> "


def chat_reader(progress: Progress | None) -> Callable[[str | None], Awaitable[str | None]]:
    """Print the agent's answer on stdout, then read the next message from stdin: a line, or
    several joined when a line ends with a backslash. End of input or /exit ends the chat."""

    def read_message(answer: str | None) -> str | None:
        if answer is not None:
            click.echo(answer.strip() or "(no answer)")
        lines: list[str] = []
        while True:
            print(PROMPT if not lines else "...> ", end="", file=sys.stderr, flush=True)
            line = sys.stdin.readline()
            if not line:  # end of input
                if not sys.stdin.isatty() or lines:
                    print(file=sys.stderr)
                return "\n".join(lines) or None
            text = line.rstrip("\n")
            if not lines and text.strip() in END_WORDS:
                return None
            if text.endswith("\\"):
                lines.append(text[:-1])
                continue
            lines.append(text)
            message = "\n".join(lines).strip()
            if message:
                return message
            lines = []  # an empty line asks again

    async def read(answer: str | None) -> str | None:
        return await read_in_background(lambda: read_message(answer))

    return read


def is_chat(run_dir: Path) -> bool:
    """Whether a run folder holds a chat (run.json says which agent)."""
    return bool(read_json_object(run_dir / "run.json").get("chat"))
