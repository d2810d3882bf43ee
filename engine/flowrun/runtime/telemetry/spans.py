"""A run's events as OpenTelemetry spans that follow the GenAI semantic conventions
(semantic-conventions-genai, model/gen-ai/spans.yaml):

    invoke_workflow {gen_ai.workflow.name}     internal, the whole run
      invoke_agent {gen_ai.agent.name}         internal, one agent instance's turn
        chat {gen_ai.request.model}            client, one model call
        execute_tool {gen_ai.tool.name}        internal, one tool call
          invoke_agent {sub-agent}             a sub-agent is a child of the call that started it

Attributes: gen_ai.operation.name, gen_ai.provider.name, gen_ai.request.model,
gen_ai.response.model, gen_ai.response.finish_reasons, gen_ai.agent.name, gen_ai.agent.id,
gen_ai.tool.name, gen_ai.tool.call.id, gen_ai.tool.type, gen_ai.usage.input_tokens (cache reads
and writes included, as the conventions ask), gen_ai.usage.output_tokens,
gen_ai.usage.cache_read.input_tokens, gen_ai.usage.cache_creation.input_tokens,
gen_ai.workflow.name, error.type. No message content is recorded (those attributes are opt-in).

The builder is fed typed events in log order and tells a sink when each span starts and ends,
so the same code serves the offline export (`flowrun export otel`) and live export."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from flowrun.events import (
    AgentEndEvent,
    AgentStartEvent,
    ErrorEvent,
    Event,
    ModelRequestEvent,
    ModelResponseEvent,
    RunEndEvent,
    RunStartEvent,
    ToolCallEvent,
    ToolResultEvent,
)

SpanKind = Literal["internal", "client"]
# (model name as the run knows it, agent) -> (gen_ai.provider.name, gen_ai.request.model)
ModelInfo = Callable[[str, str], tuple[str, str]]
RUN = "run"


@dataclass(slots=True)
class SpanData:
    key: str
    name: str
    kind: SpanKind
    parent: str | None
    start_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    end_ns: int | None = None
    error: str | None = None  # error.type when the operation failed
    message: str = ""  # the status description


class SpanSink(Protocol):
    def started(self, span: SpanData) -> None: ...

    def ended(self, span: SpanData) -> None: ...


def _ns(t: float) -> int:
    return int(t * 1_000_000_000)


class SpanBuilder:
    def __init__(self, sink: SpanSink, model_info: ModelInfo) -> None:
        self.sink = sink
        self.model_info = model_info
        self.open: dict[str, SpanData] = {}
        self.agents: dict[str, str] = {}  # agent instance id -> key of its open span
        self.counter = 0
        self.last_ns = 0

    def feed(self, event: Event) -> None:
        self.last_ns = max(self.last_ns, _ns(event.t))
        handler = _HANDLERS.get(type(event))
        if handler is not None:
            handler(self, event)

    def finish(self, error: str | None = None) -> None:
        """Close every span still open (a run that stopped without run_end)."""
        for key in reversed(list(self.open)):
            self._end(key, self.last_ns, error)

    # ------------------------------------------------------------ plumbing

    def _start(
        self, key: str, name: str, kind: SpanKind, parent: str | None, t: float, **attrs: object
    ) -> SpanData:
        if key in self.open:  # a key reused while open (a damaged log): close the old one first
            self._end(key, _ns(t))
        span = SpanData(key, name, kind, parent if parent in self.open else None, _ns(t), dict(attrs))
        self.open[key] = span
        self.sink.started(span)
        return span

    def _end(self, key: str, end_ns: int, error: str | None = None, message: str = "") -> SpanData | None:
        span = self.open.pop(key, None)
        if span is None:
            return None
        span.end_ns = max(end_ns, span.start_ns)
        if error is not None:
            span.error, span.message = error, message
            span.attributes["error.type"] = error
        self.sink.ended(span)
        return span

    def _unique(self, base: str) -> str:
        self.counter += 1
        return f"{base}#{self.counter}"

    # ------------------------------------------------------------ events

    def run_start(self, event: RunStartEvent) -> None:
        if RUN in self.open:
            return  # a resumed run goes on in the same trace
        attrs = {"gen_ai.operation.name": "invoke_workflow", "gen_ai.workflow.name": event.workflow}
        self._start(RUN, f"invoke_workflow {event.workflow}", "internal", None, event.t, **attrs)

    def run_end(self, event: RunEndEvent) -> None:
        for key in [k for k in self.open if k != RUN]:
            self._end(key, _ns(event.t), "incomplete")
        failed = event.status not in ("completed", "max_steps")
        self._end(RUN, _ns(event.t), event.status if failed else None, event.message[:200] if failed else "")

    def agent_start(self, event: AgentStartEvent) -> None:
        provider, model = self.model_info(event.model, event.agent) if event.model else ("", "")
        attrs: dict[str, object] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": event.agent,
            "gen_ai.agent.id": event.agent_id,
            "gen_ai.usage.input_tokens": 0,
            "gen_ai.usage.output_tokens": 0,
        }
        if provider:
            attrs["gen_ai.provider.name"] = provider
        if model:
            attrs["gen_ai.request.model"] = model
        key = self._unique(f"agent:{event.agent_id}")
        self.agents[event.agent_id] = key
        self._start(
            key, f"invoke_agent {event.agent}", "internal", self._agent_parent(event), event.t, **attrs
        )

    def _agent_parent(self, event: AgentStartEvent) -> str:
        if event.parent is None:
            return RUN
        call_id = event.agent_id.rpartition("@")[2] if "@" in event.agent_id.rsplit("/", 1)[-1] else None
        if call_id and f"tool:{event.parent}:{call_id}" in self.open:
            return f"tool:{event.parent}:{call_id}"
        calls = [
            s.key
            for s in self.open.values()
            if s.key.startswith(f"tool:{event.parent}:")
            and s.attributes.get("gen_ai.tool.name") == event.agent
        ]
        return calls[-1] if calls else self.agents.get(event.parent, RUN)

    def agent_end(self, event: AgentEndEvent) -> None:
        key = self.agents.get(event.agent_id)
        if key is None:
            return
        for child in [
            k for k in self.open if k.startswith((f"chat:{event.agent_id}:", f"tool:{event.agent_id}:"))
        ]:
            self._end(child, _ns(event.t), "incomplete")
        failed = event.status == "failed"
        self._end(key, _ns(event.t), "agent_failed" if failed else None, (event.error or "")[:200])

    def model_request(self, event: ModelRequestEvent) -> None:
        provider, model = self.model_info(event.model, event.agent)
        attrs = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
            "gen_ai.agent.name": event.agent,
        }
        if event.purpose:
            attrs["flowrun.purpose"] = event.purpose
        parent = self.agents.get(event.agent_id, RUN)
        self._start(self._chat_key(event), f"chat {model}", "client", parent, event.t, **attrs)

    def model_response(self, event: ModelResponseEvent) -> None:
        span = self.open.get(self._chat_key(event))
        if span is None:
            return
        usage = event.response.usage
        prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        span.attributes.update(
            {
                "gen_ai.usage.input_tokens": prompt,
                "gen_ai.usage.output_tokens": usage.output_tokens,
                "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
                "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
            }
        )
        if event.response.model:
            span.attributes["gen_ai.response.model"] = event.response.model
        if event.response.stop_reason:
            span.attributes["gen_ai.response.finish_reasons"] = [event.response.stop_reason]
        agent = self.open.get(self.agents.get(event.agent_id, ""))
        if agent is not None:
            agent.attributes["gen_ai.usage.input_tokens"] += prompt
            agent.attributes["gen_ai.usage.output_tokens"] += usage.output_tokens
        self._end(span.key, _ns(event.t))

    @staticmethod
    def _chat_key(event: ModelRequestEvent | ModelResponseEvent) -> str:
        return f"chat:{event.agent_id}:{event.step}:{event.purpose or ''}"

    def error(self, event: ErrorEvent) -> None:
        if event.where != "model" or event.agent_id is None:
            return
        for key in [k for k in self.open if k.startswith(f"chat:{event.agent_id}:")]:
            self._end(key, _ns(event.t), "model_error", event.message[:200])

    def tool_call(self, event: ToolCallEvent) -> None:
        attrs = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.tool,
            "gen_ai.tool.call.id": event.call_id,
            "gen_ai.tool.type": "function",
            "gen_ai.agent.name": event.agent,
        }
        parent = self.agents.get(event.agent_id, RUN)
        key = f"tool:{event.agent_id}:{event.call_id}"
        self._start(key, f"execute_tool {event.tool}", "internal", parent, event.t, **attrs)

    def tool_result(self, event: ToolResultEvent) -> None:
        result = event.result
        error = result.error.code if result.status == "error" and result.error else None
        self._end(f"tool:{event.agent_id}:{event.call_id}", _ns(event.t), error, error or "")


_HANDLERS: dict[type[Event], Callable[[SpanBuilder, Any], None]] = {
    RunStartEvent: SpanBuilder.run_start,
    RunEndEvent: SpanBuilder.run_end,
    AgentStartEvent: SpanBuilder.agent_start,
    AgentEndEvent: SpanBuilder.agent_end,
    ModelRequestEvent: SpanBuilder.model_request,
    ModelResponseEvent: SpanBuilder.model_response,
    ErrorEvent: SpanBuilder.error,
    ToolCallEvent: SpanBuilder.tool_call,
    ToolResultEvent: SpanBuilder.tool_result,
}


def provider_name(provider: str, base_url: str | None) -> str:
    """gen_ai.provider.name for a flowrun provider: the conventions' well-known values where
    they exist (anthropic, openai, deepseek, ...), a preset's name for other compatible servers."""
    if provider in ("anthropic", "openai"):
        return provider
    if provider in ("test", "scripted", "replay"):
        return f"flowrun.{provider}"
    from urllib.parse import urlparse

    from flowrun.providers.presets import PRESETS

    for name, preset in PRESETS.items():
        if base_url and base_url.rstrip("/") == preset.base_url.rstrip("/"):
            return name
    host = urlparse(base_url or "").hostname
    return host or provider
