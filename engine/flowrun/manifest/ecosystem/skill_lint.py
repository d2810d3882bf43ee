"""Skill folders checked against the Agent Skills specification (agentskills.io): a folder
with a SKILL.md whose front matter has `name` (equal to the folder's name; lowercase letters,
digits and single hyphens, at most 64) and `description` (at most 1024 characters), and
optionally `license`, `compatibility` (at most 500), `metadata` (strings to strings) and
`allowed-tools` (a space-separated string or a list).

A name flowrun can use but other agents may not (`report_writing`) is a warning; so are keys
the specification does not define, unless they look like a misspelling of one (an error with
a did-you-mean), and `allowed-tools`, which flowrun reports instead of enforcing.

A library may keep a `skills.json` index instead (`{"skills": {name: {title, description,
category, path}}}`, as the init/execute design has it): the index names and describes each
skill it lists, so those SKILL.md files need no front matter and their names follow the
library's own convention (snake_case); the index itself is checked (JSON, each entry a mapping
with a description and a path to a skill folder, its SKILL.md or one document, inside the
library)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.ecosystem.front_matter import load_document
from flowrun.manifest.schema.check import did_you_mean
from flowrun.manifest.yaml_source import Source
from flowrun.paths import is_dir, is_file
from flowrun.types import decode_json

SKILL_FILE = "SKILL.md"
INDEX_FILE = "skills.json"  # tools/skills.py's INDEX_FILE (not imported: the tools layer is a sibling)
SPEC_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
MISSPELLINGS = {"allowed_tools": "allowed-tools", "allowedTools": "allowed-tools", "tools": "allowed-tools"}
PORTABLE_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def skill_folders(root: Path) -> list[Path]:
    """The skill folders of a project: `skills/*/` and `.claude/skills/*/` with a SKILL.md."""
    found: list[Path] = []
    for library in (root / "skills", root / ".claude" / "skills"):
        if is_dir(library):
            found += sorted(p for p in library.iterdir() if is_file(p / SKILL_FILE))
    return found


def lint_skill(folder: Path, display: str) -> list[Diagnostic]:
    """Every problem of one skill folder's SKILL.md (one its library's skills.json lists needs
    no front matter, and the index names it)."""
    indexed = folder.resolve() in indexed_folders(folder.parent)
    doc, diags = load_document(folder / SKILL_FILE, display)
    if indexed and any(d.code == "no-front-matter" for d in diags):
        return []  # the index's entry is its front matter
    src = doc.source
    if src.data is None or any(d.severity == "error" for d in diags):
        return diags
    meta: dict[str, object] = src.data
    out = list(diags)
    out += _keys(src, meta)
    if not indexed:
        out += _name(src, meta, folder.name)
    out += _text(src, meta, "description", 1024, required=True)
    out += _text(src, meta, "compatibility", 500, required=False)
    if "license" in meta and not isinstance(meta["license"], str):
        out.append(src.diag(("license",), "`license` is a license name or a file name", "", "wrong-type"))
    out += _metadata(src, meta)
    out += _allowed_tools(src, meta)
    return out


def _index_data(library: Path) -> tuple[str, object] | None:
    """(text, parsed JSON or the JSONDecodeError) of a library's skills.json; None without one."""
    index = library / INDEX_FILE
    try:
        text = index.read_text(encoding="utf-8", errors="replace") if is_file(index) else None
    except OSError:
        return None
    if text is None:
        return None
    try:
        return text, decode_json(text)
    except json.JSONDecodeError as e:
        return text, e


def _entries(data: object) -> dict[str, object]:
    skills = data.get("skills") if isinstance(data, dict) else None
    return skills if isinstance(skills, dict) else {}


def _entry_target(library: Path, name: str, entry: object) -> Path | None:
    """What an index entry's `path` points at inside the library: a skill folder (given as
    the folder or its SKILL.md), or a single document; None when it is neither."""
    if not isinstance(entry, dict):
        return None
    target = (library / str(entry.get("path") or name)).resolve()
    if target.name == SKILL_FILE:
        target = target.parent
    if not target.is_relative_to(library.resolve()) or target == library.resolve():
        return None
    return target if is_file(target / SKILL_FILE) or is_file(target) else None


def indexed_folders(library: Path) -> set[Path]:
    """The skill folders a library's skills.json lists (resolved)."""
    found = _index_data(library)
    if found is None or isinstance(found[1], json.JSONDecodeError):
        return set()
    targets = (_entry_target(library, name, e) for name, e in _entries(found[1]).items())
    return {t for t in targets if t is not None and is_dir(t)}


def lint_index(library: Path, display: str) -> list[Diagnostic]:
    """The problems of a library's skills.json: not JSON, no `skills` mapping, an entry that is
    not a mapping, has no description, or points at no skill inside the library."""
    found = _index_data(library)
    if found is None:
        return []
    text, data = found
    if isinstance(data, json.JSONDecodeError):
        message = f"{INDEX_FILE} is not valid JSON: {data.msg}"
        return [Diagnostic(display, data.lineno, data.colno, "", message, "fix the JSON", "invalid")]
    if not isinstance(data, dict) or not isinstance(data.get("skills"), dict):
        message = f'{INDEX_FILE} needs a "skills" mapping of skill name to entry'
        hint = '{"skills": {"my_skill": {"description": "...", "path": "my_skill/SKILL.md"}}}'
        return [Diagnostic(display, 1, 1, "", message, hint, "invalid")]
    out: list[Diagnostic] = []
    for name, entry in data["skills"].items():
        line = _line_of(text, name)
        where = f"skills.{name}"
        if not isinstance(entry, dict):
            message = f"skill '{name}': an entry is a mapping (description, path)"
            out.append(Diagnostic(display, line, 1, where, message, "", "wrong-type"))
            continue
        if not isinstance(entry.get("description"), str) or not entry["description"].strip():
            message = f"skill '{name}' has no description"
            hint = "say what it teaches and when to read it: the model chooses skills by it"
            out.append(Diagnostic(display, line, 1, where, message, hint, "missing-key"))
        if _entry_target(library, name, entry) is None:
            path = entry.get("path") or name
            message = f"skill '{name}': {path} is not a skill folder or a file in this library"
            hint = "give the path relative to the skills folder, e.g. " + f"{name}/SKILL.md"
            out.append(Diagnostic(display, line, 1, where, message, hint, "missing-path"))
    return out


def _line_of(text: str, key: str) -> int:
    """The line of a skill's key in the index (1 when not found)."""
    at = text.find(json.dumps(key))
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def skill_libraries(root: Path) -> list[Path]:
    """The skill libraries of a project that hold a skills.json index."""
    return [lib for lib in (root / "skills", root / ".claude" / "skills") if is_file(lib / INDEX_FILE)]


def _keys(src: Source, meta: Mapping[str, object]) -> list[Diagnostic]:
    out = []
    for key in meta:
        if key in SPEC_KEYS:
            continue
        guess = MISSPELLINGS.get(str(key))
        hint = f"did you mean '{guess}'?" if guess else did_you_mean(str(key), SPEC_KEYS)
        if hint:
            out.append(src.diag((key,), f"unknown key '{key}' in SKILL.md", hint, "unknown-key", key=True))
        else:
            message = f"'{key}' is not an Agent Skills field; flowrun ignores it"
            hint = "the specification's fields: " + ", ".join(SPEC_KEYS)
            out.append(src.diag((key,), message, hint, "ignored-key", key=True, severity="warning"))
    return out


def _name(src: Source, meta: Mapping[str, object], folder: str) -> list[Diagnostic]:
    name = meta.get("name")
    if not isinstance(name, str) or not name.strip():
        where = ("name",) if "name" in meta else ()
        return [src.diag(where, "a skill needs a `name`", f"add `name: {folder}`", "missing-key")]
    if name != folder:
        hint = f"rename the folder to {name}/ or set `name: {folder}`"
        return [src.diag(("name",), f"name '{name}' is not the folder's name '{folder}'", hint, "skill-name")]
    if len(name) > 64 or not PORTABLE_NAME.match(name):
        message = f"'{name}' is not a portable skill name (a-z, 0-9 and single hyphens, at most 64)"
        hint = "flowrun accepts it; other agents may not: e.g. " + re.sub(
            r"[^a-z0-9]+", "-", name.lower()
        ).strip("-")
        return [src.diag(("name",), message, hint, "skill-name", severity="warning")]
    return []


def _text(src: Source, meta: Mapping[str, object], key: str, limit: int, required: bool) -> list[Diagnostic]:
    value = meta.get(key)
    if value is None:
        if required:
            return [
                src.diag((), f"a skill needs a `{key}`", "say what it does and when to use it", "missing-key")
            ]
        return []
    if not isinstance(value, str) or not value.strip():
        return [src.diag((key,), f"`{key}` must be non-empty text", "", "wrong-type")]
    if len(value) > limit:
        return [
            src.diag(
                (key,), f"`{key}` has {len(value)} characters; at most {limit}", "shorten it", "too-long"
            )
        ]
    return []


def _metadata(src: Source, meta: Mapping[str, object]) -> list[Diagnostic]:
    value = meta.get("metadata")
    if value is None:
        return []
    if not isinstance(value, dict):
        return [src.diag(("metadata",), "`metadata` must map keys to text", "", "wrong-type")]
    return [
        src.diag(
            ("metadata", k),
            f"metadata '{k}' is not text",
            f'quote it: {k}: "{v}"',
            "wrong-type",
            severity="warning",
        )
        for k, v in value.items()
        if not isinstance(v, str)
    ]


def _allowed_tools(src: Source, meta: Mapping[str, object]) -> list[Diagnostic]:
    value = meta.get("allowed-tools")
    if value is None:
        return []
    if not (isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))):
        return [
            src.diag(
                ("allowed-tools",), "`allowed-tools` is a space-separated string or a list", "", "wrong-type"
            )
        ]
    message = "allowed-tools is not enforced by flowrun: the agent's own tools and their approvals apply"
    hint = "give the agents that use this skill the tools it needs (use_skill says so to the model too)"
    return [src.diag(("allowed-tools",), message, hint, "unsupported", severity="warning")]
