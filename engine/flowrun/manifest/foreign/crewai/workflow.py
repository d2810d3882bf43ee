"""A CrewAI crew as a flowrun workflow: its placeholders as inputs, its models, its agents
(agents.py) and its tasks as steps (tasks.py), put together as manifests with notes."""

from __future__ import annotations

import re

from flowrun.manifest.foreign.conversion import Conversion, Doc, flowrun_name
from flowrun.manifest.foreign.crewai.agents import add_agents
from flowrun.manifest.foreign.crewai.build import DEFAULT_MODEL, Build
from flowrun.manifest.foreign.crewai.definition import Crew
from flowrun.manifest.foreign.crewai.tasks import add_steps
from flowrun.manifest.foreign.keys import KeyTable, sort_keys

CREW_KEYS = KeyTable(
    "a CrewAI crew",
    used=("name", "agents", "tasks", "process", "manager_llm", "manager_agent", "inputs"),
    cosmetic=("verbose", "output_log_file", "tracing", "stream", "share_crew"),
    dropped={
        "memory": "flowrun agents keep no memory across tasks; each task's context carries what it needs",
        "planning": "no planning step runs before the tasks",
        "planning_llm": "no planning step runs before the tasks",
        "chat_llm": "`crewai chat` has no flowrun counterpart; use `flowrun chat`",
        "cache": "tool results are not cached",
        "max_rpm": "set `rate_limit` on a model in the workflow's `models:`",
        "knowledge_sources": "knowledge sources are not indexed; give the files to the agents' tools",
        "embedder": "knowledge sources are not indexed",
        "function_calling_llm": "each agent's own model makes its tool calls",
        "before_kickoff_callbacks": "Python callbacks are not run",
        "after_kickoff_callbacks": "Python callbacks are not run",
        "step_callback": "Python callbacks are not run",
        "task_callback": "Python callbacks are not run",
        "security_config": "flowrun's sandbox and approvals govern what tools may do",
        "skills": "CrewAI skills are not loaded; flowrun agents use Agent Skills through use_skill",
        "checkpoint": "flowrun runs are durable on their own (flowrun resume)",
        "prompt_file": "CrewAI's prompt overrides are not read; the prompts are CrewAI's defaults",
        "embedding": "knowledge sources are not indexed",
    },
)


def slug(name: str) -> str:
    """A crew's name as a flowrun workflow name (`Research Crew` -> `research-crew`)."""
    return flowrun_name(re.sub(r"[^A-Za-z0-9]+", "-", name.strip()).strip("-").lower() or "crew")


def crew_workflow(crew: Crew, conv: Conversion) -> None:
    """Add the crew's workflow and agents to `conv`."""
    build = Build(crew, conv)
    for part in crew.settings.parts:
        sort_keys(conv, part.src, part.base, part.data, CREW_KEYS)
    _input_defaults(build)
    hierarchical = _process(build) == "hierarchical"
    add_agents(build, hierarchical)
    steps, where, output = add_steps(build, hierarchical)
    if not crew.tasks:
        main = crew.settings.parts[-1]
        conv.problem(
            main.src,
            main.at("tasks"),
            "the crew has no tasks",
            "a crew runs its tasks in order: add one",
            "no-tasks",
        )
    if not steps:
        return
    for name in _used(build, steps):
        draft = build.agents[name]
        conv.add("agent", draft.data, draft.src, draft.base, draft.where)
    data: Doc = {"version": 1, "kind": "workflow", "name": slug(crew.name)}
    data["description"] = f"The CrewAI crew {crew.name}, run by flowrun."
    if build.inputs:
        data["inputs"] = build.inputs
    data |= {"models": build.models, "default_model": DEFAULT_MODEL, "steps": steps}
    if output:
        data["output"] = output
    tasks_src = crew.tasks[0].main.src
    conv.add("workflow", data, tasks_src, (), where)


def _used(build: Build, steps: list[Doc]) -> list[str]:
    """The agents the steps run, those they call as tools and their guardrails' judges: a
    crew agent that only a task's copy of it runs is not one of them."""
    todo = [s["agent"] for s in steps if "agent" in s] + [
        b["agent"] for s in steps for b in s.get("parallel", [])
    ]
    seen: list[str] = []
    while todo:
        name = todo.pop(0)
        if name in seen or name not in build.agents:
            continue
        seen.append(name)
        data = build.agents[name].data
        todo += [t for t in data.get("tools", []) if isinstance(t, str)]
        todo += [g["judge"] for g in data.get("guardrails", {}).get("output", []) if "judge" in g]
    return seen


def _input_defaults(build: Build) -> None:
    """crew.jsonc's `inputs`: defaults of the inputs its placeholders make."""
    found = build.crew.settings.find("inputs")
    if found is None:
        return
    if not isinstance(found.value, dict):
        build.conv.problem(
            found.src, found.where, "`inputs` must map input names to values", "", "wrong-type"
        )
        return
    for name, value in found.value.items():
        spec: Doc = {
            "description": f"Fills {{{name}}} in the crew's agents and tasks.",
            "required": False,
        }
        spec["default"] = value if isinstance(value, str | int | float | bool) else str(value)
        build.inputs[str(name)] = spec
    build.conv.note(found.src, found.where, "the workflow's inputs' defaults")


def _process(build: Build) -> str:
    found = build.crew.settings.find("process")
    if found is None:
        return "sequential"
    process = str(found.value).rsplit(".", 1)[-1].lower()
    if process not in ("sequential", "hierarchical"):
        build.conv.problem(
            found.src,
            found.where,
            f"unknown process {found.value!r}",
            "sequential or hierarchical",
            "bad-value",
        )
        return "sequential"
    how = (
        "steps run in order"
        if process == "sequential"
        else "each task given to the manager agent, which delegates"
    )
    build.conv.note(found.src, found.where, f"{process} process: {how}")
    return process
