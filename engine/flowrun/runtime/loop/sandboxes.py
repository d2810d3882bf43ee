"""The sandbox of a run: each bound tool's effective policy (manifest/sandboxing.py computes
it), and the start-up probe that runs before the first model call.

`required` and the probe fails: the run does not start (SandboxError, exit 5), except in a
dry run, which warns and lets the sandboxed tools answer SANDBOX_UNAVAILABLE so the wiring check
completes. `auto` and the probe fails: a warning and a `sandbox_unavailable` event, then the
tools run unconfined."""

from __future__ import annotations

from pathlib import Path

from flowrun.errors import SandboxError
from flowrun.manifest.project import Project
from flowrun.manifest.sandboxing import effective_policy, process_policies
from flowrun.manifest.specs import AgentManifest, WorkflowManifest
from flowrun.runtime.loop.contracts import BoundTool
from flowrun.tools import sandbox
from flowrun.tools.sandbox import Mode, SandboxPolicy


class SandboxPolicies:
    def __init__(self, workflow: WorkflowManifest, base: Path, override: Mode | None = None) -> None:
        self.workflow = workflow
        self.base = base
        self.override: Mode | None = override  # declared: an attribute's Literal type is kept
        self._cache: dict[tuple[str, str], SandboxPolicy] = {}

    def policy(self, agent: AgentManifest, bound: BoundTool) -> SandboxPolicy:
        key = (agent.name, bound.name)
        found = self._cache.get(key)
        if found is None:
            found = effective_policy(self.workflow, agent, bound.sandbox_layers, self.base, self.override)
            self._cache[key] = found
        return found

    def hook_policy(self, agent: AgentManifest | None) -> SandboxPolicy:
        """Where an agent's hook commands run (no agent: the run's): its tools' sandbox
        without any one tool's layers."""
        key = (agent.name if agent is not None else "", "")
        found = self._cache.get(key)
        if found is None:
            found = effective_policy(self.workflow, agent, (), self.base, self.override)
            self._cache[key] = found
        return found


def sandbox_modes(project: Project, workflow: WorkflowManifest, policies: SandboxPolicies) -> set[str]:
    """The sandbox modes (`auto`, `required`) of the run's tools that start processes; empty
    when none does (or all say `off`): then no probe is needed."""
    modes: set[str] = {
        p.mode for _, _, p in process_policies(project, workflow, policies.base, policies.override)
    }
    modes.discard("off")
    return modes


def startup_check(
    project: Project, workflow: WorkflowManifest, policies: SandboxPolicies, dry_run: bool
) -> tuple[str, str] | None:
    """(reason, mode) when the sandbox does not work and the run goes on anyway; None when it
    works or no tool of the run starts processes. Raises SandboxError to fail closed."""
    modes = sandbox_modes(project, workflow, policies)
    if not modes:
        return None
    found = sandbox.probe()
    if found.ok:
        return None
    if "required" in modes and not dry_run:
        raise SandboxError(f"the sandbox cannot start: {found.reason}", sandbox.WAY_OUT)
    return found.reason, "required" if "required" in modes else "auto"
