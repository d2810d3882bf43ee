"""The `dashboard` strategy: the opening message is the task plus each dashboard file, so when
update_dashboard resets the history, the dashboards are the compressed memory."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.graph import tool_entries
from flowrun.manifest.project import Loaded, Project
from flowrun.manifest.specs import AgentManifest, Name, StrategySpec
from flowrun.runtime.loop.contracts import AgentInstance, ContextStrategy, LoopServices
from flowrun.runtime.loop.workspace import WorkspaceView

RESET_TOOL = "update_dashboard"  # the tool whose success resets the history (tools.d/update_dashboard.yaml)


class DashboardContext(StrategySpec):
    """After a successful update_dashboard, the history restarts from the system prompt and
    the dashboards (the compressed history)."""

    strategy: Literal["dashboard"]
    dashboards: dict[Name, str] = Field(
        min_length=1, description="Dashboard name -> file in the workspace, e.g. {overall: overall.md}."
    )


class DashboardStrategy(ContextStrategy):
    name = "dashboard"
    spec = DashboardContext

    def check(self, agent: Loaded[AgentManifest], project: Project) -> list[Diagnostic]:
        if RESET_TOOL in {name for _, name, _ in tool_entries(agent.spec)}:
            return []
        message = "dashboard strategy without the update_dashboard tool"
        hint = "add update_dashboard to tools"
        return [agent.source.diag(("tools",), message, hint, "no-dashboard-tool", severity="warning")]

    def tool_defaults(self, spec: DashboardContext) -> dict[str, object]:
        return {"dashboards": dict(spec.dashboards)}

    def template_vars(self, spec: DashboardContext) -> dict[str, object]:
        return {"dashboards": dict(spec.dashboards)}

    def opening(self, inst: AgentInstance, task: str, services: LoopServices) -> str:
        spec = inst.spec.context
        assert isinstance(spec, DashboardContext)  # the strategy of an agent with this spec
        parts = [task]
        view = WorkspaceView(services.workspace)
        for name, path in spec.dashboards.items():
            body = view.read(path) or "(empty: write it with update_dashboard)"
            parts.append(f"## Dashboard '{name}' ({path})\n{body}")
        return "\n\n".join(parts)


STRATEGY = DashboardStrategy()
