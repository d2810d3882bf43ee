"""The `dashboard` strategy: the opening message is the task plus each dashboard file, so when
a dashboard update resets the history, the dashboards are the compressed memory. After a reset
the history is one message per dashboard, in the order the agent lists them (as the deep
research v2 design has it: system prompt, overall dashboard, current dashboard), after the task
unless `task_after_reset: false`.

A dashboard tool is any tool whose function is update_dashboard: the built-in `update_dashboard`
(the model names the dashboard), or a tool declared over the same function with a fixed
`dashboard` (e.g. `update_overall_dashboard`, `update_current_dashboard` in tools.d)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from flowrun.events import ContextResetEvent
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.graph import tool_entries
from flowrun.manifest.project import Loaded, Project
from flowrun.manifest.specs import AgentManifest, Name, StrategySpec
from flowrun.runtime.loop.contracts import AgentInstance, ContextStrategy, LoopServices
from flowrun.runtime.loop.workspace import WorkspaceView
from flowrun.types import Message

DASHBOARD_FUNCTION = "flowrun.tools.agent_protocol:update_dashboard"  # the tools that reset the history
EMPTY = "(empty: write it with a dashboard update)"


class DashboardContext(StrategySpec):
    """After a successful dashboard update, the history restarts from the system prompt and
    the dashboards (the compressed history)."""

    strategy: Literal["dashboard"]
    dashboards: dict[Name, str] = Field(
        min_length=1, description="Dashboard name -> file in the workspace, e.g. {overall: overall.md}."
    )
    task_after_reset: bool = Field(
        True,
        description="A reset history starts with the task, then one message per dashboard; false: "
        "only the dashboards (they carry the task).",
    )


def dashboard_tools(agent: AgentManifest, project: Project) -> dict[str, dict[str, object]]:
    """The agent's tools that update a dashboard, with their effective config."""
    found: dict[str, dict[str, object]] = {}
    for _, name, config in tool_entries(agent):
        tool = project.tools.get(name)
        if tool is not None and getattr(tool.spec.implementation, "python", None) == DASHBOARD_FUNCTION:
            found[name] = {**tool.spec.defaults, **config}
    return found


class DashboardStrategy(ContextStrategy):
    name = "dashboard"
    spec = DashboardContext

    def check(self, agent: Loaded[AgentManifest], project: Project) -> list[Diagnostic]:
        spec = agent.spec.context
        assert isinstance(spec, DashboardContext)
        tools = dashboard_tools(agent.spec, project)
        if not tools:
            message = "dashboard strategy without a dashboard tool"
            hint = "add update_dashboard (or tools declared over it, one per dashboard) to tools"
            return [agent.source.diag(("tools",), message, hint, "no-dashboard-tool", severity="warning")]
        out: list[Diagnostic] = []
        for i, name, _ in tool_entries(agent.spec):
            fixed = tools.get(name, {}).get("dashboard")
            if fixed is not None and fixed not in spec.dashboards:
                message = (
                    f"{name} updates the dashboard '{fixed}', which the agent's context does not declare"
                )
                hint = "declare it under context.dashboards: " + ", ".join(spec.dashboards)
                out.append(agent.source.diag(("tools", i), message, hint, "unknown-dashboard"))
        return out

    def tool_defaults(self, spec: DashboardContext) -> dict[str, object]:
        return {"dashboards": dict(spec.dashboards)}

    def template_vars(self, spec: DashboardContext) -> dict[str, object]:
        return {"dashboards": dict(spec.dashboards)}

    def opening(self, inst: AgentInstance, task: str, services: LoopServices) -> str:
        return "\n\n".join([task, *self._dashboards(inst, services)])

    def reset(self, inst: AgentInstance, services: LoopServices) -> None:
        spec = inst.spec.context
        assert isinstance(spec, DashboardContext)
        before = len(inst.messages)
        texts = ([inst.task] if spec.task_after_reset and inst.task else []) + self._dashboards(
            inst, services
        )
        inst.messages = [Message("user", text) for text in texts]
        services.emit(
            ContextResetEvent(
                agent=inst.name, agent_id=inst.id, messages_before=before, messages_after=len(texts)
            )
        )

    def _dashboards(self, inst: AgentInstance, services: LoopServices) -> list[str]:
        """Each dashboard as the agent reads it: its name, its file and its content."""
        spec = inst.spec.context
        assert isinstance(spec, DashboardContext)  # the strategy of an agent with this spec
        view = WorkspaceView(services.workspace)
        return [
            f"## Dashboard '{name}' ({path})\n{view.read(path) or EMPTY}"
            for name, path in spec.dashboards.items()
        ]


STRATEGY = DashboardStrategy()
