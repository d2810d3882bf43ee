"""Skill folders checked against the Agent Skills specification (agentskills.io): a folder
with a SKILL.md whose front matter has `name` (equal to the folder's name; lowercase letters,
digits and single hyphens, at most 64) and `description` (at most 1024 characters), and
optionally `license`, `compatibility` (at most 500), `metadata` (strings to strings) and
`allowed-tools` (a space-separated string or a list).

A name flowrun can use but other agents may not (`report_writing`) is a warning; so are keys
the specification does not define, unless they look like a misspelling of one (an error with
a did-you-mean), and `allowed-tools`, which flowrun reports instead of enforcing."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.ecosystem.front_matter import load_document
from flowrun.manifest.schema_check import did_you_mean
from flowrun.manifest.yaml_source import Source

SKILL_FILE = "SKILL.md"
SPEC_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
MISSPELLINGS = {"allowed_tools": "allowed-tools", "allowedTools": "allowed-tools", "tools": "allowed-tools"}
PORTABLE_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def skill_folders(root: Path) -> list[Path]:
    """The skill folders of a project: `skills/*/` and `.claude/skills/*/` with a SKILL.md."""
    found: list[Path] = []
    for library in (root / "skills", root / ".claude" / "skills"):
        if library.is_dir():
            found += sorted(p for p in library.iterdir() if (p / SKILL_FILE).is_file())
    return found


def lint_skill(folder: Path, display: str) -> list[Diagnostic]:
    """Every problem of one skill folder's SKILL.md."""
    doc, diags = load_document(folder / SKILL_FILE, display)
    src = doc.source
    if src.data is None or any(d.severity == "error" for d in diags):
        return diags
    meta: dict[str, object] = src.data
    out = list(diags)
    out += _keys(src, meta)
    out += _name(src, meta, folder.name)
    out += _text(src, meta, "description", 1024, required=True)
    out += _text(src, meta, "compatibility", 500, required=False)
    if "license" in meta and not isinstance(meta["license"], str):
        out.append(src.diag(("license",), "`license` is a license name or a file name", "", "wrong-type"))
    out += _metadata(src, meta)
    out += _allowed_tools(src, meta)
    return out


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
