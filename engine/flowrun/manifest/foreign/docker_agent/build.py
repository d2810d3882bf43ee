"""What mapping a docker-agent file builds up: its agents as read, the workflow's models, MCP
servers and inputs, the agent drafts, and which delegation edges are kept (docker-agent's
`sub_agents` and `handoffs` may loop back; flowrun's agents offered as tools may not)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from flowrun.manifest.foreign.conversion import Conversion, Doc, agent_name
from flowrun.manifest.foreign.docker_agent.models import Models
from flowrun.manifest.yaml_source import PathKey, Source

DELEGATION = ("sub_agents", "handoffs")


@dataclass
class Draft:
    data: Doc
    base: PathKey  # the agent's mapping in the file
    where: dict[PathKey, PathKey] = field(default_factory=dict)


@dataclass
class Team:
    conv: Conversion
    src: Source
    agents: Mapping[str, Mapping[str, object]]  # the file's `agents:`, by docker-agent name
    models: Models
    mcps: Mapping[str, object]  # the file's named MCP servers (`mcps:`)
    servers: dict[str, Doc] = field(default_factory=dict)  # the workflow's mcp_servers
    remote_agents: dict[str, Doc] = field(default_factory=dict)  # its a2a_agents
    inputs: dict[str, Doc] = field(default_factory=dict)
    drafts: dict[str, Draft] = field(default_factory=dict)  # by flowrun name
    back_edges: set[tuple[str, str]] = field(default_factory=set)  # (caller, callee) left out

    def names(self, agent: str, key: str) -> list[str]:
        """The agents `agent` names under `key` (sub_agents or handoffs) that the file defines."""
        value = self.agents.get(agent, {}).get(key)
        return (
            [v for v in value if isinstance(v, str) and v in self.agents] if isinstance(value, list) else []
        )

    def at(self, agent: str, *path: str | int) -> PathKey:
        return ("agents", agent, *path)


def flowrun_agent(name: str) -> str:
    return agent_name(name)


def find_back_edges(team: Team, order: list[str]) -> None:
    """The delegation edges that close a loop, found depth first from each agent of `order`
    (root first): without them the agents-as-tools graph has no cycle."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(agent: str) -> None:
        state[agent] = 1
        for key in DELEGATION:
            for callee in team.names(agent, key):
                if state.get(callee) == 1:
                    team.back_edges.add((agent, callee))
                elif callee not in state:
                    visit(callee)
        state[agent] = 2

    for agent in order:
        if agent not in state:
            visit(agent)
