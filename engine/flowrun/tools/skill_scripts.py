"""`run_skill_script`: run one of a skill's `scripts/` (Agent Skills layout) in the sandbox.

The script is chosen by the skill's name and its path inside the skill folder (it must be under
`scripts/`); its interpreter comes from its extension (.py python3, .sh bash, .js/.mjs node,
.rb ruby, .pl perl; anything else runs as a program). It runs like execute_shell: in the
agent's working folder, confined (the skill's folder is visible read-only), its whole process
group killed at the timeout, output capped with head and tail kept."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flowrun.tools.base import ToolContext, error, finish_result, tool
from flowrun.tools.process import capped, run_confined
from flowrun.tools.skills import Skill, find_skills, skill_parameters
from flowrun.types import ToolResult

DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_TIMEOUT_S = 600.0
INTERPRETERS = {
    ".py": "python3",
    ".sh": "bash",
    ".bash": "bash",
    ".js": "node",
    ".mjs": "node",
    ".rb": "ruby",
    ".pl": "perl",
}


def scripts_of(skill: Skill) -> list[str]:
    if skill.folder is None or not (skill.folder / "scripts").is_dir():
        return []
    folder = skill.folder
    return sorted(
        p.relative_to(folder).as_posix()
        for p in (folder / "scripts").rglob("*")
        if p.is_file() and not any(part.startswith((".", "__")) for part in p.relative_to(folder).parts)
    )


def script_parameters(search_path: list[Path], config: Mapping[str, object]) -> dict[str, Any]:
    """`skill` as an enum of the skills that have scripts, and the scripts each one has."""
    params = skill_parameters(search_path, config)
    skills = {n: s for n, s in find_skills(search_path, config).items() if scripts_of(s)}
    skill_schema: dict[str, object] = {"type": "string", "description": "The skill whose script to run."}
    if skills:
        skill_schema["enum"] = list(skills)
        listing = "; ".join(f"{n}: {', '.join(scripts_of(s))}" for n, s in skills.items())
        script_text = f"The script's path in the skill folder. Available: {listing}"
    else:
        script_text = "The script's path in the skill folder, e.g. scripts/run.py (no skill has scripts)."
    params["properties"] = {
        "skill": skill_schema,
        "script": {"type": "string", "description": script_text},  # an enum when scripts exist
        "args": {"type": "array", "items": {"type": "string"}, "description": "Command-line arguments."},
        "timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "Seconds before it is killed (default 120).",
        },
    }
    every = sorted({script for s in skills.values() for script in scripts_of(s)})
    if every:
        params["properties"]["script"]["enum"] = every
    params["required"] = ["skill", "script"]
    return params


@tool(parameters=script_parameters)
async def run_skill_script(
    ctx: ToolContext,
    *,
    skill: str,
    script: str,
    args: list[str] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,  # noqa: ASYNC109 - the model-facing argument name
) -> ToolResult:
    params: dict[str, object] = {"skill": skill, "script": script, "args": args or [], "timeout": timeout}
    started = time.perf_counter()
    found = find_skills(ctx.search_path, ctx.config).get(skill)
    if found is None or found.folder is None:
        names = (
            ", ".join(n for n, s in find_skills(ctx.search_path, ctx.config).items() if scripts_of(s))
            or "(none)"
        )
        return finish_result(
            error("NOT_FOUND", f"no skill {skill!r} with scripts; skills with scripts: {names}"),
            params,
            started,
        )
    folder = found.folder.resolve()
    target = (folder / script).resolve()
    if not target.is_relative_to(folder / "scripts"):
        return finish_result(
            error("ACCESS_DENIED", f"{script!r} is not under {skill}/scripts/"), params, started
        )
    if not target.is_file():
        listing = ", ".join(scripts_of(found)) or "(none)"
        return finish_result(
            error("NOT_FOUND", f"skill {skill!r} has no script {script!r}; its scripts: {listing}"),
            params,
            started,
        )
    interpreter = INTERPRETERS.get(target.suffix.lower())
    argv = [interpreter, str(target)] if interpreter else [str(target)]
    argv += [str(a) for a in args or []]
    limit = capped(timeout, DEFAULT_TIMEOUT_S, ctx.config.get("timeout", DEFAULT_MAX_TIMEOUT_S))
    # the skill's folder is visible (read-only) inside the sandbox, wherever it lives
    policy = dataclasses.replace(ctx.sandbox, ro_binds=(*ctx.sandbox.ro_binds, str(folder)))
    confined = dataclasses.replace(ctx, sandbox=policy)
    result = await run_confined(confined, argv, limit, f"{skill}/{script}")
    return finish_result(result, params, started)
