"""A Run: one execution of a workflow in its run folder. It wires the parts that do the work
(models/calls.py: model calls; loop/dispatch.py: tool calls; loop/prompts.py: templates; the
budgets; the event log) and offers them to the loop, tool kinds and step kinds through
`loop/contracts.RunServices`."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, TypeVar

from flowrun.atomic_files import replace_file, replace_in
from flowrun.events import Event, UserMessageEvent
from flowrun.manifest.graph import tool_entries
from flowrun.manifest.output_schemas import resolve_output_schema
from flowrun.manifest.project import Loaded, Project
from flowrun.manifest.specs import WorkflowManifest
from flowrun.pinned import open_folder
from flowrun.redaction import Redactor
from flowrun.runtime.durable.event_log import EventLog, Subscriber
from flowrun.runtime.durable.ledger import KindRecord, Ledger
from flowrun.runtime.durable.run_folder import PROTECTED
from flowrun.runtime.guardrails.book import Guardrails
from flowrun.runtime.hooks.book import HookBook
from flowrun.runtime.hooks.moments import HookMoments
from flowrun.runtime.kinds import bind_tools, close_tools, prepare_tools, strategy_for
from flowrun.runtime.loop import dry_run
from flowrun.runtime.loop.approvals import Approvals
from flowrun.runtime.loop.contracts import AgentInstance, BindRequest, Outcome
from flowrun.runtime.loop.decisions import Decisions
from flowrun.runtime.loop.dispatch import ToolDispatcher, ToolEnvironment
from flowrun.runtime.loop.prompt_record import prompt_event, write_prompt_file
from flowrun.runtime.loop.prompts import PromptRenderer
from flowrun.runtime.loop.repeats import RepeatGuard
from flowrun.runtime.loop.sandboxes import SandboxPolicies
from flowrun.runtime.mcp.prompt_source import fetch_prompt
from flowrun.runtime.models.budgets import Budgets
from flowrun.runtime.models.calls import ModelChoice, ModelService, local_paths
from flowrun.runtime.models.usage import UsageBook
from flowrun.runtime.options import RunHooks, RunOptions
from flowrun.tools.base import ToolContext
from flowrun.types import ModelResponse, ToolCall, ToolResult

R = TypeVar("R", bound=KindRecord)
DRY_WORKDIR = "workdir"  # a dry run's stand-in for the user's folder, in its run folder


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
        self.project = project
        self.workflow = workflow
        self.spec = workflow.spec
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
        # the agents' root: the run folder, or a folder of the user's (--workdir, workspace.dir)
        # that is kept across runs while the run folder keeps the engine's files; a dry run
        # never writes there: its agents work in a stand-in inside its run folder (seeding.py)
        self.workspace = self.run_real if self.options.workdir is None else self.options.workdir.resolve()
        if self.options.dry_run and self.options.workdir is not None:
            self.workspace = (run_dir / DRY_WORKDIR).resolve()
        self.limits = self.spec.limits
        self.iteration: int | None = None
        self.persistent: dict[str, AgentInstance] = {}
        self.redactor = Redactor()
        self.events: EventLog | None = None
        # the run folder, opened (pinned) with its log, before any tool runs: the engine's later
        # writes there go by name in it (a tool that moved the folder away cannot redirect them)
        self.folder: int | None = None
        self.subscribers: list[Subscriber] = []
        self.usage = UsageBook()
        self.budgets = Budgets(self.limits, self.usage)
        self.subtrees = self.usage.subtrees
        self.prompts = PromptRenderer(
            project,
            inputs,
            self.workspace,
            # a replay's templates see the recorded run id, as they see the recorded date
            (ledger.run_id if ledger is not None and ledger.mode == "replay" else None) or self.run_id,
            self.spec.output,
            lambda: self.iteration,
            today=ledger.date if ledger is not None else None,
        )
        choice = ModelChoice(
            project,
            dict(self.spec.models),
            self.spec.default_model,
            self.workflow_dir,
            dry_run=self.options.dry_run,
            override=self.options.model,
            stream=self.options.stream,
            per_agent=dict(self.options.agent_models),
            no_thinking=self.options.no_thinking,
            replaying=ledger is not None and ledger.mode == "replay",
        )
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
        )
        self.models.decisions = self.decisions
        self.sandboxes = SandboxPolicies(self.spec, self.workflow_dir, self.options.sandbox)
        self.sandbox_warning: tuple[str, str] | None = None  # (reason, mode) when the probe failed
        env = ToolEnvironment(
            self.workspace,
            run_dir,
            list(project.roots),
            interactive=self.hooks.ask_user is not None or self.decisions.waits,
            ask_user=self.hooks.ask_user,
            sandboxes=self.sandboxes,
            redactor=self.redactor,
            approvals=Approvals(self.hooks.approve, self.options.yes, self.emit, ledger, self.decisions),
            dry_run=self.options.dry_run,
            decisions=self.decisions,
        )
        self.tools = ToolDispatcher(self, env, self.limits.max_concurrency, self.emit, ledger)
        book = HookBook(project, self.spec, self.workflow_dir, self.emit, ledger, self._hook_context)
        # the hooks of Claude Code's settings, the workflow and its agents (runtime/hooks/)
        self.hook_moments = HookMoments(book, self.run_id, run_dir, self.workspace) if book.active else None
        env.hooks = self.hook_moments
        if self.hook_moments is not None:
            self.decisions.on_pending = self.hook_moments.notify
        # the agents' input, output and tool guardrails (runtime/guardrails/)
        roots = {name: loaded.root for name, loaded in project.agents.items() if loaded.spec.guardrails}
        self.guardrails = Guardrails(self, roots, ledger, self.options.dry_run) if roots else None
        env.guardrails = self.guardrails

    def _hook_context(self, inst: AgentInstance | None) -> ToolContext:
        """Where a hook command of `inst` (None: of the run) runs: as its tools' processes do."""
        return ToolContext(
            workspace=self.workspace,
            base_dir=self.workspace,
            cwd=inst.cwd if inst is not None else self.workspace,
            run_dir=self.run_dir,
            agent_name=inst.name if inst is not None else "",
            agent_id=inst.id if inst is not None else "",
            search_path=list(self.project.roots),
            protected=PROTECTED,
            sandbox=self.sandboxes.hook_policy(inst.spec if inst is not None else None),
            write_within=inst.write_within if inst is not None else None,
        )

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

    # ------------------------------------------------------------ events

    def open_log(self) -> None:
        self.folder = open_folder(self.run_real)
        self.events = EventLog(self.run_dir / "events.jsonl", self.redactor)
        self.events.subscribers.extend(self.subscribers)

    def replace(self, name: str, text: str) -> None:
        """A file of the run folder (run.json, usage.json) replaced whole: in the folder opened
        with the log, or by path before it is (nothing but the engine runs then)."""
        if self.folder is None:
            replace_file(self.run_dir / name, text)
        else:
            replace_in(self.folder, name, text)

    def close_files(self) -> None:
        """The log (its last flush) and the run folder's descriptor."""
        try:
            if self.events is not None:
                self.events.close()
        finally:
            if self.folder is not None:
                os.close(self.folder)
                self.folder = None

    def emit(self, event: Event) -> None:
        if self.events is None:
            return
        if self.ledger is not None and not self.ledger.should_write(event):
            return
        self.events.emit(event)

    # ------------------------------------------------------------ RunServices

    async def model_call(self, inst: AgentInstance) -> ModelResponse:
        changed = await prepare_tools(inst, self)  # e.g. MCP servers started, their tools bound
        if await fetch_prompt(inst, self, self.prompts) or changed:  # an MCP server's prompt
            inst.system = self.prompts.system_prompt(
                self.project.agents[inst.name], inst.tools, inst.model.name
            )
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
        requests = [BindRequest(tool, entry, spec, self.project) for _, tool, entry in tool_entries(spec)]
        tools = bind_tools(requests)
        inst = AgentInstance(
            id=instance_id,
            name=name,
            spec=spec,
            model=config,
            provider=self.models.provider_for(config),
            tools=tools,
            system=self.prompts.system_prompt(loaded, tools, config.name),
            depth=depth,
            cwd=cwd or self.workspace,
            strategy=strategy_for(spec.context),
            output_schema=resolve_output_schema(loaded, self.project),
            repeats=RepeatGuard(spec.max_repeated_calls or self.limits.max_repeated_calls),
        )
        self.record_prompt(inst)
        return inst

    def record_prompt(self, inst: AgentInstance) -> None:
        """The instance's system prompt and tools: an event, and prompts/<instance>.md."""
        event = prompt_event(inst)
        self.emit(event)
        if self.folder is not None:
            write_prompt_file(self.folder, event, self.redactor.text)

    async def user_turn(self, inst: AgentInstance, answer: str | None) -> str | None:
        """A user message for `inst` at this point (before a model call, or after an answer that
        would end it): one the log recorded here, else one typed at the pause key, else a chat's
        next turn once the run is past what the log holds (the agent loop asks)."""
        key = (inst.id, inst.model_calls)
        if self.ledger is not None and key in self.ledger.user_messages:
            return self._user_message(inst, self.ledger.user_messages.pop(key))
        if answer is None and (interjected := await self._interjected(inst)) is not None:
            return self._user_message(inst, interjected)
        talk = self.hooks.conversation
        if talk is None or inst.depth != 0 or inst.name != talk.agent or (talk.chat and answer is None):
            return None
        if self.ledger is not None and (inst.id, inst.model_calls + 1) in self.ledger.responses:
            return None  # still replaying what the log holds
        text = await talk.read(answer)
        return self._user_message(inst, text) if text else None

    async def _interjected(self, inst: AgentInstance) -> str | None:
        """The message typed at the pause key, for the agent whose step boundary came first
        (recorded like any user message: a resume or replay gives it at the same step)."""
        pause = self.hooks.interject
        if pause is None or not pause.requested():
            return None
        if self.ledger is not None and (inst.id, inst.model_calls + 1) in self.ledger.responses:
            return None  # still going over what the log holds: the pause comes where it goes live
        text = await pause.read(inst.name)
        return text.strip() if text and text.strip() else None

    def _user_message(self, inst: AgentInstance, text: str) -> str:
        self.emit(UserMessageEvent(agent=inst.name, agent_id=inst.id, step=inst.model_calls, text=text))
        return text

    def use_model(self, inst: AgentInstance, ref: str) -> None:
        inst.model = self.models.choice.config(ref, inst.name)
        inst.provider = self.models.provider_for(inst.model)

    def _hints(self, inst: AgentInstance) -> dict[str, object]:
        return dry_run.hints(inst, self.spec.output, self.inputs, self.project, self.run_dir)

    async def aclose(self) -> None:
        await self.tools.env.state.aclose()  # background jobs are killed
        await close_tools(self)
        await self.models.aclose()
