"""What the loop, the tool kinds, the step kinds and the context strategies see of a run and of
each other. One module because these types refer to each other in a circle (a bound tool's kind is
invoked with the calling instance and the run; an instance holds its bound tools): split, they
would import each other.

The loop and context strategies see `LoopServices`; tool kinds and step kinds see `RunServices`.
`runtime.run.Run` implements both; tests can drive a loop with anything that does."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypeVar

from flowrun.events import ContextResetEvent, Event
from flowrun.manifest.kinds import ContextSide, ToolKindSide
from flowrun.manifest.project import Project
from flowrun.manifest.specs import AgentManifest, Limits, SandboxSpec, WorkflowManifest
from flowrun.plain_schema import Check, parameters_check
from flowrun.providers.base import ModelConfig, Provider
from flowrun.redaction import Redactor
from flowrun.regexes import compile_regex
from flowrun.runtime.durable.ledger import KindRecord
from flowrun.runtime.loop.repeats import RepeatGuard
from flowrun.runtime.models.subtrees import Subtree, SubtreeBook
from flowrun.tools.base import ToolContext
from flowrun.tools.sandbox import Mode, SandboxPolicy
from flowrun.types import (
    DryRunUse,
    FileUse,
    Message,
    ModelResponse,
    ReplayUse,
    ToolCall,
    ToolResult,
    ToolSpec,
)

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

R = TypeVar("R", bound=KindRecord)

# ---------------------------------------------------------------- an agent and its outcome

DEFAULT_REPEAT_LIMIT = 5  # limits.max_repeated_calls' default (manifest/specs.py)
OutcomeStatus = Literal["completed", "finished", "stopped", "max_steps", "repeated_call"]


@dataclass(slots=True)
class Outcome:
    status: OutcomeStatus
    text: str
    steps: int
    data: Any = None  # the parsed final answer of an agent with an `output_schema`
    agent_id: str = ""  # the instance that produced it (steps)
    output: str | None = None  # the file a step wrote the answer to, relative to the run folder

    def answer(self) -> str:
        """The final answer as a file holds it: the JSON of a structured answer, else the text."""
        if self.data is not None:
            return json.dumps(self.data, indent=2, ensure_ascii=False) + "\n"
        return self.text


@dataclass
class AgentInstance:
    """A persistent sub-agent keeps one instance (and so its messages) across calls."""

    id: str  # deterministic path, e.g. "orchestrator/searcher@call_1_0"
    name: str
    spec: AgentManifest  # the effective manifest (extends resolved)
    model: ModelConfig
    provider: Provider
    tools: dict[str, BoundTool]
    system: str
    depth: int
    cwd: Path
    strategy: ContextStrategy  # what its `context:` does to its conversation
    messages: list[Message] = field(default_factory=list)
    model_calls: int = 0  # over the instance's life: the index of its next model call
    written: set[str] = field(default_factory=set)  # workspace files its write tools touched
    calls_made: dict[str, int] = field(default_factory=dict)  # sub-agent name -> calls
    side_calls: dict[str, int] = field(default_factory=dict)  # purpose -> tool-less calls (compaction)
    task: str = ""
    output_schema: dict[str, object] | None = None  # the spec's `output_schema`, resolved
    tree: Subtree | None = None  # its usage with everything it calls, and any per-call budget
    last_text: str = ""  # the latest non-empty text the model wrote
    prompt_digests: tuple[str, str] | None = None  # (system, tools) digests, computed once
    write_within: Path | None = None  # writes confined here (called with `output_dir`)
    repeats: RepeatGuard = field(default_factory=lambda: RepeatGuard(DEFAULT_REPEAT_LIMIT))  # loop guard
    arguments: dict[str, object] | None = None  # called as a tool: the call's arguments (input guardrails)
    # tools bound but not offered until `tool_search` loads them (runtime/loop/deferred.py):
    # every deferred tool, loaded or not, and the names to load before the next model call
    deferred: dict[str, BoundTool] = field(default_factory=dict)
    loading: list[str] = field(default_factory=list)

    def stop_pattern(self) -> re.Pattern[str] | None:
        pattern = self.spec.stop.pattern
        return compile_regex(pattern) if pattern else None


class ContextStrategy(ContextSide, Protocol):
    """An agent's `context:` strategy: its manifest side (manifest/kinds.py) and what it does to
    the conversation. The defaults keep every turn: the opening message is the task, nothing
    happens before a model call, and a reset restarts the history from the opening message."""

    def opening(self, inst: AgentInstance, task: str, services: LoopServices) -> str:
        """The first user turn of a conversation (and of a reset one)."""
        return task

    async def before_call(self, inst: AgentInstance, services: LoopServices) -> None:
        """A chance to shrink the history before each model call."""
        return None

    def reset(self, inst: AgentInstance, services: LoopServices) -> None:
        """Restart the history from the opening message (a tool asked for it)."""
        before = len(inst.messages)
        inst.messages = [Message("user", self.opening(inst, inst.task, services))]
        services.emit(
            ContextResetEvent(agent=inst.name, agent_id=inst.id, messages_before=before, messages_after=1)
        )


# ---------------------------------------------------------------- tools as an agent calls them


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


class ToolKind(ToolKindSide, Protocol):
    """A kind of tool (how the tools of an agent's entries run): its manifest side
    (manifest/kinds.py) and how its tools are bound and run. Kinds are registered in
    runtime/kinds.py; the first that claims a name binds it."""

    # what it keeps of a recorded run for resume and replay (durable/ledger.KindRecord)
    records: ClassVar[tuple[type[KindRecord], ...]] = ()

    def bind(self, request: BindRequest) -> list[BoundTool]: ...

    async def invoke(self, bound: BoundTool, call: Invocation) -> ToolResult: ...

    async def prepare(self, inst: AgentInstance, run: RunServices) -> bool:
        """Before an agent's model call: finish binding its tools (MCP starts its servers and
        lists their tools here). True when the agent's tools changed."""
        return False

    async def aclose(self, run: RunServices) -> None:
        """At the end of a run: release what the kind holds for it."""
        return None


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
    # what it does with the path it is given: read (a dry run gives it a file that exists), write
    # (a result's `path_resolved` joins the agent's written files), change (deletes, makes folders)
    files: FileUse | None = None
    # what a replay does with a recorded call: run it again, or give the recorded result (the
    # network, a person)
    replay: ReplayUse = "run"
    # an agent offered as a tool: it runs again on replay and resume (from its recorded model
    # calls, to rebuild its state), and a prompt's `team` lists it
    delegates: bool = False
    # what a dry run does with a call: run it, or answer it without running it, from
    # `result_schema` (a tool whose effects reach outside the run and are not known to be
    # read-only: an MCP tool its server does not annotate `readOnlyHint`, a remote agent)
    in_dry_run: DryRunUse = "run"
    result_schema: dict[str, object] | None = None  # what a call returns, when the tool declares it
    # its results (or its description) hold text from outside the workflow, framed as data
    # (flowrun/foreign_text.py): the agent's system prompt then says once what such blocks are
    foreign_text: bool = False
    # what a call's arguments become (runtime/loop/dispatch.prepared_arguments): each valid
    # `default` of the schema filled in where the model left the argument out (an MCP server
    # applies its own), and an argument the schema does not declare passed on where the schema
    # allows it and the tool can take it (a function with **kwargs, an MCP server)
    fills_defaults: bool = True
    takes_undeclared: bool = False
    _validator: Validator | None = None
    _plain: Check | None = None

    def repeat_safe(self, arguments: dict[str, Any]) -> bool:
        rule = self.idempotent
        return bool(rule(arguments)) if callable(rule) else rule

    def surely_valid(self, arguments: dict[str, object]) -> bool:
        """True when the arguments are valid by the parameters schema, decided without
        jsonschema (plain_schema.py); False: `validator()` decides."""
        if self._plain is None:
            self._plain = parameters_check(json.dumps(self.spec.parameters, sort_keys=True))
        return self._plain(arguments)

    def validator(self) -> Validator:
        if self._validator is None:
            self._validator = parameters_validator(json.dumps(self.spec.parameters, sort_keys=True))
        return self._validator


@lru_cache(maxsize=512)
def parameters_validator(schema_json: str) -> Validator:
    """The validator of one parameters schema (as canonical JSON), built once per process:
    every agent instance binds its tools afresh, and a batch makes thousands of instances."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(schema_json))


# ---------------------------------------------------------------- what a run offers


class SandboxBook(Protocol):
    """Each bound tool's sandbox policy (runtime/loop/sandboxes.py keeps it)."""

    @property
    def override(self) -> Mode | None:  # --sandbox MODE, over every `sandbox:` mode
        ...

    def policy(self, agent: AgentManifest, bound: BoundTool) -> SandboxPolicy: ...


class LoopServices(Protocol):
    workspace: Path

    def emit(self, event: Event) -> None: ...

    async def model_call(self, inst: AgentInstance) -> ModelResponse: ...

    async def side_call(self, inst: AgentInstance, system: str, text: str, purpose: str) -> str: ...

    async def execute_calls(self, inst: AgentInstance, calls: list[ToolCall]) -> list[ToolResult]: ...

    async def user_turn(self, inst: AgentInstance, answer: str | None) -> str | None:
        """A user message for `inst` now (before a model call, with `answer` None, or after an
        answer that would end it), or None: the conversation goes on without one."""
        return None

    async def prompt_hooks(self, inst: AgentInstance, text: str, opening: bool) -> str:
        """The task (`opening`) or user message as the agent reads it once its hooks ran
        (UserPromptSubmit, and SessionStart's context); raises HookBlocked when refused."""
        return text

    async def stop_hooks(self, inst: AgentInstance, outcome: Outcome, active: bool) -> str | None:
        """Before `inst` gives its final answer: a reason it must go on (Stop, SubagentStop
        hooks), or None."""
        return None

    async def guard_input(self, inst: AgentInstance) -> None:
        """Its input guardrails on `inst.task`, before its first model call for it; raises
        GuardrailFailed when one stops it (runtime/guardrails/)."""
        return None

    async def guard_output(self, inst: AgentInstance, outcome: Outcome) -> str | None:
        """Its output guardrails on a final answer: None when it passes, else the message that
        makes it answer again; raises GuardrailFailed when one stops it."""
        return None

    async def guard_calls(self, inst: AgentInstance, calls: list[ToolCall]) -> None:
        """Its tool guardrails on a step's calls, before any runs (refusals are answered by the
        dispatcher); raises GuardrailFailed when one stops it."""
        return None


class RunKnobs(Protocol):
    """What kinds read of a run's options (runtime/options.RunOptions, which imports this module)."""

    @property
    def dry_run(self) -> bool: ...

    @property
    def memory_dir(self) -> Path | None: ...


class RunServices(LoopServices, Protocol):
    project: Project
    limits: Limits
    iteration: int | None  # the current loop iteration (1-based), for templates
    spec: WorkflowManifest  # the workflow being run
    run_dir: Path  # the run folder
    run_id: str  # its name
    workflow_dir: Path  # the workflow file's folder, resolved
    redactor: Redactor  # what no model and no file the run writes may hold

    @property
    def options(self) -> RunKnobs:  # as run.json records them (runtime/options.RunOptions)
        ...

    @property
    def sandboxes(self) -> SandboxBook:  # how tool processes are confined (with --sandbox applied)
        ...

    subtrees: SubtreeBook  # usage per sub-tree of agents, per-call budgets

    def new_instance(
        self,
        name: str,
        instance_id: str,
        depth: int,
        cwd: Path | None = None,
        model_ref: str | None = None,
    ) -> AgentInstance: ...

    def use_model(self, inst: AgentInstance, ref: str) -> None: ...

    def template_vars(self) -> dict[str, Any]: ...

    # a kind's record of the run this one resumes or replays (an empty one for a new run): the
    # state the kind keeps for resume lives in its own module (durable/ledger.KindRecord)
    def recorded(self, record: type[R]) -> R: ...
