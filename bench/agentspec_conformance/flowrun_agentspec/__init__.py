"""flowrun as an Agent Spec runtime for Oracle's conformance test suite (bench/agentspec_conformance/run.sh):
`FlowrunAgentSpecLoader.load(agentspec_config, tool_registry, components_registry)` returns a
component the suite drives with start / run / append_user_message / append_tool_results /
confirm_or_reject_tool_confirmation.

The config is written to a folder of its own and read by flowrun's Agent Spec import, as
`flowrun FILE` would. Each ServerTool the suite gives a Python callable for becomes a
`tools.d/NAME.yaml` python tool of that folder (its description and inputs from the config),
whose function calls the callable. A run goes on in a thread of its own; `run()` returns when it
ends or when it needs the caller: a ClientTool call (a question flowrun's client tool asks) or a
call waiting for confirmation (`approve: ask`)."""

from __future__ import annotations

import asyncio
import json
import queue
import re
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

REGISTRIES: dict[str, dict[str, Callable[..., Any]]] = {}  # folder -> the suite's callables
CLIENT_QUESTION = re.compile(r"The client tool (\S+) was called with (\{.*\})\. Run it", re.DOTALL)

WRAPPER = '''"""The suite's Python callables as flowrun python tools (written by flowrun_agentspec)."""
import asyncio
import json
import flowrun_agentspec
from flowrun.types import ToolResult


def _tool(name):
    async def call(ctx, **arguments):
        function = flowrun_agentspec.REGISTRIES[{folder!r}][name]
        value = await asyncio.to_thread(function, **arguments)
        return ToolResult.ok(value if isinstance(value, str) else json.dumps(value))
    return call
'''


@dataclass
class ToolRequest:
    name: str
    args: dict[str, Any] | None
    tool_request_id: str


@dataclass
class ToolResult:
    content: Any
    tool_request_id: str


@dataclass
class AgentSpecFinishedExecutionStatus:
    outputs: dict[str, Any]
    agent_messages: list[str]


@dataclass
class AgentSpecUserMessageRequestExecutionStatus:
    agent_messages: list[str]


@dataclass
class AgentSpecToolRequestExecutionStatus:
    tool_requests: list[ToolRequest]


@dataclass
class AgentSpecToolExecutionConfirmationStatus:
    tool_requests: list[ToolRequest]


def _components(data: Any) -> list[Mapping[str, Any]]:
    found: list[Mapping[str, Any]] = []
    if isinstance(data, Mapping):
        if "component_type" in data:
            found.append(data)
        for value in data.values():
            found += _components(value)
    elif isinstance(data, list):
        for value in data:
            found += _components(value)
    return found


def _write_tools(folder: Path, data: Any, registry: Mapping[str, Callable[..., Any]]) -> None:
    """tools.d/NAME.yaml for each ServerTool the suite has a callable for, run by a module of
    the folder (named after the folder: Python keeps a module it imported once)."""
    module = f"agentspec_registry_{folder.name.replace('-', '_')}"
    lines = [WRAPPER.format(folder=str(folder))]
    for comp in _components(data):
        name = comp.get("name")
        if comp.get("component_type") != "ServerTool" or name not in registry:
            continue
        props = {p["title"]: {k: v for k, v in p.items() if k != "title"} for p in comp.get("inputs") or []}
        required = [p["title"] for p in comp.get("inputs") or [] if "default" not in p]
        manifest = {
            "version": 1,
            "kind": "tool",
            "name": name,
            "description": comp.get("description") or name,
            "parameters": {"type": "object", "properties": props, "required": required},
            "implementation": {"python": f"{module}:{name}"},
        }
        (folder / "tools.d").mkdir(exist_ok=True)
        (folder / "tools.d" / f"{name}.yaml").write_text(yaml.safe_dump(manifest), encoding="utf-8")
        lines.append(f"{name} = _tool({name!r})\n")
    (folder / f"{module}.py").write_text("\n".join(lines), encoding="utf-8")


class FlowrunAgentSpecLoader:
    @staticmethod
    def load(
        agentspec_config: str,
        tool_registry: dict[str, Any] | None = None,
        components_registry: dict[str, Any] | None = None,
    ) -> FlowrunComponent:
        return FlowrunComponent(agentspec_config, tool_registry or {})


class FlowrunComponent:
    def __init__(self, config: str, registry: Mapping[str, Callable[..., Any]]) -> None:
        import flowrun

        self.folder = Path(tempfile.mkdtemp(prefix="flowrun-agentspec-"))
        REGISTRIES[str(self.folder)] = dict(registry)
        data = yaml.safe_load(config)
        self.data = data
        self.values: dict[str, Any] = {}
        _write_tools(self.folder, data, registry)
        self.path = self.folder / "agentspec.yaml"
        self.path.write_text(config, encoding="utf-8")
        loaded = flowrun.load(self.path, prefetch=False)
        # the suite's model server answers without streaming's end marks: ask it not to stream
        overrides: dict[str, object] = {f"models.{m}.stream": False for m in loaded.spec.models}
        overrides |= {f"models.{m}.structured_output": "instructions" for m in loaded.spec.models}
        self.workflow = flowrun.load(self.path, overrides)
        self.inputs: dict[str, Any] = {}
        self.messages: list[str] = []
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        # the answer the run waits for: a future of the run's own event loop, set from the
        # suite's thread (an executor thread blocked on a queue would keep Python from exiting
        # when a test stops before it answers)
        self.waiting: tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]] | None = None
        self.thread: threading.Thread | None = None
        self.pending: list[ToolRequest] = []

    def start(self, inputs: dict[str, Any] | None = None) -> None:
        self.inputs = dict(inputs or {})

    def append_user_message(self, user_message: str) -> None:
        self.messages.append(user_message)

    def append_tool_results(self, tool_result: ToolResult) -> None:
        self._answer(tool_result.content)

    def confirm_or_reject_tool_confirmation(
        self, tool_request: ToolRequest, decision: Literal["accept", "reject"]
    ) -> None:
        self._answer(decision == "accept")

    def _answer(self, value: Any) -> None:
        if self.waiting is not None:
            loop, future = self.waiting
            self.waiting = None
            loop.call_soon_threadsafe(future.set_result, value)

    def _asked(self, kind: str, request: ToolRequest) -> asyncio.Future[Any]:
        """A future for the caller's answer, made before the caller hears of `request`."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self.waiting = (loop, future)
        self.events.put((kind, request))
        return future

    def run(self) -> Any:
        if self.thread is None:
            needs_message = "message" in self.workflow.inputs and "message" not in self.inputs
            if needs_message and not self.messages:
                return AgentSpecUserMessageRequestExecutionStatus([])
            values = {**self.inputs, **({"message": self.messages[-1]} if needs_message else {})}
            self.values = values
            self.thread = threading.Thread(target=self._run, args=(values,), daemon=True)
            self.thread.start()
        kind, value = self.events.get()
        if kind == "ask":
            return AgentSpecToolRequestExecutionStatus([value])
        if kind == "approve":
            return AgentSpecToolExecutionConfirmationStatus([value])
        self.thread = None
        if kind == "error":
            raise value
        return value

    def _run(self, values: dict[str, Any]) -> None:
        try:
            result = self.workflow.run_sync(
                values, runs_dir=self.folder / "runs", ask_user=self._ask, approve=self._approve
            )
            self.events.put(("done", self._finished(result)))
        except Exception as e:  # raised in the suite's thread by run(): a failed run is no answer
            self.events.put(("error", e))

    async def _ask(self, question: str) -> str | None:
        found = CLIENT_QUESTION.search(question)
        if found is None:
            return None
        request = ToolRequest(found.group(1), json.loads(found.group(2)), f"call{len(self.pending)}")
        self.pending.append(request)
        content = await self._asked("ask", request)
        return content if isinstance(content, str) else json.dumps(content)

    async def _approve(self, request: Any) -> bool:
        call = ToolRequest(request.tool, dict(request.arguments), request.call_id)
        return bool(await self._asked("approve", call))

    def _text_output(self) -> str:
        """The name of the one output a text answer is: the top Flow's output (as the Flow
        lists it or its first EndNode receives it), an Agent's `llm_output`."""
        top = self.data if isinstance(self.data, Mapping) else {}
        if top.get("component_type") != "Flow":
            return "llm_output"
        by_id = {str(c.get("id")): c for c in _components(self.data) if "id" in c}
        nodes = [by_id.get(str(n.get("$component_ref")), n) for n in top.get("nodes") or []]
        ends = [n for n in nodes if n.get("component_type") == "EndNode"]
        props = top.get("outputs") or (ends[0].get("inputs") if ends else None) or [{}]
        return str(props[0].get("title", "llm_output"))

    def _finished(self, result: Any) -> Any:
        text = str(result.message or "")
        output = self.workflow.spec.output
        outputs: dict[str, Any] = {}
        if output:
            path = Path(result.run_dir) / output
            if path.is_file():
                raw = path.read_text(encoding="utf-8")
                outputs = json.loads(raw) if path.suffix == ".json" else {self._text_output(): raw}
                text = text or raw
        if "message" in self.workflow.inputs:
            return AgentSpecUserMessageRequestExecutionStatus([text])
        return AgentSpecFinishedExecutionStatus(outputs, [text])
