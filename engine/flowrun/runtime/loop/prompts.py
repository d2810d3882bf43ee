"""What templates see, and an agent's rendered system prompt (its own prompt, then the project
instructions it reads and the foreign-text note: runtime/loop/instructions.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import date
from pathlib import Path

from flowrun.errors import ManifestError
from flowrun.manifest.kinds import context_kind
from flowrun.manifest.project import Loaded, Project, find_agent_prompt
from flowrun.manifest.specs import AgentManifest, McpPromptSpec
from flowrun.manifest.templates import render
from flowrun.runtime.loop.contracts import BoundTool
from flowrun.runtime.loop.instructions import PromptEndings
from flowrun.runtime.loop.workspace import WorkspaceView


def team_of(tools: dict[str, BoundTool]) -> list[dict[str, str]]:
    """The agents offered to an agent as tools, in its tools order: what a prompt that describes
    the team lists, so a role added in YAML is described like the built-in ones."""
    return [
        {"name": b.name, "description": getattr(b.target, "tool_description", b.spec.description)}
        for b in tools.values()
        if b.delegates
    ]


def mcp_prompt_key(prompt: McpPromptSpec, arguments: dict[str, str]) -> str:
    return json.dumps([prompt.mcp, prompt.name, arguments], sort_keys=True)


class PromptRenderer:
    def __init__(
        self,
        project: Project,
        inputs: dict[str, object],
        workspace: Path,
        run_id: str,
        output: str | None,
        iteration: Callable[[], int | None],
        today: str | None = None,
        endings: PromptEndings | None = None,
    ) -> None:
        self.today = today  # a resumed or replayed run keeps its recorded date
        self.endings = endings  # project instructions and the foreign-text note (None: neither)
        self.project = project
        self.inputs = inputs
        self.workspace = workspace  # without symlinks (Run resolved it)
        self.run_id = run_id
        self.output = output
        self.iteration = iteration
        self._view: WorkspaceView | None = None  # made on first use: it resolves the folder
        self.mcp_texts: dict[str, str] = {}  # MCP prompts fetched in this run (mcp_prompt_key)

    def template_vars(self) -> dict[str, object]:
        """The variables of every template: prompts, the workflow's task, seeds, steps, until."""
        return {
            **self.inputs,
            "inputs": dict(self.inputs),
            "workspace": self._workspace_view(),
            "date": self.today or date.today().isoformat(),
            "iteration": self.iteration(),
            "run_id": self.run_id,
            "output": self.output,
        }

    def mcp_arguments(self, spec: AgentManifest) -> dict[str, str]:
        """The arguments of an agent's MCP prompt, rendered over the inputs."""
        assert isinstance(spec.prompt, McpPromptSpec)
        variables = {**self.template_vars(), **spec.vars}
        what = f"the MCP prompt arguments of agent '{spec.name}'"
        return {key: render(value, variables, what=what) for key, value in spec.prompt.arguments.items()}

    def _workspace_view(self) -> WorkspaceView:
        if self._view is None:
            self._view = WorkspaceView(self.workspace, real=True)
        return self._view

    def system_prompt(self, loaded: Loaded[AgentManifest], tools: dict[str, BoundTool], model: str) -> str:
        """The agent's prompt, then what ends every system prompt (runtime/loop/instructions.py)."""
        own = self._own_prompt(loaded, tools, model)
        return self.endings.complete(own, loaded, tools) if self.endings is not None else own

    def _own_prompt(self, loaded: Loaded[AgentManifest], tools: dict[str, BoundTool], model: str) -> str:
        spec = loaded.spec
        if isinstance(spec.prompt, McpPromptSpec):  # an MCP server's text, fetched before (run.py)
            return self.mcp_texts.get(mcp_prompt_key(spec.prompt, self.mcp_arguments(spec)), "")
        if spec.prompt is not None:
            source, what = spec.prompt, f"the prompt of agent '{spec.name}'"
        else:
            path = find_agent_prompt(loaded, self.project)
            if path is None:
                raise ManifestError(f"prompt file '{spec.prompt_file}' of agent '{spec.name}' not found")
            source, what = path.read_text(encoding="utf-8"), str(path)
        context = spec.context
        variables = {
            **self.template_vars(),
            **spec.vars,
            "agent": {"name": spec.name, "description": spec.description or ""},
            "tools": [
                {"name": b.name, "description": b.spec.description, "kind": b.kind.name}
                for b in tools.values()
            ],
            "team": team_of(tools),
            "dashboards": {},  # a `dashboard` context's, below
            "model": model,
            **context_kind(context).template_vars(context),
        }
        # a built-in agent's includes come from the built-ins, so a project cannot change it by accident
        search = [loaded.root / "prompts"] if loaded.builtin else self.project.prompt_dirs()
        return render(source, variables, search=search, what=what).strip()
