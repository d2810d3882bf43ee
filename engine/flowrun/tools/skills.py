"""`use_skill`: read a skill from the skills library (SOPs, templates, examples, best practices).

Layout (the Agent Skills convention): a skills folder holds one folder per skill with a
`SKILL.md` whose YAML front matter has `name` and `description`, plus optional `templates/`,
`examples/`, `sop/` and other resource files. A `skills.json` index (`{"skills": {name: {title,
description, category, path}}}`, path relative to the skills folder) is read too, for libraries
that keep one; a SKILL.md it lists needs no front matter (the index names and describes it).

Skills folders, first found wins for a name: config `skills_dir`, then `skills/` in each
search-path entry (the project's folder before the built-ins, so a project overrides a skill).
The shipped examples' skills are found only by name (an entry's `skills: [...]` list), so a
project's `use_skill` without a list offers only the project's own library.

A skill from a library outside the workflow's folder and flowrun's own (a `skills_dir` elsewhere,
a symlink out of the project) is not the workflow author's text: its guide and files reach the
model framed as data, in a block naming the skill and its library (flowrun/foreign_text.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from flowrun.foreign_text import frame
from flowrun.paths import examples_root
from flowrun.tools.base import ToolContext, error, finish_result, tool
from flowrun.types import ToolResult, decode_json
from flowrun.yaml_scan import Loader, scan_events

INDEX_FILE = "skills.json"
SKILL_FILE = "SKILL.md"
INCLUDED_DIRS = ("sop", "templates", "examples")  # included in full with the guide when small
MAX_LISTED_FILES = 50
DEFAULT_MAX_FILE_BYTES = 4_000  # a resource file up to this size is included in full
DEFAULT_MAX_TOTAL_BYTES = 16_000  # all included resource files together
DEFAULT_MAX_READ_BYTES = 100_000  # one file asked for with `file`


@dataclass(slots=True)
class Skill:
    name: str
    description: str
    document: Path  # SKILL.md, or the single file a skills.json entry names
    folder: Path | None  # where templates/ and examples/ live; None for a single-file skill


def skill_roots(search_path: list[Path], config: Mapping[str, object]) -> list[Path]:
    roots: list[Path] = []
    configured = config.get("skills_dir")
    if configured:
        path = Path(str(configured)).expanduser()
        if not path.is_absolute() and search_path:
            path = search_path[0] / path  # relative to the project folder
        roots.append(path)
    roots += [entry / "skills" for entry in search_path]
    roots += [entry / ".claude" / "skills" for entry in search_path]  # Claude Code's project skills
    out: list[Path] = []
    for root in roots:
        if root.is_dir() and root.resolve() not in out:
            out.append(root.resolve())
    return out


def find_skills(
    search_path: list[Path], config: Mapping[str, object], by_name: bool = False
) -> dict[str, Skill]:
    """Every skill visible from the search path, by name, in a stable order; only those the
    config's `skills` list names, when it has one (an agent's `use_skill: {skills: [a, b]}`).
    The shipped examples' skills count only with such a list (or `by_name`: a check that
    looks a listed name up)."""
    allowed = config.get("skills")
    found = _all_skills(search_path, config, examples=by_name or isinstance(allowed, list))
    if isinstance(allowed, list):
        return {name: skill for name, skill in found.items() if name in allowed}
    return found


def _all_skills(search_path: list[Path], config: Mapping[str, object], examples: bool) -> dict[str, Skill]:
    found: dict[str, Skill] = {}
    documents: set[Path] = set()
    shipped = examples_root().resolve()
    for root in skill_roots(search_path, config):
        if not examples and root.is_relative_to(shipped):
            continue
        for skill in _indexed_skills(root) + _folder_skills(root):
            # an indexed skill is not listed again under its folder's front-matter name
            if skill.name not in found and skill.document not in documents:
                found[skill.name] = skill
                documents.add(skill.document)
    return dict(sorted(found.items()))


def _folder_skills(root: Path) -> list[Skill]:
    skills = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        document = folder / SKILL_FILE
        if document.is_file():
            meta, body = parse_front_matter(_read_text(document))
            name = str(meta.get("name") or folder.name)
            skills.append(Skill(name, _describe(meta, body), document, folder))
    return skills


def _indexed_skills(root: Path) -> list[Skill]:
    index = root / INDEX_FILE
    if not index.is_file():
        return []
    try:
        entries = decode_json(_read_text(index)).get("skills", {})
    except (json.JSONDecodeError, AttributeError):
        return []  # a broken index must not hide the folder skills next to it
    skills = []
    for name, entry in entries.items() if isinstance(entries, dict) else []:
        if not isinstance(entry, dict):
            continue
        target = (root / str(entry.get("path") or name)).resolve()
        if not (target == root or root in target.parents):
            continue  # an index may not point outside its skills folder
        if target.is_dir():
            target = target / SKILL_FILE
        if not target.is_file():
            continue
        meta, body = parse_front_matter(_read_text(target))
        folder = target.parent if target.name == SKILL_FILE else None
        description = str(entry.get("description") or "") or _describe(meta, body)
        skills.append(Skill(str(name), description, target, folder))
    return skills


def parse_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(front matter mapping, body) of a markdown file that may start with `---` YAML `---`."""
    if not text.startswith("---"):
        return {}, text
    first_nl = text.find("\n")
    end = text.find("\n---", first_nl)
    if first_nl < 0 or end < 0:
        return {}, text
    front = text[first_nl + 1 : end]
    if scan_events(front) is not None:  # an alias bomb or absurd nesting: no front matter
        return {}, text
    try:
        meta = yaml.load(front, Loader=Loader)  # the safe loader (C when available)
    except Exception:  # YAML errors, and a value its tag cannot hold (constructors raise anything)
        return {}, text
    body = text[end + 4 :].split("\n", 1)[1] if "\n" in text[end + 4 :] else ""
    return (meta if isinstance(meta, dict) else {}), body.lstrip("\n")


def _describe(meta: Mapping[str, object], body: str) -> str:
    if meta.get("description"):
        return " ".join(str(meta["description"]).split())
    for line in body.splitlines():  # no front matter: the first line of prose
        if line.strip() and not line.startswith("#"):
            return line.strip()
    return ""


def _read_text(path: Path, limit: int | None = None) -> str:
    with path.open("rb") as f:
        raw = f.read(limit) if limit else f.read()
    return raw.decode("utf-8", errors="replace")


def skill_parameters(search_path: list[Path], config: Mapping[str, object]) -> dict[str, Any]:
    """The `use_skill` parameters schema with `skill` as an enum of the skills found, each
    described, so the model picks a real one (the runtime calls this to offer the tool)."""
    skills = find_skills(search_path, config)
    skill_schema: dict[str, object] = {"type": "string"}
    if skills:
        skill_schema["enum"] = list(skills)
        listing = "; ".join(
            f"{s.name}: {s.description}" if s.description else s.name for s in skills.values()
        )
        skill_schema["description"] = f"The skill to read. Available: {listing}"
    else:
        skill_schema["description"] = "The skill to read (no skills library was found)."
    return {
        "type": "object",
        "properties": {
            "skill": skill_schema,
            "file": {
                "type": "string",
                "description": "Optional: one file of the skill to read in full, e.g. templates/report.md",
            },
        },
        "required": ["skill"],
        "additionalProperties": False,
    }


@tool(parameters=skill_parameters, foreign_text=True)
async def use_skill(ctx: ToolContext, skill: str, file: str | None = None) -> ToolResult:
    started = time.perf_counter()
    params: dict[str, object] = {"skill": skill, "file": file}
    skills = find_skills(ctx.search_path, ctx.config)
    found = skills.get(skill)
    if "\x00" in skill or (file and "\x00" in file):
        result = error("INVALID_PARAM", "the skill name or file contains a NUL byte")
    elif found is None:
        names = ", ".join(skills) or "(none: no skills/ folder was found)"
        result = error(
            "NOT_FOUND", f"unknown skill {skill!r}; available skills: {names}", available=list(skills)
        )
    elif file:
        result = _read_skill_file(ctx, found, file)
    else:
        result = _skill_overview(ctx, found)
    return finish_result(result, params, started)


def library_of(search_path: list[Path], skill: Skill) -> Path | None:
    """The library a skill comes from when it is not the author's: the folder of a skill whose
    document lies outside the workflow's folder and flowrun's own (`skills_dir` pointing
    elsewhere, a symlink out of the project); None for the author's own."""
    document = skill.document.resolve()
    if any(document.is_relative_to(root.resolve()) for root in search_path):
        return None
    return (skill.folder or document).resolve().parent


def _as_read(search_path: list[Path], skill: Skill, text: str) -> str:
    """A skill's own text as the model reads it: framed as data when it comes from a library."""
    library = library_of(search_path, skill)
    if library is None:
        return text
    return frame(text, f"skill '{skill.name}' from the library {library}")


def _resources(skill: Skill) -> list[Path]:
    if skill.folder is None:
        return []
    files = [
        p
        for p in sorted(skill.folder.rglob("*"))
        if p.is_file() and p != skill.document and not any(part.startswith(".") for part in p.parts)
    ]
    return files


def _included(ctx: ToolContext, files: list[Path], rel: list[str]) -> tuple[list[str], list[str]]:
    """The small templates, examples and SOPs shown with the guide: (their lines, their names)."""
    max_file = int(ctx.config.get("max_file_bytes") or DEFAULT_MAX_FILE_BYTES)
    budget = int(ctx.config.get("max_total_bytes") or DEFAULT_MAX_TOTAL_BYTES)
    parts: list[str] = []
    included: list[str] = []
    for path, name in zip(files, rel, strict=True):
        size = path.stat().st_size
        if name.split("/", 1)[0] in INCLUDED_DIRS and size <= max_file and size <= budget and _is_text(path):
            parts += ["", f"## {name}", "", _read_text(path).rstrip()]
            included.append(name)
            budget -= size
    return parts, included


def _file_notes(skill: Skill, rel: list[str], included: list[str], meta: Mapping[str, object]) -> list[str]:
    """flowrun's own lines after a skill's guide: its files, how to read or run them."""
    parts: list[str] = []
    if rel:
        parts += ["", "## Files of this skill"]
        parts += [f"- {n}" + (" (included above)" if n in included else "") for n in rel[:MAX_LISTED_FILES]]
        if len(rel) > MAX_LISTED_FILES:
            parts.append(f"- … and {len(rel) - MAX_LISTED_FILES} more")
        if len(included) < len(rel):
            parts.append(f"Read one in full with use_skill(skill={skill.name!r}, file=<path above>).")
        scripts = [n for n in rel if n.startswith("scripts/")]
        if scripts:
            parts.append(
                f"Run a script with run_skill_script(skill={skill.name!r}, script={scripts[0]!r}, "
                "args=[...]) when you have that tool (it runs in the sandbox)."
            )
    allowed_tools = meta.get("allowed-tools")
    if allowed_tools:
        listed = " ".join(map(str, allowed_tools)) if isinstance(allowed_tools, list) else str(allowed_tools)
        parts += [
            "",
            f"(This skill's allowed-tools, {listed}, are not enforced by flowrun: your own tools "
            "and their approvals apply.)",
        ]
    return parts


def _skill_overview(ctx: ToolContext, skill: Skill) -> ToolResult:
    meta, body = parse_front_matter(_read_text(skill.document))
    files = _resources(skill)
    rel = [p.relative_to(skill.folder).as_posix() for p in files] if skill.folder else []
    shown, included = _included(ctx, files, rel)
    guide = "\n".join([skill.description, "", body.strip(), *shown]).strip()
    notes = "\n".join(_file_notes(skill, rel, included, meta))
    text = f"# Skill: {skill.name}\n{_as_read(ctx.search_path, skill, guide)}\n{notes}".strip() + "\n"
    data = {
        "skill": skill.name,
        "description": skill.description,
        "path": str(skill.document),
        "metadata": meta,
        "files": rel,
        "included": included,
    }
    return ToolResult.ok(text, **data)


def _read_skill_file(ctx: ToolContext, skill: Skill, file: str) -> ToolResult:
    if skill.folder is None:
        return error("NOT_FOUND", f"skill {skill.name!r} is a single document and has no files")
    target = (skill.folder / file).resolve()
    folder = skill.folder.resolve()
    if folder not in target.parents:
        return error("ACCESS_DENIED", f"{file!r} is outside the folder of skill {skill.name!r}")
    if not target.is_file():
        names = ", ".join(p.relative_to(skill.folder).as_posix() for p in _resources(skill)) or "(none)"
        return error("NOT_FOUND", f"skill {skill.name!r} has no file {file!r}; its files: {names}")
    if not _is_text(target):
        return error("BINARY_FILE", f"{file!r} is a binary file")
    limit = int(ctx.config.get("max_read_bytes") or DEFAULT_MAX_READ_BYTES)
    size = target.stat().st_size
    text = _as_read(ctx.search_path, skill, _read_text(target, limit))
    rel = target.relative_to(folder).as_posix()
    if size > limit:
        return ToolResult.partial(
            f"# {skill.name}/{rel}\n\n{text}\n\n[cut at {limit} of {size} bytes]", skill=skill.name, file=rel
        )
    return ToolResult.ok(f"# {skill.name}/{rel}\n\n{text}", skill=skill.name, file=rel)


def _is_text(path: Path) -> bool:
    with path.open("rb") as f:
        return b"\x00" not in f.read(2048)
