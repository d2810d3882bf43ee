"""Project instructions: the AGENTS.md (or CLAUDE.md) at the root of the workflow's folder, read
by the agents that opt in (`instructions: project`, on the agent or as the workflow's default)
and, as Claude Code gives it to its subagents, by Claude Code subagent files.

Which file. flowrun's own agents read AGENTS.md (the file Codex, Cursor, Gemini CLI, Copilot and
others read), or CLAUDE.md when the project has no AGENTS.md: one file, never both. A Claude Code
agent file reads what Claude Code gives a subagent of the project: CLAUDE.md, .claude/CLAUDE.md
and CLAUDE.local.md, each that exists, in that order, and after each file the files its `@path`
imports name (at most MAX_IMPORT_DEPTH deep, only files inside the workflow's folder, never in a
code block); AGENTS.md when the project has none of them. The user's own ~/.claude/CLAUDE.md is
never read: a run depends on its project, not on whose machine runs it.

Which folder. The root is the workflow file's folder, never `--workdir`: the workflow's folder
is its author's, while a `--workdir` holds what the agents work on, perhaps someone else's
project, whose AGENTS.md is for the agents to read with read_file (as material, not as their
author's word).

At most MAX_BYTES (32 KiB, Codex's default) are read, the files together; past that the text is
cut with a note saying so, and `flowrun validate` warns at the line where the cut falls."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.project import Project
from flowrun.paths import display_path
from flowrun.pinned import open_regular

Flavor = Literal["agents", "claude"]
Mode = Literal["project", "none"]
MAX_BYTES = 32 * 1024
AGENTS_FILE = "AGENTS.md"
CLAUDE_FILES = ("CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md")
MAX_IMPORT_DEPTH = 5
TAG = "project-instructions"
# Claude Code's words around the files it gives a session (and so each subagent)
CLAUDE_PREAMBLE = (
    "Codebase and user instructions are shown below. Be sure to adhere to these instructions. "
    "IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them exactly "
    "as written."
)
CHECKED_IN = "project instructions, checked into the codebase"
LOCAL = "user's private project instructions, not checked in"
AGENTS_PREAMBLE = (
    "The project's instructions, from {files} at the root of the workflow's folder. Follow them "
    "where your own instructions above do not say otherwise."
)
_FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1", re.MULTILINE | re.DOTALL)
_CODE = re.compile(r"`[^`\n]*`")
_IMPORT = re.compile(r"(?:(?<=\s)|^)@([^\s`'\"()<>\[\]]+)", re.MULTILINE)


@dataclass
class Instructions:
    """The instructions one flavor of agent reads: the files read (relative to the root, in
    order), the block put at the end of a system prompt, the bytes of every file reached (those
    past the cap too), and where the cap cut them (file, line) when it did."""

    flavor: Flavor
    files: list[str] = field(default_factory=list)
    block: str = ""
    size: int = 0
    cut_at: tuple[str, int] | None = None
    used: int = 0  # bytes of text kept so far
    seen: set[str] = field(default_factory=set)


def flavor_of(path: Path) -> Flavor:
    """A Claude Code agent file (`.md`) reads as Claude Code does; any other agent as flowrun's."""
    return "claude" if path.suffix == ".md" else "agents"


def mode_of(own: Mode | None, default: Mode | None, flavor: Flavor) -> Mode:
    """An agent's own `instructions:`, else the workflow's, else `project` for a Claude Code
    agent file (Claude Code gives every subagent its CLAUDE.md) and `none` for the others."""
    return own or default or ("project" if flavor == "claude" else "none")


def read_instructions(root: Path, flavor: Flavor) -> Instructions | None:
    """What agents of `flavor` read from the workflow folder `root`; None when it has no file."""
    found = Instructions(flavor)
    parts: list[tuple[str, str]] = []
    if flavor == "claude":
        for name in CLAUDE_FILES:
            _add(root, root / name, parts, found, depth=0)
    elif not _add(root, root / AGENTS_FILE, parts, found):  # one file: AGENTS.md, else CLAUDE.md
        _add(root, root / "CLAUDE.md", parts, found)
    if not found.seen and flavor == "claude":
        _add(root, root / AGENTS_FILE, parts, found)
    if not found.seen:
        return None
    found.block = _block(found, parts)
    return found


def _add(
    root: Path, path: Path, parts: list[tuple[str, str]], found: Instructions, depth: int = MAX_IMPORT_DEPTH
) -> bool:
    """Read `path` into `parts` within the cap, then (below MAX_IMPORT_DEPTH) the files it
    imports; False when it is not a regular file inside `root`, or was reached already."""
    try:
        real = path.resolve()
        rel = real.relative_to(root.resolve()).as_posix()
    except (OSError, ValueError):
        return False
    if rel in found.seen:
        return False
    read = _read(real)
    if read is None:
        return False
    raw, size = read
    found.seen.add(rel)
    found.size += size
    if found.cut_at is not None:
        return True  # past the cap: counted, not read
    left = MAX_BYTES - found.used
    if len(raw) > left:
        text = raw[:left].decode("utf-8", "ignore")  # (a character the cut splits is left out)
        found.cut_at = (rel, text.count("\n") + 1)
    else:
        text = raw.decode("utf-8", "replace")
    found.used += min(len(raw), left)
    found.files.append(rel)
    parts.append((rel, text))
    if depth < MAX_IMPORT_DEPTH:
        for target in imports(text):
            _add(root, real.parent / target, parts, found, depth + 1)
    return True


def _read(path: Path) -> tuple[bytes, int] | None:
    """At most MAX_BYTES + 1 bytes of a regular file (a FIFO is never waited on) and its size."""
    try:
        with open_regular(path, pin=False) as f:
            return f.read(MAX_BYTES + 1), os.fstat(f.fileno()).st_size
    except OSError:
        return None


def imports(text: str) -> list[str]:
    """The paths a CLAUDE.md imports (`@NOTES.md`, `@guides/style.md`), outside code blocks and
    code spans; a path in the home folder (`@~/...`) is not followed."""
    prose = _CODE.sub("", _FENCE.sub("", text))
    found = [m.group(1).rstrip(".,;:!?") for m in _IMPORT.finditer(prose)]
    return [p for p in dict.fromkeys(found) if p and not p.startswith("~")]


def _block(found: Instructions, parts: list[tuple[str, str]]) -> str:
    """The text put at the end of a system prompt: one delimited block naming its files."""
    names = ", ".join(found.files)
    if found.flavor == "claude":
        body = [CLAUDE_PREAMBLE]
        for rel, text in parts:
            whose = LOCAL if rel == "CLAUDE.local.md" else CHECKED_IN
            body.append(f"Contents of {rel} ({whose}):\n\n{text.strip()}")
    else:
        body = [AGENTS_PREAMBLE.format(files=names), *(text.strip() for _, text in parts)]
    if found.cut_at is not None:
        body.append(f"[cut: the instructions are {found.size} bytes; only the first {MAX_BYTES} are read]")
    inner = "\n\n".join(body)
    return f'<{TAG} files="{names}">\n{inner}\n</{TAG}>'


def blocks_in(system: str) -> dict[str, str]:
    """The project-instructions blocks of a system prompt, by the files they name (what
    `replay --diff` compares)."""
    pattern = re.compile(rf'<{TAG} files="([^"\n]*)">\n(.*?)\n</{TAG}>', re.DOTALL)
    return {m.group(1): m.group(2) for m in pattern.finditer(system)}


def cap_warnings(project: Project) -> list[Diagnostic]:
    """`flowrun validate`: a warning for each flavor of instructions that an agent a workflow
    runs reads (its `instructions:`, the workflow's, or the default) and that is over the cap."""
    from flowrun.manifest.graph import run_agents

    flavors: set[Flavor] = set()
    for wf in project.workflows:
        for name in run_agents(wf.spec, project):
            loaded = project.agents.get(name)
            if loaded is None:  # an unknown agent: the cross-reference checks say so
                continue
            flavor = flavor_of(loaded.source.path)
            if mode_of(loaded.spec.instructions, wf.spec.instructions, flavor) == "project":
                flavors.add(flavor)
    found = [cap_warning(project.roots[0], flavor) for flavor in sorted(flavors)]
    return [d for d in found if d is not None]


def cap_warning(root: Path, flavor: Flavor) -> Diagnostic | None:
    """`flowrun validate`'s warning when what agents of `flavor` read is over the cap: at the
    line of the file where the cut falls."""
    found = read_instructions(root, flavor)
    if found is None or found.cut_at is None:
        return None
    rel, line = found.cut_at
    return Diagnostic(
        display_path(root / rel),
        line,
        1,
        "",
        f"the project instructions ({', '.join(found.files)}) are {found.size} bytes, over the "
        f"{MAX_BYTES}-byte cap: agents read them only up to this line",
        "keep them short: move detail into files the agents read when they need them",
        "instructions-too-long",
        "warning",
    )
