"""A tool as one agent may call it: its spec for the model, its kind (how it runs), and the
per-agent config and limits merged from the tool manifest and the agent's tool entry."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from flowrun.tools.base import ToolContext
from flowrun.types import ToolCall, ToolResult, ToolSpec

if TYPE_CHECKING:
    from flowrun.manifest.project import Project
    from flowrun.manifest.specs import AgentManifest, SandboxSpec
    from flowrun.runtime.loop.instance import AgentInstance
    from flowrun.runtime.loop.services import RunServices


@dataclass(slots=True)
class BindRequest:
    """One entry of an agent's `tools` list, to be made callable."""

    name: str
    config: dict[str, Any]  # the agent's per-tool config (may be empty)
    agent: AgentManifest  # the agent the tool is bound for
    project: Project


@dataclass(slots=True)
class Invocation:
    """One validated call of a bound tool."""

    ctx: ToolContext
    arguments: dict[str, Any]
    caller: AgentInstance
    call: ToolCall
    run: RunServices


class ToolKind(Protocol):
    """How a kind of tool is bound and run (python function, command line, agent, ...).
    Kinds are listed in runtime/tool_kinds/__init__.py; the first that claims a name binds it."""

    name: str

    def claims(self, name: str, project: Project) -> bool: ...

    def bind(self, request: BindRequest) -> list[BoundTool]: ...

    async def invoke(self, bound: BoundTool, call: Invocation) -> ToolResult: ...


@dataclass(slots=True)
class BoundTool:
    name: str
    spec: ToolSpec
    kind: ToolKind
    config: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, Any] = field(default_factory=dict)
    sequential: bool = False
    target: Any = None  # what the kind needs to run it: a function, a command, an agent spec
    approve: str = "always"  # the entry's `approve:` (see runtime/loop/approvals.py)
    sandbox_layers: tuple[SandboxSpec | None, ...] = ()  # the tool manifest's and the entry's `sandbox:`
    # whether running a call twice does no more than running it once: a flag, or a rule on the
    # call's arguments (write_file: all modes but append). A call that is not is recorded
    # (`tool_intent`) before it runs, and not run again by a resume that finds no result.
    idempotent: bool | Callable[[dict[str, Any]], bool] = True
    _validator: Any = None

    def repeat_safe(self, arguments: dict[str, Any]) -> bool:
        rule = self.idempotent
        return bool(rule(arguments)) if callable(rule) else rule

    def validator(self) -> Any:
        if self._validator is None:
            self._validator = parameters_validator(json.dumps(self.spec.parameters, sort_keys=True))
        return self._validator


@lru_cache(maxsize=512)
def parameters_validator(schema_json: str) -> Any:
    """The validator of one parameters schema (as canonical JSON), built once per process:
    every agent instance binds its tools afresh, and a batch makes thousands of instances."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(schema_json))
