"""A docker-agent file as a flowrun workflow: the file checked against docker-agent's JSON Schema
first (schema.py), then its agents (agents.py) and one step, the `root` agent answering the
user's message (or one of its `commands`, whose `$VAR`s become inputs)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from flowrun.manifest.foreign import placeholders
from flowrun.manifest.foreign.conversion import Conversion, Doc, flowrun_name
from flowrun.manifest.foreign.docker_agent.agents import agent_draft
from flowrun.manifest.foreign.docker_agent.build import Team, find_back_edges, flowrun_agent
from flowrun.manifest.foreign.docker_agent.models import DEFAULT_MODEL, Models
from flowrun.manifest.foreign.docker_agent.schema import schema_problems
from flowrun.manifest.foreign.keys import KeyTable, sort_keys
from flowrun.manifest.foreign.registry import Detected
from flowrun.manifest.foreign.single import read_file

ROOT = "root"
OUTPUT_DIR = "docker-agent"
MAX_MODEL_CALLS = 500  # docker-agent caps no team as a whole; flowrun's runs are bounded
MESSAGE = {"description": "The user's message to the root agent.", "type": "string"}
FILE_KEYS = KeyTable(
    "a docker-agent file",
    used=("agents", "models", "providers", "mcps", "version"),
    cosmetic=("metadata",),
    dropped={
        "rag": "no retrieval index is built; give the agents filesystem tools",
        "permissions": "flowrun's approvals and sandbox govern what tools may do",
    },
)


def convert_team(found: Detected) -> Conversion:
    conv, src, data = read_file(found, "a docker-agent file")
    if src is None:
        return conv
    conv.diagnostics += schema_problems(src)
    if conv.errors:  # the file is not one docker-agent would load: nothing is mapped
        return conv
    sort_keys(conv, src, (), data, FILE_KEYS)
    agents = _agents(conv, data)
    if not agents:
        conv.problem(src, (), "the file defines no agents", "add `agents: {root: {...}}`", "no-agents")
        return conv
    models = Models(conv, src, _map(data.get("models")), _map(data.get("providers")))
    team = Team(conv, src, agents, models, _map(data.get("mcps")))
    root = ROOT if ROOT in agents else next(iter(agents))
    if root != ROOT:
        conv.note(src, ("agents", root), f"the entry agent: the file has no `{ROOT}`", "approximated")
    find_back_edges(team, [root, *agents])
    for name in [root, *agents]:
        agent_draft(team, name)
    for draft in team.drafts.values():
        conv.add("agent", draft.data, src, draft.base, draft.where)
    conv.add("workflow", _workflow(team, root), src, ("agents", root), {("steps",): ("agents", root)})
    return conv


def _map(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _agents(conv: Conversion, data: Mapping[str, object]) -> dict[str, Mapping[str, object]]:
    raw = data.get("agents")
    return {str(k): v for k, v in raw.items() if isinstance(v, Mapping)} if isinstance(raw, Mapping) else {}


def _workflow(team: Team, root: str) -> Doc:
    raw = team.agents[root]
    name = flowrun_name(team.src.path.stem) if team.src.path is not None else flowrun_agent(root)
    data: Doc = {"version": 1, "kind": "workflow", "name": name}
    description = raw.get("description")
    if isinstance(description, str) and description.strip():
        data["description"] = description.strip()
    task = _task(team, root)
    data["inputs"] = team.inputs
    data |= {"models": team.models.out, "default_model": DEFAULT_MODEL}
    if team.servers:
        data["mcp_servers"] = team.servers
    if team.remote_agents:
        data["a2a_agents"] = team.remote_agents
    suffix = "json" if "output_schema" in team.drafts[flowrun_agent(root)].data else "md"
    output = f"{OUTPUT_DIR}/{flowrun_agent(root)}.{suffix}"
    data["steps"] = [{"agent": flowrun_agent(root), "task": task, "output": output}]
    data["output"] = output
    data["limits"] = {"max_total_steps": MAX_MODEL_CALLS}
    team.conv.note(
        team.src, ("agents", root), f"the workflow's one step: {flowrun_agent(root)} answers the message"
    )
    return data


def _task(team: Team, root: str) -> str:
    """The root agent's task: the message, or a command's prompt followed by the message."""
    team.inputs["message"] = dict(MESSAGE)
    commands = _commands(team, root)
    if not commands:
        return "{{ message }}"
    team.inputs["message"] |= {"required": False, "default": ""}
    team.inputs["command"] = {
        "description": "A command of the root agent, whose prompt is sent before the message.",
        "required": False,
        "default": "",
        "choices": ["", *commands],
    }
    branches = [
        f"{{% {'if' if i == 0 else 'elif'} command == {name!r} %}}{text}"
        for i, (name, text) in enumerate(commands.items())
    ]
    return "".join(branches) + "{% endif %}{% if message %}\n\n{{ message }}{% endif %}"


def _commands(team: Team, root: str) -> dict[str, str]:
    """The root's commands, each prompt as a template whose `$VAR`s are inputs (empty when not
    given, as docker-agent expands an unset variable)."""
    raw = team.agents[root].get("commands")
    items: list[tuple[str, object]] = []
    if isinstance(raw, Mapping):
        items = [(str(k), v) for k, v in raw.items()]
    elif isinstance(raw, list):
        items = [(str(k), v) for one in raw if isinstance(one, Mapping) for k, v in one.items()]
    out: dict[str, str] = {}
    for name, value in items:
        text = value.get("instruction") if isinstance(value, Mapping) else value
        if isinstance(text, str):
            out[name] = placeholders.template(text, placeholders.ENVIRONMENT, lambda m: _variable(team, m))
    if out:
        how = "the `command` input: its prompt is the task, before the message"
        team.conv.note(team.src, ("agents", root, "commands"), how)
    return out


def _variable(team: Team, found: re.Match[str]) -> str:
    name = placeholders.name_of(found)
    team.inputs.setdefault(
        name,
        {
            "description": f"${name} in the commands (docker-agent reads the environment)",
            "required": False,
            "default": "",
        },
    )
    return placeholders.variable(name)
