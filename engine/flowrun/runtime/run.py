"""A Run: the run folder, the event log, models and budgets, and the services agents use
(model calls, concurrent tool calls, agents as tools). The loop itself is in agent.py."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from flowrun.errors import BudgetExceeded, ProviderError
from flowrun.manifest.model_config import config_from_shorthand, config_from_spec
from flowrun.manifest.project import Loaded, Project, find_agent_prompt
from flowrun.manifest.templates import render
from flowrun.providers.base import ModelConfig, ModelRequest, Provider
from flowrun.runtime.agent import AgentInstance
from flowrun.runtime.events import EventLog, Redactor
from flowrun.runtime.ledger import RECORDED_ONLY, Ledger
from flowrun.runtime.subagents import call_agent
from flowrun.runtime.toolbox import BoundTool, bind_tools, check_arguments, declared_arguments, invoke
from flowrun.runtime.usage import UsageBook
from flowrun.runtime.workspace import WorkspaceView
from flowrun.tools.base import ToolContext
from flowrun.types import Message, ModelResponse, ToolCall, ToolResult

ENGINE_FILES = frozenset({"events.jsonl", "run.json", "usage.json", "flowrun.log"})
WRITE_TOOLS = frozenset({"write_file", "edit_file"})
DEFAULT_CONCURRENCY = 8


@dataclass
class RunOptions:
    dry_run: bool = False
    model_override: str | None = None
    interactive: bool = False
    stream: bool | None = None  # None: each model's own setting


@dataclass
class Run:
    project: Project
    workflow: Loaded[Any]
    inputs: dict[str, Any]
    run_dir: Path
    options: RunOptions = field(default_factory=RunOptions)

    def __post_init__(self) -> None:
        self.spec = self.workflow.spec
        self.workflow_dir = self.workflow.source.path.parent.resolve()
        self.run_id = self.run_dir.name
        self.workspace = self.run_dir.resolve()
        self.redactor = Redactor()
        self.events: EventLog | None = None
        self.subscribers: list[Any] = []  # called with each event (progress display)
        self.ledger: Ledger | None = None  # set by resume / replay
        self.usage = UsageBook()
        self.providers: dict[str, Provider] = {}
        self.tool_state: dict[str, Any] = {}
        self.persistent: dict[str, AgentInstance] = {}
        self.model_calls = 0
        self.started = time.monotonic()
        self.iteration: int | None = None
        limits = self.spec.limits
        self.limits = limits.to_dict() if limits else {}

    # ------------------------------------------------------------ models

    def models_available(self) -> dict[str, Any]:
        named = {name: loaded.spec for name, loaded in self.project.models.items()}
        return {**named, **(self.spec.models or {})}

    def model_config(self, ref: str | None, agent: str) -> ModelConfig:
        config = self._model_config(ref, agent)
        if self.options.stream is not None:
            config.stream = self.options.stream
        return config

    def _model_config(self, ref: str | None, agent: str) -> ModelConfig:
        if self.options.dry_run:
            return ModelConfig(name="test", provider="test", model="test")
        override = self.options.model_override
        if override:
            named = self.models_available()
            if override in named:
                return config_from_spec(override, named[override], self.workflow_dir)
            return config_from_shorthand(override, self.workflow_dir)
        ref = ref or self.spec.default_model or self.project.default_model
        if ref is None:
            from flowrun.errors import ManifestError

            raise ManifestError(f"agent '{agent}' names no model", "set the workflow's `default_model:`")
        named = self.models_available()
        if ref in named:
            return config_from_spec(ref, named[ref], self.workflow_dir)
        return config_from_shorthand(ref, self.workflow_dir)

    def provider_for(self, config: ModelConfig) -> Provider:
        key = f"{config.name}|{config.provider}|{config.model}"
        if key not in self.providers and self.ledger is not None and self.ledger.mode == "replay":
            from flowrun.runtime.replay_provider import ReplayOnlyProvider

            self.providers[key] = ReplayOnlyProvider(config)
        if key not in self.providers:
            from flowrun.providers.factory import make_provider

            for env in (config.api_key_env, config.auth_token_env):
                self.redactor.add_env(env)
            provider = make_provider(config)
            if hasattr(provider, "on_retry"):
                provider.on_retry = lambda n, delay, why, c=config: self.emit(
                    "model_retry", model=c.name, retry=n, delay_s=round(delay, 3), reason=why
                )
            if config.tool_calling == "react":
                from flowrun.providers.react import ReactProvider

                provider = ReactProvider(provider)
            self.providers[key] = provider
        return self.providers[key]

    # ------------------------------------------------------------ agents

    def template_vars(self) -> dict[str, Any]:
        return {
            **self.inputs,
            "inputs": dict(self.inputs),
            "workspace": WorkspaceView(self.workspace),
            "date": date.today().isoformat(),
            "iteration": self.iteration,
            "run_id": self.run_id,
            "output": self.spec.output,
        }

    def new_instance(
        self, name: str, instance_id: str, depth: int, cwd: Path | None = None, model_ref: str | None = None
    ) -> AgentInstance:
        loaded = self.project.agents[name]
        spec = loaded.spec
        config = self.model_config(model_ref or spec.model, name)
        tools = bind_tools(self.project, spec, self.project.roots)
        inst = AgentInstance(
            id=instance_id,
            name=name,
            spec=spec,
            model=config,
            provider=self.provider_for(config),
            tools=tools,
            system="",
            depth=depth,
            cwd=cwd or self.workspace,
        )
        inst.system = self.system_prompt(loaded, inst)
        return inst

    def system_prompt(self, loaded: Loaded[Any], inst: AgentInstance) -> str:
        spec = loaded.spec
        if spec.prompt is not None:
            source, what = spec.prompt, f"the prompt of agent '{spec.name}'"
        else:
            path = find_agent_prompt(loaded, self.project)
            if path is None:
                from flowrun.errors import ManifestError

                raise ManifestError(f"prompt file '{spec.prompt_file}' of agent '{spec.name}' not found")
            source, what = path.read_text(encoding="utf-8"), str(path)
        variables = {
            **self.template_vars(),
            **(spec.vars or {}),
            "agent": {"name": spec.name, "description": spec.description or ""},
            "tools": [{"name": b.name, "description": b.spec.description} for b in inst.tools.values()],
            "dashboards": dict(spec.context.dashboards or {}) if spec.context else {},
            "model": inst.model.name,
        }
        # a built-in agent's includes come from the built-ins, so a project cannot change it by accident
        search = [loaded.root / "prompts"] if loaded.builtin else self.project.prompt_dirs()
        return render(source, variables, search=search, what=what).strip()

    def opening_message(self, inst: AgentInstance, task: str) -> str:
        """The first user turn: the task, plus the dashboards for the dashboard strategy."""
        ctx = inst.spec.context
        if not ctx or ctx.strategy != "dashboard" or not ctx.dashboards:
            return task
        parts = [task]
        view = WorkspaceView(self.workspace)
        for name, path in ctx.dashboards.items():
            body = view.read(path) or "(empty: write it with update_dashboard)"
            parts.append(f"## Dashboard '{name}' ({path})\n{body}")
        return "\n\n".join(parts)

    def reset_context(self, inst: AgentInstance) -> None:
        before = len(inst.messages)
        inst.messages = [Message("user", self.opening_message(inst, inst.task))]
        self.emit(
            "context_reset", agent=inst.name, agent_id=inst.id, messages_before=before, messages_after=1
        )

    # ------------------------------------------------------------ model calls

    def check_budgets(self) -> None:
        lim = self.limits
        if "max_total_steps" in lim and self.model_calls >= lim["max_total_steps"]:
            raise BudgetExceeded(f"max_total_steps ({lim['max_total_steps']}) reached", "max_total_steps")
        if "max_total_tokens" in lim and self.usage.total_tokens >= lim["max_total_tokens"]:
            raise BudgetExceeded(f"max_total_tokens ({lim['max_total_tokens']}) reached", "max_total_tokens")
        if "max_cost_usd" in lim and self.usage.total_cost >= lim["max_cost_usd"]:
            raise BudgetExceeded(f"max_cost_usd (${lim['max_cost_usd']}) reached", "max_cost_usd")
        if "max_wall_time_s" in lim and time.monotonic() - self.started >= lim["max_wall_time_s"]:
            raise BudgetExceeded(f"max_wall_time_s ({lim['max_wall_time_s']} s) reached", "max_wall_time_s")

    async def model_call(self, inst: AgentInstance) -> ModelResponse:
        request = ModelRequest(
            agent=inst.name,
            system=inst.system,
            messages=list(inst.messages),
            tools=[b.spec for b in inst.tools.values()],
            agent_id=inst.id,
            hints=self._hints(inst),
            step=inst.model_calls - sum(inst.side_calls.values()),
        )
        return await self._request(inst, request)

    async def side_call(self, inst: AgentInstance, system: str, text: str, purpose: str) -> str:
        """A tool-less model call on an agent's model (e.g. summarising its history); it counts
        toward the run's usage and budgets like any other call."""
        index = inst.side_calls.get(purpose, 0)
        inst.side_calls[purpose] = index + 1
        request = ModelRequest(
            agent=f"{inst.name}#{purpose}",
            system=system,
            messages=[Message("user", text)],
            tools=[],
            step=index,
        )
        return (await self._request(inst, request, purpose)).text

    async def _request(
        self, inst: AgentInstance, request: ModelRequest, purpose: str | None = None
    ) -> ModelResponse:
        """One model call: budgets, events, usage; answered from the ledger when it has it."""
        self.check_budgets()
        self.model_calls += 1
        inst.model_calls += 1
        step = inst.model_calls
        tagged = {
            "agent": inst.name,
            "agent_id": inst.id,
            "step": step,
            **({"purpose": purpose} if purpose else {}),
        }
        digest = history_digest(request.messages)
        self.emit(
            "model_request",
            **tagged,
            model=inst.model.name,
            messages=len(request.messages),
            digest=digest,
            tools=[t.name for t in request.tools],
        )
        recorded = self.ledger.response(inst.id, step, digest, inst.name) if self.ledger else None
        started = time.perf_counter()
        if recorded is not None:
            response = recorded
        else:
            try:
                response = await inst.provider.complete(request)
            except ProviderError as e:
                e.agent = e.agent or inst.name
                e.model = e.model or inst.model.name
                self.emit("error", agent=inst.name, agent_id=inst.id, where="model", message=str(e))
                raise
        self.usage.add(inst.name, inst.model, response.usage)
        latency = 0.0 if recorded is not None else round((time.perf_counter() - started) * 1000, 2)
        replayed = {"replayed": True} if recorded is not None else {}
        self.emit("model_response", **tagged, response=response.to_dict(), latency_ms=latency, **replayed)
        return response

    @functools.cached_property
    def _dry_run_url(self) -> str | None:
        """A page the dry run can visit without a network: the first corpus document, if any
        (looked up once per run, not on every model call)."""
        for root in self.project.roots:
            docs = sorted((root / "corpus").rglob("*.md")) if (root / "corpus").is_dir() else []
            docs = [d for d in docs if d.stem.upper() not in ("README", "LICENSE")]
            if docs:
                return docs[0].resolve().as_uri()
        return None

    def _hints(self, inst: AgentInstance) -> dict[str, Any]:
        if inst.model.provider != "test":
            return {}
        write = inst.tools.get("write_file")
        allowed = (write.config.get("write_paths") or write.config.get("paths") or []) if write else []
        output = (
            self.spec.output if (self.spec.output and (not allowed or self.spec.output in allowed)) else None
        )
        hints: dict[str, Any] = {"write_path": output or _sample_path(allowed, inst.name)}
        if self._dry_run_url:
            hints["url"] = self._dry_run_url
        question = next(iter(self.inputs.values()), None)
        if isinstance(question, str):
            hints["query"] = question[:100]
        return hints

    # ------------------------------------------------------------ tool calls

    async def execute_calls(self, inst: AgentInstance, calls: list[ToolCall]) -> list[ToolResult]:
        """Run a step's tool calls concurrently (a tool marked `sequential` runs alone);
        results come back in the order the model asked for them."""
        # per step, not per run: a sub-agent's own calls must never wait on its caller's slot
        semaphore = asyncio.Semaphore(self.limits.get("max_concurrency", DEFAULT_CONCURRENCY))
        results: list[ToolResult | None] = [None] * len(calls)
        parallel = [i for i, c in enumerate(calls) if not self._sequential(inst, c)]
        serial = [i for i in range(len(calls)) if i not in parallel]

        async def one(i: int) -> None:
            async with semaphore:
                results[i] = await self.call_tool(inst, calls[i])

        async with asyncio.TaskGroup() as group:
            for i in parallel:
                group.create_task(one(i))
        for i in serial:
            results[i] = await self.call_tool(inst, calls[i])
        return [r for r in results if r is not None]

    def _sequential(self, inst: AgentInstance, call: ToolCall) -> bool:
        bound = inst.tools.get(call.name)
        return bool(bound and bound.sequential)

    async def call_tool(self, inst: AgentInstance, call: ToolCall) -> ToolResult:
        self.emit(
            "tool_call",
            agent=inst.name,
            agent_id=inst.id,
            call_id=call.id,
            tool=call.name,
            arguments=call.arguments,
        )
        bound = inst.tools.get(call.name)
        if bound is None:
            names = ", ".join(inst.tools) or "(none)"
            result = ToolResult.fail(
                "UNKNOWN_TOOL", f"there is no tool named '{call.name}'. Available tools: {names}."
            )
        else:
            result = check_arguments(bound, call)
            recorded = self._recorded_result(inst, bound, call) if result is None else None
            if result is None and recorded is not None and self._skip_execution(call):
                result = recorded
            elif result is None:
                ctx = self.tool_context(inst, bound, call)
                arguments = declared_arguments(bound, call.arguments)
                result = await invoke(bound, ctx, arguments, lambda b, a: call_agent(self, inst, b, a, call))
                # on replay the model must see exactly what it saw then; the call ran for its files
                result = recorded or result
        if call.name in WRITE_TOOLS and result.status != "error" and result.context.get("path_resolved"):
            inst.written.add(str(result.context["path_resolved"]))
        self.emit(
            "tool_result",
            agent=inst.name,
            agent_id=inst.id,
            call_id=call.id,
            tool=call.name,
            result=result.to_dict(),
        )
        return result

    def _recorded_result(self, inst: AgentInstance, bound: BoundTool, call: ToolCall) -> ToolResult | None:
        # a sub-agent always runs again (from its recorded model calls) to rebuild its state
        if self.ledger is None or bound.kind == "agent":
            return None
        return self.ledger.tool_result(inst.id, call.id)

    def _skip_execution(self, call: ToolCall) -> bool:
        assert self.ledger is not None
        return self.ledger.mode == "resume" or call.name in RECORDED_ONLY

    def tool_context(self, inst: AgentInstance, bound: BoundTool, call: ToolCall) -> ToolContext:
        base = self.workspace
        if bound.config.get("base_dir"):
            base = (self.workspace / bound.config["base_dir"]).resolve()
        return ToolContext(
            workspace=self.workspace,
            base_dir=base,
            cwd=inst.cwd,
            run_dir=self.run_dir,
            agent_name=inst.name,
            agent_id=inst.id,
            call_id=call.id,
            tool_name=bound.name,
            config=dict(bound.config),
            limits=dict(bound.limits),
            search_path=list(self.project.roots),
            state=self.tool_state,
            services={"emit": self.emit, "ask_user": ask_on_terminal},
            interactive=self.options.interactive,
            protected=ENGINE_FILES,
        )

    # ------------------------------------------------------------ events

    def emit(self, type_: str, **fields: Any) -> None:
        if self.events is None:
            return
        if self.ledger is not None and not self.ledger.should_write({"type": type_, **fields}):
            return
        self.events.emit(type_, **fields)


async def ask_on_terminal(question: str) -> str:
    """ask_user on an interactive run: the question on stderr, the answer from stdin."""
    import sys

    def ask() -> str:
        print(f"\n? {question}", file=sys.stderr, flush=True)
        return sys.stdin.readline().rstrip("\n")

    return await asyncio.to_thread(ask)


def history_digest(messages: list[Message]) -> str:
    """A short fingerprint of a conversation, to spot where a replayed run diverges. Built from
    the fields that matter, not asdict(): it runs on every model call over the whole history."""
    h = hashlib.sha256()
    for m in messages:
        calls = ",".join(f"{c.id}:{c.name}" for c in m.tool_calls)
        h.update(f"{m.role}\x1f{m.content}\x1f{m.tool_call_id}\x1f{calls}\x1e".encode())
    return h.hexdigest()[:16]


def _sample_path(globs: list[str], agent: str) -> str | None:
    """A file path a dry run may write under an agent's write globs."""
    for pattern in globs:
        if not any(c in pattern for c in "*?["):
            return pattern
    for pattern in globs:
        if pattern.endswith("/**"):
            return f"{pattern[:-3]}/dry-run/{agent}.md"
    return None
