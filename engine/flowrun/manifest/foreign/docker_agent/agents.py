"""A docker-agent agent as a flowrun agent: its system prompt (the `instruction`, with the date
and the environment when `add_date` and `add_environment_info` ask for them), its model and
fallbacks, its toolsets (toolsets.py), the agents it delegates to (`sub_agents`) and hands the
conversation to (`handoffs`) offered as tools, `structured_output` as its output schema and
`max_iterations` as its step limit."""

from __future__ import annotations

from collections.abc import Mapping

from flowrun.manifest.foreign import placeholders
from flowrun.manifest.foreign.conversion import Doc, Items
from flowrun.manifest.foreign.docker_agent.build import DELEGATION, Draft, Team, flowrun_agent
from flowrun.manifest.foreign.docker_agent.toolsets import toolset_entries
from flowrun.manifest.foreign.keys import KeyTable, sort_keys
from flowrun.manifest.yaml_source import PathKey

DATE_LINE = "Today's date: {{ date }}"  # what docker-agent appends for add_date
ENVIRONMENT = (
    "Here is useful information about the environment you are running in:\n<env>\n"
    "Working directory: the run's workspace (your tools' paths are relative to it)\n"
    "Operating System: linux\n</env>"
)
AGENT_KEYS = KeyTable(
    "a docker-agent agent",
    used=(
        "model",
        "description",
        "instruction",
        "toolsets",
        "sub_agents",
        "handoffs",
        "fallback",
        "structured_output",
        "max_iterations",
        "add_date",
        "add_environment_info",
        "commands",
    ),
    cosmetic=("welcome_message", "add_description_parameter"),
    dropped={
        "num_history_items": "the agent sees the whole conversation of its run",
        "add_prompt_files": "the files are not appended; put their text in `instruction`",
        "skills": "docker-agent skills are not loaded; flowrun agents use Agent Skills through use_skill",
        "hooks": "docker-agent hooks are not run; flowrun hooks are declared in the workflow",
        "rag": "no retrieval index is built; give the agent filesystem tools",
        "code_mode_tools": "tools are called one by one, not from generated code",
        "harness": "an external coding CLI is not run as the agent",
    },
)


def agent_draft(team: Team, agent: str) -> Draft:
    """The flowrun agent of docker-agent agent `agent` (made once)."""
    name = flowrun_agent(agent)
    if name in team.drafts:
        return team.drafts[name]
    conv, src = team.conv, team.src
    raw = team.agents[agent]
    sort_keys(conv, src, team.at(agent), raw, AGENT_KEYS)
    data: Doc = {"version": 1, "kind": "agent", "name": name, "prompt": _prompt(team, agent)}
    draft = Draft(
        data,
        team.at(agent),
        {("prompt",): team.at(agent, "instruction"), ("model",): team.at(agent, "model")},
    )
    team.drafts[name] = draft
    description = raw.get("description")
    if isinstance(description, str) and description.strip():
        data["description"] = description.strip()
    model = team.models.ref(raw.get("model"), team.at(agent, "model"), name)
    if "fallback" in raw:
        model = team.models.with_fallback(model, raw["fallback"], team.at(agent, "fallback"), name)
    if model is not None:
        data["model"] = model
    data["tools"] = _tools(team, agent, draft)
    _limits(team, agent, data)
    return draft


def _prompt(team: Team, agent: str) -> str:
    raw, conv, src = team.agents[agent], team.conv, team.src
    text = raw.get("instruction")
    if not isinstance(text, str) or not text.strip():
        conv.problem(
            src, team.at(agent), f"agent '{agent}' has no `instruction`", "add `instruction:`", "missing-key"
        )
        text = ""
    parts = [placeholders.literal(text.strip())]
    conv.note(src, team.at(agent, "instruction"), f"agent {flowrun_agent(agent)}: its system prompt")
    if raw.get("add_date") is True:
        parts.append(DATE_LINE)
        conv.note(src, team.at(agent, "add_date"), "the prompt ends with today's date")
    if raw.get("add_environment_info") is True:
        parts.append(placeholders.literal(ENVIRONMENT))
        how = "the prompt describes the run's workspace (flowrun's tools work there, in its sandbox)"
        conv.note(src, team.at(agent, "add_environment_info"), how, "approximated")
    return "\n\n".join(p for p in parts if p)


def _tools(team: Team, agent: str, draft: Draft) -> Items:
    raw = team.agents[agent]
    out: Items = []

    def add(entry: object, where: PathKey) -> None:
        if entry not in out:  # filesystem and shell both give read tools once
            draft.where[("tools", len(out))] = where
            out.append(entry)

    toolsets = raw.get("toolsets")
    for i, toolset in enumerate(toolsets if isinstance(toolsets, list) else []):
        for entry in toolset_entries(team, agent, toolset, team.at(agent, "toolsets", i)):
            add(entry, team.at(agent, "toolsets", i))
    for key in DELEGATION:
        value = raw.get(key)
        for i, callee in enumerate(value if isinstance(value, list) else []):
            where = team.at(agent, key, i)
            if _delegate(team, agent, key, callee, where):
                add(flowrun_agent(str(callee)), where)
    return out


def _delegate(team: Team, agent: str, key: str, callee: object, where: PathKey) -> bool:
    conv, src = team.conv, team.src
    if not isinstance(callee, str) or callee not in team.agents:
        hint = "name an agent of this file's `agents:`; external agents (OCI images, URLs) are not fetched"
        conv.problem(
            src, where, f"{key} names {callee!r}, which this file does not define", hint, "unknown-agent"
        )
        return False
    if (agent, callee) in team.back_edges:
        became = f"left out: {callee} is already on the way here; this agent's answer goes back to it"
        conv.note(src, where, became, "approximated")
        return False
    agent_draft(team, callee)
    if key == "sub_agents":
        conv.note(src, where, f"agent {flowrun_agent(callee)} offered as a tool (transfer_task)")
    else:
        became = (
            f"agent {flowrun_agent(callee)} offered as a tool: it answers back instead of taking "
            "over the conversation"
        )
        conv.note(src, where, became, "approximated")
    return True


def _limits(team: Team, agent: str, data: Doc) -> None:
    raw, conv, src = team.agents[agent], team.conv, team.src
    iterations = raw.get("max_iterations")
    if isinstance(iterations, int) and not isinstance(iterations, bool) and iterations > 0:
        data["max_steps"] = min(iterations, 10_000)
        conv.note(src, team.at(agent, "max_iterations"), f"max_steps: {data['max_steps']}")
    output = raw.get("structured_output")
    if isinstance(output, Mapping):
        schema = output.get("schema")
        if isinstance(schema, Mapping):
            data["output_schema"] = dict(schema)
            conv.note(src, team.at(agent, "structured_output", "schema"), "output_schema")
        else:
            message = f"agent '{agent}': structured_output has no `schema`"
            conv.problem(src, team.at(agent, "structured_output"), message, "add `schema:`", "missing-key")
        if "strict" in output:
            how = "flowrun asks for strict mode when the schema allows it"
            conv.note(src, team.at(agent, "structured_output", "strict"), how, "approximated")
