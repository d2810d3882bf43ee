"""`flowrun import`: a foreign project's manifests written as a flowrun project (the workflow,
`agents.d/` with each prompt in `prompts/`, `tools.d/`) and `IMPORTED.md`, which lists what each
source key became and what was approximated or dropped, with the source's file and line."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import yaml

from flowrun.manifest.foreign.conversion import Conversion, Doc, Note, Piece
from flowrun.manifest.foreign.registry import format_named

HOW_TITLES = {"approximated": "Approximated", "dropped": "Dropped"}


class _Dumper(yaml.SafeDumper):
    """Block style for text of several lines, so prompts read as they were written."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = (
        "|" if "\n" in value and not any(c in value for c in "\t\r") and value == value.rstrip(" ") else None
    )
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def dump(data: object) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def planned_files(conv: Conversion) -> list[str]:
    """The files `write_project` writes, relative to the project folder."""
    workflow = conv.workflow
    out = [f"{workflow.name}.yaml"] if workflow is not None else []
    for piece in conv.pieces:
        if piece.kind == "agent":
            out += [f"agents.d/{piece.name}.yaml"] + (
                [f"prompts/{piece.name}.md.j2"] if isinstance(piece.data.get("prompt"), str) else []
            )
        elif piece.kind == "tool":
            out.append(f"tools.d/{piece.name}.yaml")
    return [*out, "IMPORTED.md"]


def write_project(conv: Conversion, folder: Path) -> list[Path]:
    """Write the manifests into `folder` (whose planned files must not exist); the files written."""
    written: list[Path] = []
    for piece in conv.pieces:
        header = f"# imported by `flowrun import` from {_source_of(conv, piece)}\n"
        if piece.kind == "workflow":
            written.append(_write(folder / f"{piece.name}.yaml", header + dump(piece.data)))
        elif piece.kind == "agent":
            written += _write_agent(piece, folder, header)
        else:
            written.append(
                _write(folder / "tools.d" / f"{piece.name}.yaml", header + dump(_tool(piece, folder)))
            )
    written.append(_write(folder / "IMPORTED.md", imported_md(conv, folder)))
    return written


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("x", encoding="utf-8") as f:  # never over a file that is there
        f.write(text)
    return path


def _write_agent(piece: Piece, folder: Path, header: str) -> list[Path]:
    data = dict(piece.data)
    out: list[Path] = []
    prompt = data.pop("prompt", None)
    if isinstance(prompt, str):
        out.append(_write(folder / "prompts" / f"{piece.name}.md.j2", prompt.rstrip("\n") + "\n"))
        data = {
            **{k: data[k] for k in ("version", "kind", "name", "description") if k in data},
            "prompt_file": f"{piece.name}.md.j2",
            **data,
        }
    elif prompt is not None:
        data["prompt"] = prompt
    out.insert(0, _write(folder / "agents.d" / f"{piece.name}.yaml", header + dump(data)))
    return out


def _tool(piece: Piece, folder: Path) -> Doc:
    """A function tool's `path` made relative to the new project (its module stays where it is)."""
    data = dict(piece.data)
    implementation = data.get("implementation")
    if isinstance(implementation, dict) and "function" in implementation:
        where = (piece.root / str(implementation.get("path", "."))).resolve()
        data["implementation"] = {**implementation, "path": os.path.relpath(where, folder.resolve())}
    return data


def _source_of(conv: Conversion, piece: Piece) -> str:
    src = piece.source
    line = (src.keys.get(piece.base) or src.values.get(piece.base) or (1, 1))[0]
    return f"{_relative(conv, piece.source.display)}:{line}"


def _relative(conv: Conversion, display: str) -> str:
    """A source file as IMPORTED.md names it: relative to the source project's folder."""
    return os.path.relpath(os.path.abspath(display), conv.root.resolve())


def imported_md(conv: Conversion, folder: Path) -> str:
    """IMPORTED.md: where the project came from, how to run it, and every note."""
    title = format_named(conv.format).title
    workflow = conv.workflow
    lines = [f"# Imported from {title}", ""]
    source = os.path.relpath(conv.root.resolve(), folder.resolve())
    lines.append(f"`flowrun import` made this project from the {title} project in `{source}`.")
    if workflow is not None:
        inputs = " ".join(f"--{name} ..." for name in workflow.data.get("inputs", {}))
        lines += ["", "Run it:", "", "```bash", f"flowrun {workflow.name}.yaml {inputs}".rstrip(), "```"]
    lines += ["", "## What each source key became", ""]
    lines += _table([n for n in conv.notes if n.how == "mapped"], conv)
    for how, heading in HOW_TITLES.items():
        notes = [n for n in conv.notes if n.how == how]
        if notes:
            lines += ["", f"## {heading}", "", *_table(notes, conv)]
    warnings = [d for d in conv.diagnostics if d.severity == "warning"]
    if warnings:
        lines += ["", "## Warnings", ""]
        lines += [f"- `{_relative(conv, d.file)}:{d.line}`: {d.message}" for d in warnings]
    return "\n".join(lines) + "\n"


def _table(notes: Iterable[Note], conv: Conversion) -> list[str]:
    rows = [f"| `{_relative(conv, n.file)}:{n.line}` | `{n.key}` | {_cell(n.became)} |" for n in notes]
    return ["| source | key | became |", "|---|---|---|", *rows] if rows else ["(none)"]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
