"""The `dashboard` strategy: the opening message is the task plus each dashboard file, so when
update_dashboard resets the history, the dashboards are the compressed memory."""

from __future__ import annotations

from flowrun.manifest.specs import DashboardContext
from flowrun.runtime.context.base import ContextStrategy
from flowrun.runtime.loop.contracts import AgentInstance, LoopServices
from flowrun.runtime.loop.workspace import WorkspaceView


class DashboardStrategy(ContextStrategy):
    name = "dashboard"

    def opening(self, inst: AgentInstance, task: str, services: LoopServices) -> str:
        spec = inst.spec.context
        if not isinstance(spec, DashboardContext):
            return task
        parts = [task]
        view = WorkspaceView(services.workspace)
        for name, path in spec.dashboards.items():
            body = view.read(path) or "(empty: write it with update_dashboard)"
            parts.append(f"## Dashboard '{name}' ({path})\n{body}")
        return "\n\n".join(parts)


STRATEGY = DashboardStrategy()
