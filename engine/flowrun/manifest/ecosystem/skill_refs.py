"""An agent's `use_skill` / `run_skill_script` entries checked against the skills its run will
see (the `skills/` and `.claude/skills/` folders of the search path, and `skills_dir`): a name in
the entry's `skills:` list that no folder holds, and a skill tool with nothing to offer, are
warnings (with a did-you-mean): the manifests are well formed and a library may be added later,
but the skill cannot be read, and every call of a tool with nothing to offer would fail (a dry
run would show an error line for it)."""

from __future__ import annotations

from collections.abc import Mapping

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.project import Project
from flowrun.manifest.schema.check import did_you_mean
from flowrun.manifest.yaml_source import Source

SKILL_TOOLS = {
    "flowrun.tools.skills:use_skill": "skills",
    "flowrun.tools.skill_scripts:run_skill_script": "skills with scripts",
}
HINTS = {
    "skills": "add skills/NAME/SKILL.md next to the workflow (or set skills_dir), or remove the tool",
    "skills with scripts": "add a scripts/ folder to a skill (skills/NAME/scripts/), or remove the tool",
}


def check_skill_entry(
    src: Source, i: int, name: str, config: Mapping[str, object], project: Project, target: str
) -> list[Diagnostic]:
    """Problems of one tools entry `name` (index `i`) of an agent whose python tool runs
    `target` (`module:function`), when it is a skill tool."""
    tool = project.tools.get(name)
    if tool is None or target not in SKILL_TOOLS:
        return []
    from flowrun.tools.skill_scripts import scripts_of
    from flowrun.tools.skills import find_skills

    effective = {**tool.spec.defaults, **config}
    wanted = effective.get("skills")
    unlisted = {k: v for k, v in effective.items() if k != "skills"}
    every = find_skills(project.roots, unlisted, by_name=isinstance(wanted, list))
    out: list[Diagnostic] = []
    if isinstance(wanted, list):
        for j, skill in enumerate(wanted):
            if str(skill) not in every:
                hint = did_you_mean(str(skill), every) or "skills found: " + (", ".join(every) or "(none)")
                message = f"{name}: no skill '{skill}' in the skills folders"
                where = ("tools", i, name, "skills", j)
                out.append(src.diag(where, message, hint, "unknown-skill", severity="warning"))
        every = {k: v for k, v in every.items() if k in wanted}
    offered = every if SKILL_TOOLS[target] == "skills" else {k: s for k, s in every.items() if scripts_of(s)}
    if not offered and not out:
        what = SKILL_TOOLS[target]
        message = f"{name} has no {what} to offer: every call of it would fail"
        out.append(src.diag(("tools", i), message, HINTS[what], "no-skills", severity="warning"))
    return out
