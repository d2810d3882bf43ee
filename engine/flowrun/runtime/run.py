"""A Run: one execution of a workflow in its run folder. It wires the parts that do the work
(models/calls.py: model calls; loop/dispatch.py: tool calls; loop/prompts.py: templates; the
budgets; durable/run_files.py: the event log) and offers them to the loop, tool kinds and step
kinds through `loop/contracts.RunServices`."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, TypeVar

from flowrun.events import Event
from flowrun.manifest.graph import offered_tools
from flowrun.manifest.output_schemas import resolve_output_schema
from flowrun.manifest.project import Loaded, Project
from flowrun.manifest.specs import WorkflowManifest
from flowrun.redaction import Redactor
from flowrun.runtime.durable.ledger import KindRecord, Ledger
from flowrun.runtime.durable.run_files import RunFiles
from flowrun.runtime.guardrails.book import Guardrails
from flowrun.runtime.hooks.book import HookBook
from flowrun.runtime.hooks.moments import HookMoments
from flowrun.runtime.kinds import bind_tools, close_tools, prepare_tools, strategy_for
from flowrun.runtime.loop import dry_run
from flowrun.runtime.loop.approvals import Approvals
from flowrun.runtime.loop.contracts import AgentInstance, BindRequest, Outcome
from flowrun.runtime.loop.decisions import Decisions
from flowrun.runtime.loop.dispatch import ToolDispatcher, ToolEnvironment
from flowrun.runtime.loop.instructions import PromptEndings
from flowrun.runtime.loop.prompt_record import prompt_event, write_prompt_file
from flowrun.runtime.loop.prompts import PromptRenderer
from flowrun.runtime.loop.repeats import RepeatGuard
from flowrun.runtime.loop.sandboxes import SandboxPolicies
from flowrun.runtime.loop.user_turns import UserTurns
from flowrun.runtime.mcp.prompt_source import fetch_prompt
from flowrun.runtime.memory.service import memory_note
from flowrun.runtime.models.budgets import Budgets
from flowrun.runtime.models.calls import ModelChoice, ModelService, local_paths
from flowrun.runtime.models.usage import UsageBook
from flowrun.runtime.options import RunHooks, RunOptions
from flowrun.types import ModelResponse, ToolCall, ToolResult

R = TypeVar("R", bound=KindRecord)


@functools.lru_cache(maxsize=64)
def real_path(path: Path) -> Path:
    """A workflow file's (or folder's) real path: the same for every run of it in a process (a
    batch's thousand items walked it each)."""
    return path.resolve()


class Run:
    def __init__(
        self,
        project: Project,
        workflow: Loaded[WorkflowManifest],
        inputs: dict[str, object],
        run_dir: Path,
        options: RunOptions | None = None,
        ledger: Ledger | None = None,
        hooks: RunHooks | None = None,
    ) -> None:
        self.project, self.workflow, self.spec = project, workflow, workflow.spec
        self.inputs = inputs
        self.run_dir = run_dir
        self.options = options or RunOptions()  # recorded in run.json
        self.hooks = hooks or RunHooks()  # the caller's callbacks, never recorded
        self.ledger = ledger
        self.workflow_dir = real_path(workflow.source.path.parent)
        self.workflow_file = real_path(workflow.source.path)  # as run.json records it (written 2-3 times)
        self.run_id = run_dir.name
        # the run folder without symlinks, walked once (one lstat per part of the path): the
        # folder may not exist yet, and it is made by the run, never replaced by a link
        self.run_real = run_dir.resolve()
        self.workspace = self.options.agents_root(run_dir, self.run_real)  # the agents' root
        self.limits = self.spec.limits
        self.iteration: int | None = None
        self.redactor = Redactor()
        self.files = RunFiles(run_dir, self.run_real, self.redactor, ledger)  # the log, run.json, ...
        self.usage = UsageBook()
        self.budgets = Budgets(self.limits, self.usage)
        self.subtrees = self.usage.subtrees
        replaying = ledger is not None and ledger.mode == "replay"
        self.prompts = PromptRenderer(
            project,
            inputs,
            self.workspace,
            # a replay's templates see the recorded run id, as they see the recorded date
            (ledger.run_id if ledger is not None and replaying else None) or self.run_id,
            self.spec.output,
            lambda: self.iteration,
            today=ledger.date if ledger is not None else None,
            endings=PromptEndings(self.workflow_dir, self.spec.instructions, self.recorded, self.emit),
        )
        choice = ModelChoice.of_run(project, self.spec, self.workflow_dir, self.options, replaying)
        self.models = ModelService(
            choice, self.budgets, self.usage, self.redactor, self.emit, self._hints, ledger
        )
        self.models.local_paths = local_paths(self.workspace, self.run_real)
        # what only a person can decide (approvals, questions, budgets), and the run waiting for it
        self.decisions = Decisions(
            self.options.decisions,
            self.options.decide_within or self.limits.decide_within_s,
            self.emit,
            ledger,
            on_budget=self.limits.on_budget,
            attempt=ledger.resumes + 1 if ledger is not None and ledger.mode == "resume" else 0,
        )
        self.models.decisions = self.decisions
        self.turns = UserTurns(self.hooks, ledger, self.emit)
        self._wire_tools()

    def _wire_tools(self) -> None:
        """What every tool call shares, the dispatcher, and the hooks and guardrails around them."""
        self.sandboxes = SandboxPolicies(self.spec, self.workflow_dir, self.options.sandbox)
        self.sandbox_warning: tuple[str, str] | None = None  # (reason, mode) when the probe failed
        env = ToolEnvironment(
            self.workspace,
            self.run_dir,
            list(self.project.roots),
            interactive=self.hooks.ask_user is not None or self.decisions.waits,
            ask_user=self.hooks.ask_user,
            sandboxes=self.sandboxes,
            redactor=self.redactor,
            approvals=Approvals(self.hooks.approve, self.options.yes, self.emit, self.ledger, self.decisions),
            dry_run=self.options.dry_run,
            decisions=self.decisions,
        )
        self.tools = ToolDispatcher(self, env, self.limits.max_concurrency, self.emit, self.ledger)
        # the hooks of Claude Code's settings, the workflow and its agents (runtime/hooks/)
        book = HookBook(
            self.project, self.spec, self.workflow_dir, self.emit, self.ledger, self.tools.hook_context
        )
        self.hook_moments = (
            HookMoments(book, self.run_id, self.run_dir, self.workspace) if book.active else None
        )
        env.hooks = self.hook_moments
        if self.hook_moments is not None:
            self.decisions.on_pending = self.hook_moments.notify
        # the agents' input, output and tool guardrails (runtime/guardrails/)
        agents = self.project.agents
        roots = {name: loaded.root for name, loaded in agents.items() if loaded.spec.guardrails}
        self.guardrails = Guardrails(self, roots, self.ledger, self.options.dry_run) if roots else None
        env.guardrails = self.guardrails

    async def prompt_hooks(self, inst: AgentInstance, text: str, opening: bool) -> str:
        if self.hook_moments is None:
            return text
        return await self.hook_moments.prompt(inst, text, opening)

    async def stop_hooks(self, inst: AgentInstance, outcome: Outcome, active: bool) -> str | None:
        if self.hook_moments is None:
            return None
        return await self.hook_moments.stop(inst, outcome, active)

    async def guard_input(self, inst: AgentInstance) -> None:
        if self.guardrails is not None:
            value = inst.arguments if inst.arguments is not None else dict(self.inputs)
            await self.guardrails.check_input(inst, inst.task, value)

    async def guard_output(self, inst: AgentInstance, outcome: Outcome) -> str | None:
        if self.guardrails is None:
            return None
        return await self.guardrails.check_output(inst, outcome)

    async def guard_calls(self, inst: AgentInstance, calls: list[ToolCall]) -> None:
        if self.guardrails is not None:
            await self.guardrails.check_calls(inst, calls)

    def emit(self, event: Event) -> None:
        self.files.emit(event)

    # ------------------------------------------------------------ RunServices

    async def model_call(self, inst: AgentInstance) -> ModelResponse:
        changed = await prepare_tools(inst, self)  # e.g. MCP servers started, their tools bound
        if await fetch_prompt(inst, self, self.prompts) or changed:  # an MCP server's prompt
            inst.system = self.system_prompt(inst)
            self.record_prompt(inst)  # what the agent is really told, with those tools
        return await self.models.model_call(inst)

    async def side_call(self, inst: AgentInstance, system: str, text: str, purpose: str) -> str:
        return await self.models.side_call(inst, system, text, purpose)

    async def execute_calls(self, inst: AgentInstance, calls: list[ToolCall]) -> list[ToolResult]:
        return await self.tools.execute_calls(inst, calls)

    def template_vars(self) -> dict[str, Any]:
        return self.prompts.template_vars()

    def recorded(self, record: type[R]) -> R:
        """A kind's record of the run this one resumes or replays; an empty one for a new run."""
        return self.ledger.record(record) if self.ledger is not None else record()

    def new_instance(
        self,
        name: str,
        instance_id: str,
        depth: int,
        cwd: Path | None = None,
        model_ref: str | None = None,
    ) -> AgentInstance:
        loaded = self.project.agents[name]
        spec = loaded.spec
        config = self.models.choice.config(model_ref or spec.model, name)
        requests = [BindRequest(tool, entry, spec, self.project) for tool, entry in offered_tools(spec)]
        tools = bind_tools(requests)
        inst = AgentInstance(
            id=instance_id,
            name=name,
            spec=spec,
            model=config,
            provider=self.models.provider_for(config),
            tools=tools,
            system="",  # (made below, from the instance)
            depth=depth,
            cwd=cwd or self.workspace,
            strategy=strategy_for(spec.context),
            output_schema=resolve_output_schema(loaded, self.project),
            repeats=RepeatGuard(spec.max_repeated_calls or self.limits.max_repeated_calls),
        )
        inst.system = self.system_prompt(inst)
        self.record_prompt(inst)
        return inst

    def system_prompt(self, inst: AgentInstance) -> str:
        """An instance's system prompt: the agent's, then its memory's block (runtime/memory/)."""
        own = self.prompts.system_prompt(self.project.agents[inst.name], inst.tools, inst.model.name)
        return own + memory_note(inst.spec, inst.id, self)

    def record_prompt(self, inst: AgentInstance) -> None:
        """The instance's system prompt and tools: an event, and prompts/<instance>.md."""
        event = prompt_event(inst)
        self.emit(event)
        if self.files.folder is not None:
            write_prompt_file(self.files.folder, event, self.redactor.text)

    async def user_turn(self, inst: AgentInstance, answer: str | None) -> str | None:
        return await self.turns.next(inst, answer)

    def use_model(self, inst: AgentInstance, ref: str) -> None:
        inst.model = self.models.choice.config(ref, inst.name)
        inst.provider = self.models.provider_for(inst.model)

    def _hints(self, inst: AgentInstance) -> dict[str, object]:
        return dry_run.hints(inst, self.spec.output, self.inputs, self.project, self.run_dir)

    async def aclose(self) -> None:
        await self.tools.env.state.aclose()  # background jobs are killed
        await close_tools(self)
        await self.models.aclose()
