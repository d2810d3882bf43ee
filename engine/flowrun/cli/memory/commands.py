"""`flowrun memory show|search|edit|forget|export AGENT`: a person's side of an agent's memory
(its `memory:` in the project of --project, default the current folder). Every change goes through
the memory's writer lock (a run writing it meanwhile waits, and loses nothing), is redacted like
an agent's write, and is committed when the memory says `git: true`."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import click

from flowrun.cli.common import fail, reported

if TYPE_CHECKING:
    from flowrun.api.memory import AgentMemory

FOLDER = click.Path(file_okay=False, path_type=Path)


def _where(function: click.decorators.FC) -> click.decorators.FC:
    """The options every memory command takes to find the memory."""
    function = click.option(
        "--memory-dir", type=FOLDER, help="The folder the run kept its memories in (its --memory-dir)."
    )(function)
    function = click.option("--run", "run_dir", type=FOLDER, help="The run folder of a `scope: run` memory.")(
        function
    )
    function = click.option(
        "-p",
        "--project",
        type=click.Path(exists=True, path_type=Path),
        default=Path("."),
        show_default=True,
        help="The workflow file, or the project folder, that declares the agent.",
    )(function)
    return click.argument("agent")(function)


def _memory(agent: str, project: Path, run_dir: Path | None, memory_dir: Path | None) -> AgentMemory:
    from flowrun.api.memory import agent_memory

    # (absolute, as a run records them: what show and export print names the folder anywhere)
    return agent_memory(
        project, agent, run_dir.resolve() if run_dir else None, memory_dir.resolve() if memory_dir else None
    )


def _rel(found: AgentMemory, file: str) -> str:
    """A FILE argument (`MEMORY.md` or `/memories/MEMORY.md`) as a path in the folder."""
    from flowrun.tools.memory.folder import VIRTUAL, Refused

    given = file if file.startswith(VIRTUAL) else f"{VIRTUAL}/{file.lstrip('/')}"
    try:
        return found.folder.rel(given, "FILE")
    except Refused as e:
        fail(e.message, "name a file of the memory, as `flowrun memory show AGENT` lists them")


@click.group()
def memory() -> None:
    """Show, search, edit, forget or export an agent's memory (its `memory:`, kept across runs)."""


@memory.command()
@_where
@click.argument("file", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the files and their text as JSON.")
def show(
    agent: str, project: Path, run_dir: Path | None, memory_dir: Path | None, file: str | None, as_json: bool
) -> None:
    """Print the memory's files, then MEMORY.md (or FILE) with where a prompt's index stops."""
    from flowrun.api.memory import memory_document
    from flowrun.manifest.memory import INDEX
    from flowrun.tools.memory.folder import Refused

    with reported(False):
        found = _memory(agent, project, run_dir, memory_dir)
        if as_json:
            click.echo(json.dumps(memory_document(found), indent=2, ensure_ascii=False))
            return
        spec = found.spec
        files = found.folder.files()
        click.echo(f"memory '{found.name}' of agent {agent} ({spec.scope}): {found.folder.root}")
        for entry in files:
            click.echo(f"  {found.folder.virtual(entry.rel)}  {entry.size:,} bytes")
        if not files:
            click.echo("  (empty)")
        rel = _rel(found, file) if file else INDEX
        try:
            text = found.folder.read_text(rel, limit=1 << 24)
        except Refused as e:
            if file:
                fail(e.message)
            return
        click.echo(f"\n--- {found.folder.virtual(rel)} ---")
        lines = text.splitlines()
        for number, line in enumerate(lines, 1):
            click.echo(line)
            if rel == INDEX and number == spec.index_lines and len(lines) > number:
                click.echo(f"--- a prompt's index stops here ({spec.index_lines} lines; `index_lines`) ---")


@memory.command()
@_where
@click.argument("query", nargs=-1, required=True)
@click.option(
    "-n",
    "--limit",
    type=click.IntRange(1, 1000),
    default=10,
    show_default=True,
    help="At most this many passages.",
)
def search(
    agent: str,
    project: Path,
    run_dir: Path | None,
    memory_dir: Path | None,
    query: tuple[str, ...],
    limit: int,
) -> None:
    """Find the passages of the memory with any of the words of QUERY (best first)."""
    from flowrun.tools.memory.folder import Refused, locked
    from flowrun.tools.memory.search import search as search_memory

    with reported(False):
        found = _memory(agent, project, run_dir, memory_dir)
        try:
            with locked(found.folder):
                hits = search_memory(found.folder, " ".join(query), limit)
        except Refused as e:
            fail(e.message)
        if not hits:
            click.echo(f"no passage matches {' '.join(query)!r}")
            sys.exit(1)
        for hit in hits:
            click.echo(f"{hit.path}:{hit.line}: {hit.snippet}")


@memory.command()
@_where
@click.argument("file", required=False)
def edit(agent: str, project: Path, run_dir: Path | None, memory_dir: Path | None, file: str | None) -> None:
    """Open MEMORY.md (or FILE) in $VISUAL or $EDITOR; what you save replaces it (secrets redacted)."""
    from flowrun.manifest.memory import INDEX

    with reported(False):
        found = _memory(agent, project, run_dir, memory_dir)
        rel = _rel(found, file) if file else INDEX
        before = _current(found, rel)
        with tempfile.TemporaryDirectory(prefix="flowrun-memory-") as tmp:
            draft = Path(tmp) / Path(rel).name
            draft.write_text(before or "", encoding="utf-8")
            _open_editor(draft)
            after = draft.read_text(encoding="utf-8")
            if after == (before or ""):
                click.echo(f"{found.folder.virtual(rel)} unchanged")
                return
            _save(found, rel, before, after, draft)


def _current(found: AgentMemory, rel: str) -> str | None:
    from flowrun.tools.memory.folder import Refused

    if found.folder.kind(rel) is None:
        return None
    try:
        return found.folder.read_text(rel, limit=1 << 24)
    except Refused as e:
        fail(e.message)


def _open_editor(path: Path) -> None:
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    try:
        code = subprocess.call([*shlex.split(editor), str(path)])
    except OSError as e:
        fail(f"cannot start the editor {editor!r}: {e.strerror or e}", "set VISUAL or EDITOR")
    if code != 0:
        fail(f"the editor {editor!r} exited {code}; nothing was written")


def _save(found: AgentMemory, rel: str, before: str | None, after: str, draft: Path) -> None:
    """The edited text written whole (redacted, within the caps) unless the file changed while
    it was edited."""
    from flowrun.redaction import MARK, Redactor
    from flowrun.tools.memory.commands import Change, apply, check_caps
    from flowrun.tools.memory.folder import Refused, locked

    clean = Redactor().text(after)
    redacted = clean.count(MARK) - after.count(MARK)
    where = found.folder.virtual(rel)
    try:
        with locked(found.folder):
            if _current(found, rel) != before:
                fail(f"{where} changed while you edited it; nothing was written", f"your text is in {draft}")
            change = check_caps(found.folder, Change("edit", rel, (before or "").encode(), clean.encode()))
            apply(found.folder, change)
            _commit(found, f"flowrun memory edit: {where}")
    except Refused as e:
        fail(e.message)
    note = f" ({redacted} secret(s) replaced by {MARK})" if redacted else ""
    click.echo(f"wrote {where} ({len(clean.encode()):,} bytes){note}")


def _commit(found: AgentMemory, message: str) -> None:
    if not found.spec.git:
        return
    import asyncio

    from flowrun.tools.memory.history import commit

    problem = asyncio.run(commit(found.folder, message))
    if problem:
        click.echo(f"warning: not committed: {problem}", err=True)


@memory.command()
@_where
@click.argument("files", nargs=-1)
@click.option("--all", "everything", is_flag=True, help="Forget every file of the memory.")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
def forget(
    agent: str,
    project: Path,
    run_dir: Path | None,
    memory_dir: Path | None,
    files: tuple[str, ...],
    everything: bool,
    yes: bool,
) -> None:
    """Delete FILES from the memory (or every file with --all)."""
    from flowrun.tools.memory.folder import Refused, locked

    with reported(False):
        found = _memory(agent, project, run_dir, memory_dir)
        if not files and not everything:
            fail("name the FILES to forget, or give --all", f"`flowrun memory show {agent}` lists them")
        rels = (
            [e.rel for e in found.folder.entries(depth=0)] if everything else [_rel(found, f) for f in files]
        )
        shown = ", ".join(found.folder.virtual(r) for r in rels) or "(nothing)"
        if not rels:
            click.echo(f"memory '{found.name}' is empty")
            return
        if not yes:
            if not sys.stdin.isatty():
                fail(f"forget {shown}? (not asked: no terminal)", "add --yes")
            click.confirm(f"forget {shown}?", abort=True)
        try:
            with locked(found.folder):
                for rel in rels:
                    if found.folder.kind(rel) is None:
                        fail(
                            f"{found.folder.virtual(rel)} does not exist",
                            f"`flowrun memory show {agent}` lists the files",
                        )
                    found.folder.remove(rel)
                _commit(found, f"flowrun memory forget: {shown}")
        except Refused as e:
            fail(e.message)
        click.echo(f"forgot {shown}")


@memory.command()
@_where
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here (default: stdout)."
)
def export(
    agent: str, project: Path, run_dir: Path | None, memory_dir: Path | None, output: Path | None
) -> None:
    """Write the memory as JSON: where it is and each file with its sha256 and text."""
    from flowrun.api.memory import memory_document

    with reported(False):
        found = _memory(agent, project, run_dir, memory_dir)
        text = json.dumps(memory_document(found), indent=2, ensure_ascii=False)
        if output is None:
            click.echo(text)
            return
        output.write_text(text + "\n", encoding="utf-8")
        click.echo(f"wrote memory '{found.name}' ({len(found.folder.files())} file(s)) to {output}", err=True)
