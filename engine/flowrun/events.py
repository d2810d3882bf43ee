"""Typed events: one class per line type of `events.jsonl`.

The runtime emits these and prints nothing; the event log, the progress display, the run log,
resume, replay and exporters all read them. Each class serialises to exactly the JSON object a
line holds (minus `seq` and `t`, which the log writer assigns), and `parse_event` reads a line
back, including lines written by earlier versions (unknown keys are ignored, unknown types
become `UnknownEvent`). An optional field (default None) is left out of the line when unset,
unless its metadata is `NULLABLE` (written as null, as earlier versions did).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from flowrun.records import OptionsRecord, UsageRecord
from flowrun.types import ModelResponse, ToolResult

E = TypeVar("E", bound="Event")


# the metadata of an optional field that is written as null when unset (as earlier versions wrote
# it): `field(default=None, metadata=NULLABLE)`
NULLABLE = {"null": True}


@dataclass(kw_only=True, slots=True)
class Event:
    type: ClassVar[str] = ""
    seq: int = 0  # position in the log, set by the writer
    t: float = 0.0  # epoch seconds, set by the writer

    def to_dict(self) -> dict[str, Any]:
        """The line's fields after `seq` and `t`: `type` first, then the event's own."""
        out: dict[str, object] = {"type": self.type}
        for name, optional in _fields(type(self)):
            value = getattr(self, name)
            if value is None and optional:
                continue
            out[name] = value.to_dict() if isinstance(value, ModelResponse | ToolResult) else value
        return out

    @property
    def agent_key(self) -> str | None:
        """The agent instance this event belongs to, if any."""
        return getattr(self, "agent_id", None)

    def describe(self) -> str:
        """The event in words, one sentence (the progress lines, `flowrun show` and the web UI
        say it so); "" for an event that says nothing on its own."""
        return ""

    def level(self) -> str:
        """How a view shows it as a note of its own: "" (it does not: the views draw it, or it
        is too small), "info", "warn" or "error"."""
        return ""


_FIELDS: dict[type[Event], tuple[tuple[str, bool], ...]] = {}


def _fields(cls: type[Event]) -> tuple[tuple[str, bool], ...]:
    """(name, left out when None) of an event class's own fields, computed once per class."""
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = tuple(
            (f.name, f.default is None and not f.metadata.get("null"))
            for f in dataclasses.fields(cls)
            if f.name not in ("seq", "t")
        )
    return found


EVENT_TYPES: dict[str, type[Event]] = {}


def event_type(name: str) -> Callable[[type[E]], type[E]]:
    """Class decorator: register an event class under its `type` string."""

    def register(cls: type[E]) -> type[E]:
        cls.type = name
        EVENT_TYPES[name] = cls
        return cls

    return register


@event_type("run_start")
@dataclass(kw_only=True, slots=True)
class RunStartEvent(Event):
    workflow: str
    workflow_file: str
    inputs: dict[str, object]
    flowrun_version: str
    sdk_versions: dict[str, str] = field(default_factory=dict)
    options: OptionsRecord | None = None  # the run's options, as run.json's (RunOptions.to_dict)
    output: str | None = field(default=None, metadata=NULLABLE)
    chat: str | None = None  # `flowrun chat`: the agent the user talks to
    date: str | None = None  # the `date` templates see; resume and replay keep it
    run_id: str | None = None  # the `run_id` templates see; a replay keeps the recorded one
    # the version of flowrun's words around what models read (runtime/loop/prompt_version.py);
    # resume and replay keep it; None in logs written before it was recorded (version 1)
    prompts: int | None = None
    # the options as earlier versions wrote them (read by RunOptions.from_record, never written)
    dry_run: bool | None = None
    model_override: str | None = None
    agent_models: dict[str, str] | None = None
    overrides: list[str] | None = None
    workdir: str | None = None


@event_type("run_resumed")
@dataclass(kw_only=True, slots=True)
class RunResumedEvent(Event):
    recorded_model_calls: int
    options: OptionsRecord | None = None  # the options the run goes on with (a resume may change some)

    def describe(self) -> str:
        return f"resumed: {self.recorded_model_calls} recorded model call(s) are answered from the log"

    def level(self) -> str:
        return "info"


@event_type("agent_start")
@dataclass(kw_only=True, slots=True)
class AgentStartEvent(Event):
    agent: str
    agent_id: str
    parent: str | None = field(default=None, metadata=NULLABLE)
    task: str = ""
    model: str = ""
    session: str | None = None
    budget: dict[str, float] | None = None  # a per-call budget, capped at what the callers had left

    def describe(self) -> str:
        return f"{self.agent} started ({self.model or '?'})" + (f": {self.task}" if self.task else "")


@event_type("agent_end")
@dataclass(kw_only=True, slots=True)
class AgentEndEvent(Event):
    agent: str
    agent_id: str
    status: str
    steps: int | None = None
    output_files: list[str] | None = None
    error: str | None = None

    def describe(self) -> str:
        steps = f" after {self.steps} step(s)" if self.steps is not None else ""
        return f"{self.agent} {self.status}{steps}" + (f": {self.error}" if self.error else "")


@event_type("agent_prompt")
@dataclass(kw_only=True, slots=True)
class AgentPromptEvent(Event):
    """What an agent instance was told: its rendered system prompt and the tools it is offered
    (name, description, JSON Schema of the arguments), written once per instance."""

    agent: str
    agent_id: str
    model: str = ""
    system: str = ""
    tools: list[dict[str, object]] = field(default_factory=list)


@event_type("project_instructions")
@dataclass(kw_only=True, slots=True)
class ProjectInstructionsEvent(Event):
    """The project instructions (AGENTS.md, CLAUDE.md) the run's agents of one flavor read
    (`agents`: flowrun's own, `claude`: Claude Code agent files), as the block at the end of
    their system prompts; written once per flavor, when the first agent that reads them starts.
    A resume and a replay give the agents this text, never the files as they are now."""

    flavor: str
    files: list[str] = field(default_factory=list)  # relative to the workflow's folder, in order read
    text: str = ""  # the block as the agents read it
    size: int = 0  # bytes of the files
    cap: int = 0  # bytes read at most
    cut: bool = False  # over the cap: the text says where it was cut

    def describe(self) -> str:
        names = ", ".join(self.files)
        if self.cut:
            return f"project instructions {names}: {self.size} bytes, over the {self.cap}-byte cap; cut"
        return f"project instructions read from {names}"

    def level(self) -> str:
        return "warn" if self.cut else ""


@event_type("user_message")
@dataclass(kw_only=True, slots=True)
class UserMessageEvent(Event):
    """A message from the user to an agent mid-conversation: a chat turn, or the `--message` of
    a resumed run. `step` is the agent's model calls so far: resume delivers it there again."""

    agent: str
    agent_id: str
    step: int
    text: str

    def describe(self) -> str:
        return f"a message to {self.agent}: {self.text}"

    def level(self) -> str:
        return "info"


@event_type("model_request")
@dataclass(kw_only=True, slots=True)
class ModelRequestEvent(Event):
    agent: str
    agent_id: str
    step: int
    purpose: str | None = None
    model: str = ""
    messages: int = 0
    digest: str = ""
    tools: list[str] = field(default_factory=list)
    # what the model was told besides the history, for replay to compare (absent in older logs)
    system_digest: str | None = None  # the system prompt
    tools_digest: str | None = None  # the tools' names, descriptions and schemas, and the output schema
    model_id: str | None = None  # `provider:model` of the model asked (a fallback's answer says served_by)


@event_type("model_response")
@dataclass(kw_only=True, slots=True)
class ModelResponseEvent(Event):
    agent: str
    agent_id: str
    step: int
    purpose: str | None = None
    response: ModelResponse = field(default_factory=ModelResponse)
    latency_ms: float = 0.0
    cost_usd: float | None = None  # None when the model has no price
    replayed: bool | None = None  # True when the answer came from the log
    served_by: str | None = None  # the fallback model that answered, when not the agent's own


@event_type("model_fallback")
@dataclass(kw_only=True, slots=True)
class ModelFallbackEvent(Event):
    """A model call switched to the next model of its `fallback` list: the previous one failed
    for good with a retryable error, or is cooling down after such a failure."""

    agent: str
    agent_id: str
    step: int
    from_model: str
    to_model: str
    reason: str

    def describe(self) -> str:
        return f"{self.agent}'s model call {self.step}: {self.from_model} → {self.to_model} ({self.reason})"

    def level(self) -> str:
        return "warn"


@event_type("model_retry")
@dataclass(kw_only=True, slots=True)
class ModelRetryEvent(Event):
    model: str
    retry: int
    delay_s: float
    reason: str

    def describe(self) -> str:
        return f"model {self.model} failed ({self.reason}): retry {self.retry} in {self.delay_s:g} s"

    def level(self) -> str:
        return "warn"


@event_type("tool_call")
@dataclass(kw_only=True, slots=True)
class ToolCallEvent(Event):
    agent: str
    agent_id: str
    call_id: str
    tool: str
    arguments: dict[str, object] = field(default_factory=dict)


@event_type("tool_intent")
@dataclass(kw_only=True, slots=True)
class ToolIntentEvent(Event):
    """Written just before a call that is not safe to repeat starts (an append, a shell
    command): on resume, such a call with no result is reported as of unknown effect instead
    of being run a second time."""

    agent: str
    agent_id: str
    call_id: str
    tool: str


@event_type("tool_result")
@dataclass(kw_only=True, slots=True)
class ToolResultEvent(Event):
    agent: str
    agent_id: str
    call_id: str
    tool: str
    result: ToolResult


@event_type("tool_progress")
@dataclass(kw_only=True, slots=True)
class ToolProgressEvent(Event):
    """A call still running said how it goes (a remote A2A agent's streamed status update)."""

    agent: str
    agent_id: str
    call_id: str
    tool: str
    state: str  # the remote task's state: working, submitted, ...
    message: str = ""

    def describe(self) -> str:
        return f"{self.agent} → {self.tool}: {self.state}" + (f": {self.message}" if self.message else "")


@event_type("a2a_card")
@dataclass(kw_only=True, slots=True)
class A2aCardEvent(Event):
    """The card of a remote A2A agent, read when an agent first needed it: the tool is described
    from it, and a resume or a replay describes it the same way without reading it again."""

    name: str  # the agent's name in `a2a_agents:`
    url: str  # as declared (before its variables are read: never a secret)
    card: dict[str, object] = field(default_factory=dict)  # name, description, streaming, version, skills

    def describe(self) -> str:
        return f"A2A agent {self.name}: its card read from {self.url}"


@event_type("memory_state")
@dataclass(kw_only=True, slots=True)
class MemoryStateEvent(Event):
    """A memory as the run found it when it started: each file's sha256 (run.json's `memory`
    says the same). A dry run's `copy` is the folder it works on instead."""

    memory: str  # the memory's name
    scope: str
    folder: str
    files: dict[str, str] = field(default_factory=dict)  # path under the folder -> sha256
    copy: str | None = None

    def describe(self) -> str:
        where = f", a copy in {self.copy}" if self.copy else ""
        return f"memory {self.memory} ({self.scope}, {self.folder}): {len(self.files)} file(s){where}"


@event_type("memory_index")
@dataclass(kw_only=True, slots=True)
class MemoryIndexEvent(Event):
    """The first lines of a memory's MEMORY.md as an agent instance's prompt got them: a resume
    and a replay give the instance the same text, whatever the file holds now."""

    memory: str
    agent: str
    agent_id: str
    text: str = ""  # as put in the prompt (cut to the caps, redacted)
    lines: int = 0  # MEMORY.md's lines
    cut: bool = False  # MEMORY.md is longer than what the prompt got
    sha256: str | None = None  # of MEMORY.md (None: there is none)

    def describe(self) -> str:
        cut = f", cut at its caps ({self.lines} lines)" if self.cut else ""
        return f"{self.agent} read memory {self.memory}'s index{cut}"

    def level(self) -> str:
        return "warn" if self.cut else ""


@event_type("memory_write")
@dataclass(kw_only=True, slots=True)
class MemoryWriteEvent(Event):
    """A change the memory tool makes, written just before the file changes: the path (and a
    rename's new path) and the sha256 of what it touches before and after (None: not there). A
    resumed run compares them with the folder to tell whether a write a kill interrupted
    happened."""

    agent: str
    agent_id: str
    call_id: str
    memory: str
    command: str
    path: str  # as the memory tool names it: /memories/...
    to: str | None = None
    before: str | None = field(default=None, metadata=NULLABLE)
    after: str | None = field(default=None, metadata=NULLABLE)

    def describe(self) -> str:
        target = f" → {self.to}" if self.to else ""
        return f"{self.agent}: memory {self.memory} {self.command} {self.path}{target}"

    def level(self) -> str:
        return "info"


@event_type("approval")
@dataclass(kw_only=True, slots=True)
class ApprovalEvent(Event):
    """A decision on a tool call whose entry says `approve: ask` or `never`."""

    agent: str
    agent_id: str
    call_id: str
    tool: str
    approved: bool
    # user (the terminal) | callback | --yes | policy (never) | no terminal | recorded, or, for a
    # call that waited, the decision's `by` (cli | python | http | ui | deadline | ...)
    by: str

    def describe(self) -> str:
        verdict = "approved" if self.approved else "not approved"
        return f"{self.agent} → {self.tool}: {verdict} ({self.by})"


@event_type("hook")
@dataclass(kw_only=True, slots=True)
class HookEvent(Event):
    """One hook run (runtime/hooks/): which `event` (PreToolUse, Stop, ...) at which moment
    (`call_id`: the tool call's id, or prompt-N / stop-N / session-start ...), the hook
    (`hook`: where it is configured, `matcher`, `command` or python path), what it answered
    (`exit_code`, `stdout`, `stderr`, `failure` when it gave no answer: a timeout, not found,
    a crash) and what flowrun made of it (`decision`: allow, deny, ask, block, stop or none;
    `reason`). Resume and replay reuse a recorded outcome instead of running the hook again."""

    event: str
    hook: str  # SCOPE:EVENT:GROUP:INDEX, e.g. workflow:PreToolUse:0:1 or agent/helper:Stop:0:0
    agent: str = ""
    agent_id: str = ""
    call_id: str = ""
    matcher: str | None = None
    command: str = ""
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    failure: str | None = None
    decision: str = "none"
    reason: str | None = None
    duration_ms: float = 0.0
    replayed: bool | None = None  # True when the outcome came from the log

    def describe(self) -> str:
        answered = f"failed: {self.failure}" if self.failure else f"exit {self.exit_code}"
        decided = f" → {self.decision}" if self.decision != "none" else ""
        why = f": {self.reason}" if self.reason and self.decision != "none" else ""
        again = " (recorded)" if self.replayed else ""
        return f"hook {self.event} {self.command} · {answered}{decided}{why}{again}"

    def level(self) -> str:
        return "info" if self.decision != "none" or self.failure else ""


@event_type("decision_pending")
@dataclass(kw_only=True, slots=True)
class DecisionPendingEvent(Event):
    """A decision only a person can take, and nobody can take it now: the run waits for it
    (`flowrun approve`, `flowrun answer`, `flowrun.respond`). `kind` approval: a call of an
    `approve: ask` tool (`tool`, `arguments`); question: an `ask_user` question (`question`);
    budget: a `limits` budget reached under `on_budget: ask` (`limit`, `message`; `agent_id`
    is empty: the budget is the run's). `deadline` (epoch seconds): past it, the decision is
    taken by "deadline" (approvals and budgets denied, questions unanswered). `attempt`: the
    run's resume count when it was first asked (None in logs of earlier versions); with the
    agent and call ids it names the request (a resume that reaches it again keeps it)."""

    kind: str  # approval | question | budget
    agent: str
    agent_id: str  # the instance path, e.g. "orchestrator/searcher@call_1/worker@call_4"
    call_id: str  # the tool call's id (a budget's: "budget-LIMIT-N")
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    question: str | None = None
    limit: str | None = None
    amount: float | None = None  # budget: the limit's value now (granting again as much is the default)
    message: str | None = None
    deadline: float | None = None
    attempt: int | None = None

    def describe(self) -> str:
        if self.kind == "question":
            return f"{self.agent} asks a person: {self.question}"
        if self.kind == "budget":
            return f"the run waits for more budget ({self.limit}): {self.message}"
        return f"{self.agent} waits for a person to allow {self.tool}"

    def level(self) -> str:
        return "warn"


@event_type("decision")
@dataclass(kw_only=True, slots=True)
class DecisionEvent(Event):
    """A pending decision taken: how (`by`: cli, python, http, ui, terminal, callback,
    deadline), by whom (`user`, when known) and when (`t`). An approval or a budget is
    `allowed` or not (a budget `grant`s more of its `limit`, reached at `amount`); a question
    gets an `answer`. `attempt` is its request's (the `decision_pending`'s)."""

    kind: str
    agent_id: str
    call_id: str
    agent: str = ""
    allowed: bool | None = None
    answer: str | None = None
    grant: float | None = None
    limit: str | None = None
    reason: str | None = None
    by: str
    user: str | None = None
    attempt: int | None = None
    amount: float | None = None

    def describe(self) -> str:
        if self.kind == "question":
            taken = f"answered: {self.answer}" if self.answer is not None else "not answered"
        elif self.kind == "budget":
            taken = (
                f"granted {self.grant:g} more"
                if self.allowed and self.grant is not None
                else ("granted" if self.allowed else "refused")
            )
        else:
            taken = "allowed" if self.allowed else "denied"
        who = self.by + (f" ({self.user})" if self.user else "")
        return f"{self.kind} {taken} by {who}" + (f": {self.reason}" if self.reason else "")

    def level(self) -> str:
        return "info"


@event_type("sandbox_unavailable")
@dataclass(kw_only=True, slots=True)
class SandboxUnavailableEvent(Event):
    """The start-up probe failed and the run goes on: unconfined (`auto`), or, in a dry run of
    `required`, with the sandboxed tools answering SANDBOX_UNAVAILABLE."""

    reason: str
    mode: str  # auto | required
    unconfined: bool

    def describe(self) -> str:
        then = "tools run unconfined" if self.unconfined else "tools that start processes cannot run"
        return f"the sandbox cannot start ({self.reason}): {then}"

    def level(self) -> str:
        return "warn"


@event_type("seed_kept")
@dataclass(kw_only=True, slots=True)
class SeedKeptEvent(Event):
    """A seed (`workspace.files`) or a copied file (`workspace.copy`) the user's folder already
    has: theirs is kept, the roster's is not written (a seed's `overwrite: true` replaces it)."""

    path: str  # relative to the agents' folder; a folder of copies ends with "/"
    message: str  # the line the CLI and flowrun.log show

    def describe(self) -> str:
        return self.message

    def level(self) -> str:
        return "info"


@event_type("iteration_start")
@dataclass(kw_only=True, slots=True)
class IterationStartEvent(Event):
    loop: str
    iteration: int

    def describe(self) -> str:
        return f"iteration {self.iteration} of {self.loop}"

    def level(self) -> str:
        return "info"


@event_type("iteration_end")
@dataclass(kw_only=True, slots=True)
class IterationEndEvent(Event):
    loop: str
    iteration: int
    until_met: bool

    def describe(self) -> str:
        met = ": its `until` is met" if self.until_met else ""
        return f"iteration {self.iteration} of {self.loop} ended{met}"


@event_type("until_error")
@dataclass(kw_only=True, slots=True)
class UntilErrorEvent(Event):
    loop: str
    iteration: int
    message: str

    def describe(self) -> str:
        after = f"after iteration {self.iteration}"
        return f"the `until` of {self.loop} could not be checked {after}: {self.message}"

    def level(self) -> str:
        return "warn"


@event_type("step")
@dataclass(kw_only=True, slots=True)
class StepEvent(Event):
    """What a step kind says of its own work, in words, so that `show`, the progress lines and
    the web UI show any kind with no code of their own: `phase` start opens a group of what
    follows (its `text` the group's name), end closes it (`text` what came of it), note is one
    line."""

    step: str  # the step's id, e.g. "step2"
    kind: str  # the step kind
    phase: str  # start | end | note
    text: str
    importance: str = "info"  # info | warn | error

    def describe(self) -> str:
        return self.text

    def level(self) -> str:
        return self.importance


@event_type("output_invalid")
@dataclass(kw_only=True, slots=True)
class OutputInvalidEvent(Event):
    """A final answer did not match the agent's `output_schema`: the agent gets a repair turn
    while `repairs_left` > 0, else it fails."""

    agent: str
    agent_id: str
    step: int  # the model call that gave the answer
    problem: str
    repairs_left: int

    def describe(self) -> str:
        return (
            f"{self.agent}'s answer does not match output_schema ({self.repairs_left} repair(s) "
            f"left): {self.problem}"
        )

    def level(self) -> str:
        return "warn"


@event_type("guardrail")
@dataclass(kw_only=True, slots=True)
class GuardrailEvent(Event):
    """One guardrail's verdict on an agent's task (`where: input`), final answer (`output`) or
    tool call (`tool`). `action`: pass, retry (the reason went back to the model: a new answer,
    or the call refused), stop (the agent stopped), warn (recorded, it went on)."""

    agent: str
    agent_id: str
    call_id: str  # the moment: input:N, output:N (N: the agent's model calls so far), tool:CALL_ID
    guardrail: str  # its `name`, else e.g. output[0], tools[1][0]
    where: str  # input | output | tool
    kind: str  # regex | schema | python | judge
    passed: bool
    action: str  # pass | retry | stop | warn
    reason: str = ""
    tool: str | None = None  # a tool guardrail's tool
    retries_left: int | None = None  # with on_fail: retry
    judge_id: str | None = None  # the judge agent's instance (its model calls carry this id)
    replayed: bool | None = None  # reused from the log by resume or replay

    def describe(self) -> str:
        on = f" on {self.tool}" if self.tool else f" on the {self.where}"
        left = ""
        if self.action == "retry" and self.retries_left is not None:
            left = f" ({self.retries_left} retr{'y' if self.retries_left == 1 else 'ies'} left)"
        why = f": {self.reason}" if self.reason else ""
        again = " (recorded)" if self.replayed else ""
        return f"guardrail {self.guardrail} ({self.kind}){on} · {self.action}{left}{why}{again}"

    def level(self) -> str:
        return "" if self.passed else "warn"


@event_type("step_condition")
@dataclass(kw_only=True, slots=True)
class StepConditionEvent(Event):
    """The `if:` of a step was checked; a step whose condition is not met is skipped. A
    condition that cannot be evaluated (a missing file, a missing key) is not met: `message`."""

    step: str  # the step's id, e.g. "step2" or "foreach1.3"
    condition: str
    met: bool
    message: str | None = None

    def describe(self) -> str:
        if self.met:
            return f"step {self.step} runs: if {self.condition} is met"
        why = f" ({self.message})" if self.message else ""
        return f"skipped {self.step}: if {self.condition} not met{why}"

    def level(self) -> str:
        return "" if self.met else "info"


@event_type("fanout_start")
@dataclass(kw_only=True, slots=True)
class FanoutStartEvent(Event):
    """A `parallel:` or `foreach:` step starts its branches."""

    step: str
    kind: str  # parallel | foreach
    branches: int
    concurrency: int
    collect: str | None = None  # foreach: the file the results go to

    def describe(self) -> str:
        into = f" → {self.collect}" if self.collect else ""
        return f"{self.kind} {self.step}: {self.branches} branch(es), {self.concurrency} at a time{into}"

    def level(self) -> str:
        return "info"


@event_type("fanout_end")
@dataclass(kw_only=True, slots=True)
class FanoutEndEvent(Event):
    step: str
    kind: str
    statuses: list[str] = field(default_factory=list)  # each branch's outcome, in order ("skipped")
    collect: str | None = None

    def describe(self) -> str:
        counts: dict[str, int] = {}
        for status in self.statuses:
            counts[status] = counts.get(status, 0) + 1
        told = ", ".join(f"{n} {status}" for status, n in counts.items()) or "no branch"
        return f"{self.kind} {self.step} ended: {told}"

    def level(self) -> str:
        return "info"


@event_type("context_reset")
@dataclass(kw_only=True, slots=True)
class ContextResetEvent(Event):
    agent: str
    agent_id: str
    messages_before: int
    messages_after: int

    def describe(self) -> str:
        return f"{self.agent}'s history was reset: {self.messages_before} → {self.messages_after} messages"

    def level(self) -> str:
        return "info"


@event_type("context_compacted")
@dataclass(kw_only=True, slots=True)
class ContextCompactedEvent(Event):
    agent: str
    agent_id: str
    messages_before: int
    messages_after: int
    transcript: str

    def describe(self) -> str:
        return (
            f"{self.agent}'s history was compacted: {self.messages_before} → {self.messages_after} messages"
        )

    def level(self) -> str:
        return "info"


@event_type("call_budget_exceeded")
@dataclass(kw_only=True, slots=True)
class CallBudgetExceededEvent(Event):
    """An agent called as a tool used up its per-call budget (or one of its callers' budgets):
    it stops and returns `partial` to its caller; the run goes on."""

    agent: str
    agent_id: str
    limit: str  # max_cost_usd | max_tokens | max_steps
    message: str
    tokens: int = 0  # what its sub-tree used
    cost_usd: float = 0.0
    model_calls: int = 0

    def describe(self) -> str:
        return f"{self.message}: {self.tokens:,} tokens, ${self.cost_usd:.4f}, {self.model_calls} call(s)"

    def level(self) -> str:
        return "warn"


@event_type("repeated_call")
@dataclass(kw_only=True, slots=True)
class RepeatedCallEvent(Event):
    """The loop guard: an agent made the same tool call (same arguments) `count` times in a row.
    `refused`: the call reached the limit and got a REPEATED_CALL error instead of running;
    `stopped`: the agent made it again and was stopped (its outcome is `repeated_call`)."""

    agent: str
    agent_id: str
    call_id: str
    tool: str
    count: int
    limit: int
    action: str  # refused | stopped

    def describe(self) -> str:
        what = "refused" if self.action == "refused" else "stopped"
        return (
            f"{self.agent} called {self.tool} with the same arguments {self.count} times in a row "
            f"(the loop guard allows {self.limit}): {what}"
        )

    def level(self) -> str:
        return "warn"


@event_type("budget_exceeded")
@dataclass(kw_only=True, slots=True)
class BudgetExceededEvent(Event):
    limit: str
    message: str

    def describe(self) -> str:
        return f"the run's limit {self.limit} was reached: {self.message}"

    def level(self) -> str:
        return "warn"


@event_type("error")
@dataclass(kw_only=True, slots=True)
class ErrorEvent(Event):
    agent: str | None = None
    agent_id: str | None = None
    where: str
    message: str

    def describe(self) -> str:
        who = f" of {self.agent}" if self.agent else ""
        return f"error in the {self.where}{who}: {self.message}"

    def level(self) -> str:
        return "error"


@event_type("run_end")
@dataclass(kw_only=True, slots=True)
class RunEndEvent(Event):
    """How the run (this attempt of it) ended. `pending`: the refs of the decisions still open
    (those a waiting run waits for); a request an earlier attempt left open and this one asked
    no more (it went another way, or completed) is not among them (None in older logs)."""

    status: str
    message: str = ""
    usage: UsageRecord = field(default_factory=UsageRecord)
    pending: list[str] | None = None

    def describe(self) -> str:
        return f"run {self.status}" + (f": {self.message}" if self.message else "")


@dataclass(kw_only=True, slots=True)
class UnknownEvent(Event):
    """A line of a type this version does not know (a newer writer, or damage): kept raw."""

    raw: dict[str, object] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.raw.items() if k not in ("seq", "t")}


_CONVERTERS: dict[str, Any] = {"response": ModelResponse.from_dict, "result": ToolResult.from_dict}


def parse_event(raw: dict[str, Any]) -> Event:
    """A log line (already JSON-decoded) as its typed event; never raises on an old or unknown
    line (a field that cannot be read, or holds a value of another type than its own, makes it
    an UnknownEvent: a hand-edited `"t": "x"` is a damaged line, not a reader's crash)."""
    cls = EVENT_TYPES.get(str(raw.get("type")))
    if cls is None:
        return UnknownEvent(raw=raw, seq=_int(raw.get("seq")), t=_float(raw.get("t")))
    checks = _checks(cls)
    try:
        values = {}
        for k, v in raw.items():
            check = checks.get(k)
            if check is None:
                continue  # a key this version does not know (or `type`)
            if not check(v):
                raise ValueError(k)
            values[k] = _CONVERTERS[k](v) if k in _CONVERTERS else v
        return cls(**values)
    except (TypeError, KeyError, ValueError, AttributeError):
        return UnknownEvent(raw=raw, seq=_int(raw.get("seq")), t=_float(raw.get("t")))


Check = Callable[[object], bool]
_CHECKS: dict[type[Event], dict[str, Check]] = {}


def _checks(cls: type[Event]) -> dict[str, Check]:
    """Each field's check of a value read from a line, made from its annotation once per class."""
    found = _CHECKS.get(cls)
    if found is None:
        found = _CHECKS[cls] = {f.name: _check(str(f.type)) for f in dataclasses.fields(cls)}
    return found


def _check(annotation: str) -> Check:
    optional = annotation.endswith(" | None")
    base = annotation.removesuffix(" | None")
    inner = _base_check(base)
    return (lambda v: v is None or inner(v)) if optional else inner


def _base_check(base: str) -> Check:
    def number(v: object) -> bool:
        return isinstance(v, int | float) and not isinstance(v, bool)

    simple: dict[str, Check] = {
        "str": lambda v: isinstance(v, str),
        "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "float": number,
        "bool": lambda v: isinstance(v, bool),
        "list[str]": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
        "dict[str, str]": lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
        "dict[str, float]": lambda v: isinstance(v, dict) and all(number(x) for x in v.values()),
    }
    if base in simple:
        return simple[base]
    if base.startswith("list["):
        return lambda v: isinstance(v, list)
    if base.startswith("dict[") or base in ("OptionsRecord", "UsageRecord"):
        return lambda v: isinstance(v, dict)
    return lambda v: True  # (ModelResponse, ToolResult: their converters read them)


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0


def _float(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 0.0
