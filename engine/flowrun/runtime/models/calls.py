"""Model calls of a run: which model an agent uses (`--dry-run`, `--model` and `--stream`
applied), one provider per model, and each call with its budget check, events, usage and cost,
answered from the ledger when a resumed or replayed run has it."""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from flowrun.errors import ManifestError, ProviderError
from flowrun.events import ErrorEvent, Event, ModelRequestEvent, ModelResponseEvent, ModelRetryEvent
from flowrun.manifest.model_config import config_from_shorthand, config_from_spec, model_config
from flowrun.manifest.project import Project
from flowrun.manifest.specs import ModelSpec, WorkflowManifest
from flowrun.providers.base import ModelConfig, ModelRequest, Provider
from flowrun.providers.registry import make_provider
from flowrun.redaction import Redactor
from flowrun.runtime.durable.ledger import Ledger, RecordedFailure, RequestPrint
from flowrun.runtime.loop.contracts import AgentInstance
from flowrun.runtime.loop.decisions import Decisions
from flowrun.runtime.models.budgets import Budgets
from flowrun.runtime.models.fallback import FallbackChains
from flowrun.runtime.models.rate_limits import rate_limited
from flowrun.runtime.models.usage import UsageBook, cost_of
from flowrun.runtime.options import RunOptions
from flowrun.surrogates import clean_response, clean_text, sendable
from flowrun.types import Message, ModelResponse

Hints = Callable[[AgentInstance], dict[str, Any]]


@dataclass(slots=True)
class ModelChoice:
    """How a run picks models: the workflow's own, or one for every agent."""

    project: Project
    workflow_models: dict[str, ModelSpec]
    default_model: str | None
    base_dir: Path
    dry_run: bool = False
    override: str | None = None
    stream: bool | None = None  # None: each model's own setting
    per_agent: dict[str, str] = field(default_factory=dict)  # agent -> model ref (--model AGENT=REF)
    no_thinking: bool = False  # --no-thinking: every model's thinking off
    replaying: bool = False  # a replay sends nothing: an unset ${VAR} in a model's settings is no error

    @classmethod
    def of_run(
        cls, project: Project, spec: WorkflowManifest, base_dir: Path, options: RunOptions, replaying: bool
    ) -> ModelChoice:
        """How a run with these options picks models (`replaying`: a replay, which sends nothing)."""
        return cls(
            project,
            dict(spec.models),
            spec.default_model,
            base_dir,
            dry_run=options.dry_run,
            override=options.model,
            stream=options.stream,
            per_agent=dict(options.agent_models),
            no_thinking=options.no_thinking,
            replaying=replaying,
        )

    def named(self) -> dict[str, ModelSpec]:
        return {**{n: loaded.spec for n, loaded in self.project.models.items()}, **self.workflow_models}

    def config(self, ref: str | None, agent: str) -> ModelConfig:
        config = self._config(ref, agent)
        if self.stream is not None:
            config.stream = self.stream
        if self.no_thinking:
            config.thinking = False
            config.send_thinking_off = True
        return config

    def _config(self, ref: str | None, agent: str) -> ModelConfig:
        spec = self.named().get(ref) if ref else None
        if ref and spec is not None and spec.provider == "direct":  # no model: a dry run or --model keeps it
            return config_from_spec(ref, spec, self.base_dir, strict_env=False)
        if self.dry_run:
            return model_config("test", provider="test", model="test")
        ref = self.per_agent.get(agent) or self.override or ref
        ref = ref or self.default_model or self.project.default_model
        if ref is None:
            raise ManifestError(f"agent '{agent}' names no model", "set the workflow's `default_model:`")
        named = self.named()
        if ref in named:
            return config_from_spec(ref, named[ref], self.base_dir, strict_env=not self.replaying)
        return config_from_shorthand(ref, self.base_dir)


class ModelService:
    def __init__(
        self,
        choice: ModelChoice,
        budgets: Budgets,
        usage: UsageBook,
        redactor: Redactor,
        emit: Callable[[Event], None],
        hints: Hints,
        ledger: Ledger | None = None,
    ) -> None:
        self.choice = choice
        self.budgets = budgets
        self.usage = usage
        self.redactor = redactor
        self.emit = emit
        self.hints = hints
        self.ledger = ledger
        self.providers: dict[str, Provider] = {}
        self.local_paths: tuple[tuple[str, str], ...] = ()  # (this run's folder, its placeholder)
        self.decisions: Decisions | None = None  # the run's: parks calls while it stops to wait
        self.fallbacks = FallbackChains(choice.config, self.provider_for, emit)

    def provider_for(self, config: ModelConfig) -> Provider:
        key = f"{config.name}|{config.provider}|{config.model}"
        if key not in self.providers:
            if self.ledger is not None and self.ledger.mode == "replay":
                from flowrun.runtime.replay.provider import ReplayOnlyProvider

                self.providers[key] = ReplayOnlyProvider(config)
            else:
                secret_env = config.options.get("secret_env", [])  # variables a header names
                for env in (config.api_key_env, config.auth_token_env, config.token_env, *secret_env):
                    self.redactor.add_env(env)
                self.providers[key] = rate_limited(make_provider(config, self._retry_reporter(config)))
        return self.providers[key]

    def _retry_reporter(self, config: ModelConfig) -> Callable[[int, float, str], None]:
        def report(retry: int, delay: float, reason: str) -> None:
            self.emit(ModelRetryEvent(model=config.name, retry=retry, delay_s=round(delay, 3), reason=reason))

        return report

    async def model_call(self, inst: AgentInstance) -> ModelResponse:
        request = ModelRequest(
            agent=inst.name,
            system=inst.system,
            messages=list(inst.messages),
            tools=[b.spec for b in inst.tools.values()],
            agent_id=inst.id,
            hints=self.hints(inst) if inst.model.provider == "test" else {},
            step=inst.model_calls - sum(inst.side_calls.values()),
            output_schema=inst.output_schema,
        )
        if inst.prompt_digests is None:  # the system prompt and tools are fixed for an instance
            inst.prompt_digests = prompt_digests(request, self.local_paths)
        return await self._request(inst, request, digests=inst.prompt_digests)

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
        return (await self._request(inst, request, purpose, prompt_digests(request, self.local_paths))).text

    async def _request(
        self,
        inst: AgentInstance,
        request: ModelRequest,
        purpose: str | None = None,
        digests: tuple[str, str] | None = None,
    ) -> ModelResponse:
        step = await self._admit(inst)
        request = _sendable(request)
        digest = history_digest(request.messages, self.local_paths)
        model_id = f"{inst.model.provider}:{inst.model.model}"
        self.emit(
            ModelRequestEvent(
                agent=inst.name,
                agent_id=inst.id,
                step=step,
                purpose=purpose,
                model=inst.model.name,
                messages=len(request.messages),
                digest=digest,
                tools=[t.name for t in request.tools],
                system_digest=digests[0] if digests else None,
                tools_digest=digests[1] if digests else None,
                model_id=model_id,
            )
        )
        now = RequestPrint(*digests, tuple(t.name for t in request.tools), model_id) if digests else None
        recorded = self._recorded(inst, step, digest, now)
        started = time.perf_counter()
        if recorded is not None:
            response, served = recorded, self._recorded_model(inst, step)
        else:
            drain = self.decisions.drain.work() if self.decisions is not None else contextlib.nullcontext()
            async with drain:  # in flight: a run stopping to wait lets it finish and log it
                response, served = await self._live(inst, request, step)
        response = clean_response(response)  # (what the run keeps, logs and sends back is UTF-8 text)
        self.usage.add(inst.name, served, response.usage, fallback=served.name != inst.model.name)
        if inst.tree is not None:
            inst.tree.add(response.usage.total, cost_of(response.usage, served))
        latency = 0.0 if recorded is not None else round((time.perf_counter() - started) * 1000, 2)
        self.emit(
            ModelResponseEvent(
                agent=inst.name,
                agent_id=inst.id,
                step=step,
                purpose=purpose,
                response=response,
                latency_ms=latency,
                cost_usd=cost_of(response.usage, served),
                replayed=True if recorded is not None else None,
                served_by=served.name if served.name != inst.model.name else None,
            )
        )
        return response

    async def _admit(self, inst: AgentInstance) -> int:
        """Let a model call of `inst` go, and number it (its step). It is parked while the run
        stops to wait for a decision; then the run's limits stop the whole run (or, under
        `on_budget: ask`, wait for a person to grant more)."""
        if self.decisions is not None:
            await self.decisions.admit_model_call(self.budgets, inst.name)
        else:
            self.budgets.check()
        if inst.tree is not None:
            inst.tree.check()  # a per-call budget: the nearest agent-as-tool call returns partial
            inst.tree.start_call()
        self.budgets.spend_call()
        inst.model_calls += 1
        return inst.model_calls

    def _recorded(
        self, inst: AgentInstance, step: int, digest: str, now: RequestPrint | None
    ) -> ModelResponse | None:
        if self.ledger is None:
            return None
        try:
            return self.ledger.response(inst.id, step, digest, inst.name, now)
        except RecordedFailure as e:  # a replay fails where the recording failed, the same way
            self.emit(ErrorEvent(agent=inst.name, agent_id=inst.id, where="model", message=str(e)))
            raise

    def _recorded_model(self, inst: AgentInstance, step: int) -> ModelConfig:
        """The model that answered a recorded call (a fallback's usage stays its own)."""
        name = self.ledger.served_by.get((inst.id, step)) if self.ledger else None
        return self.choice.config(name, inst.name) if name else inst.model

    async def _live(
        self, inst: AgentInstance, request: ModelRequest, step: int
    ) -> tuple[ModelResponse, ModelConfig]:
        try:
            served = await self.fallbacks.complete(inst, request, step)
            return served.response, served.config
        except ProviderError as e:
            e.agent = e.agent or inst.name
            e.model = e.model or inst.model.name
            self.emit(ErrorEvent(agent=inst.name, agent_id=inst.id, where="model", message=str(e)))
            raise

    async def aclose(self) -> None:
        for provider in self.providers.values():
            await provider.aclose()


def _sendable(request: ModelRequest) -> ModelRequest:
    """The request with every text a model can be sent (flowrun/surrogates.py); itself when
    nothing needed cleaning (the usual case: no copy)."""
    system = clean_text(request.system)
    messages = [sendable(m) for m in request.messages]
    unchanged = all(new is old for new, old in zip(messages, request.messages, strict=True))
    if system is request.system and unchanged:
        return request
    return replace(request, system=system, messages=messages)


def local_paths(workspace: Path, run_dir: Path) -> tuple[tuple[str, str], ...]:
    """The run's own folders (both resolved) as digests leave them out (a replay runs in another
    folder, and a prompt or task that names `{{ workspace }}` is still the same request)."""
    pairs = {str(workspace): "<workspace>", str(run_dir): "<run>"}
    return tuple(sorted(pairs.items(), key=lambda pair: -len(pair[0])))  # the longer path first


def _placed(text: str, paths: tuple[tuple[str, str], ...]) -> str:
    for path, placeholder in paths:
        if path in text:
            text = text.replace(path, placeholder)
    return text


def prompt_digests(request: ModelRequest, paths: tuple[tuple[str, str], ...] = ()) -> tuple[str, str]:
    """Digests of what a request tells the model besides its history: the system prompt, and
    the tools (names, descriptions, JSON Schemas) with the output schema. A replay compares
    them, so an edited prompt or tool list is a divergence, not a silent reuse. The run's own
    folders (`paths`) count as placeholders."""
    system = hashlib.sha256(_placed(request.system, paths).encode("utf-8", "surrogatepass")).hexdigest()[:16]
    tools = [[t.name, t.description, t.parameters] for t in request.tools]
    text = json.dumps([tools, request.output_schema], sort_keys=True, ensure_ascii=False, default=str)
    return system, hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def history_digest(messages: list[Message], paths: tuple[tuple[str, str], ...] = ()) -> str:
    """A short fingerprint of a conversation, to spot where a replayed run diverges. Built from
    the fields that matter, not asdict(): it runs on every model call over the whole history.
    The run's own folders (`paths`) count as placeholders."""
    h = hashlib.sha256()
    for m in messages:
        calls = ",".join(f"{c.id}:{c.name}" for c in m.tool_calls)
        line = f"{m.role}\x1f{_placed(m.content, paths)}\x1f{m.tool_call_id}\x1f{calls}\x1e"
        h.update(line.encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:16]
