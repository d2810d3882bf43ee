"""An agent's `guardrails:`: checks on what goes in (its task), what comes out (its final answer)
and what its tool calls ask for. A guardrail is a mapping with one kind key (`match:`/`forbid:`
a regex, `schema:` a JSON Schema, `python:` a function by import path, `judge:` an agent of the
workflow) and the keys every guardrail takes (`name`, `on_fail`, `max_retries`); the union is
told apart by which kind key is present, like an eval set's graders. What a guardrail does at
run time is in runtime/guardrails/."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Discriminator, Field, Tag

from flowrun.manifest.spec_base import Name, Strict

PYTHON_FUNCTION = r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$"  # as a Python hook's (manifest/specs.py)
OnFail = Literal["retry", "stop", "warn"]
DEFAULT_RETRIES = 2
WHERE = ("input", "output", "tools")


class GuardrailBase(Strict):
    """The keys every guardrail takes besides its kind key."""

    kind: ClassVar[str] = ""
    name: Name | None = Field(
        default=None,
        description="Its name in events and messages, e.g. `no-secrets` (default: where it is and its "
        "position: output[0], tools[1][0]).",
    )
    on_fail: OnFail | None = Field(
        default=None,
        description="retry: the reason goes back to the model and it tries again (an output: a new "
        "answer; a tool call: the call is refused with the reason as its result), up to "
        "`max_retries` times, then the agent stops; stop: the agent stops at once (the run fails, "
        "or the caller of an agent called as a tool gets a GUARDRAIL_FAILED error); warn: an event, "
        "and the agent goes on. Default: retry for output and tool guardrails, stop for input ones "
        "(which cannot retry).",
    )
    max_retries: int = Field(
        default=DEFAULT_RETRIES,
        ge=0,
        le=20,
        description="With `on_fail: retry`: the failures the agent may correct before it stops "
        "(per task; each retry is a model call and counts toward `max_steps`).",
    )


class RegexGuardrail(GuardrailBase):
    """A regular expression (Python `re.search`) that the text must match, must not match, or both."""

    kind: ClassVar[str] = "regex"
    match: str | None = Field(default=None, description=r"A regex the text must match, e.g. '^\{'.")
    forbid: str | None = Field(
        default=None, description=r"A regex the text must not match, e.g. '(?i)api[_-]?key'."
    )
    argument: str | None = Field(
        default=None,
        description="Tool guardrails only: match this argument's value (as text) instead of the "
        "arguments as JSON, e.g. `command`.",
    )
    ignore_case: bool = Field(default=False, description="Match ignoring case.")


class SchemaGuardrail(GuardrailBase):
    """A JSON Schema: an output must parse as JSON and be valid; an input is the workflow's inputs
    (or, for an agent called as a tool, the call's arguments); a tool call, its arguments."""

    kind: ClassVar[str] = "schema"
    schema_: dict[str, object] = Field(
        alias="schema",
        description="The JSON Schema (inline), e.g. {type: object, required: [title]}.",
    )


class PythonGuardrail(GuardrailBase):
    """A Python function by import path, called with a dict (`where`, `agent`, `text`, `value`,
    `tool`) and returning a verdict: True/False, (passed, reason), or {pass, reason}."""

    kind: ClassVar[str] = "python"
    python: str = Field(
        pattern=PYTHON_FUNCTION,
        description="`package.module:function`, found from the agent's project folder (as a Python "
        "hook); may be async, e.g. `checks.guards:no_secrets`.",
    )


class JudgeGuardrail(GuardrailBase):
    """Another agent of the workflow judges the text, answering the structured verdict
    {pass: bool, reason: str} (given to it as its output schema)."""

    kind: ClassVar[str] = "judge"
    judge: Name = Field(description="The judging agent's name, e.g. `reviewer`.")
    criteria: str | None = Field(
        default=None,
        description="What the judge checks, added to its task (its own prompt may say it instead), "
        "e.g. `No placeholder text.`",
    )


GUARDRAIL_MODELS: tuple[type[GuardrailBase], ...] = (
    RegexGuardrail,
    SchemaGuardrail,
    PythonGuardrail,
    JudgeGuardrail,
)
KIND_KEYS = {"match": "regex", "forbid": "regex", "schema": "schema", "python": "python", "judge": "judge"}


def guardrail_kind(value: object) -> str | None:
    if isinstance(value, dict):
        return next((kind for key, kind in KIND_KEYS.items() if key in value), None)
    found = getattr(value, "kind", None)
    return found if isinstance(found, str) and found else None


Guardrail = Annotated[
    Annotated[RegexGuardrail, Tag("regex")]
    | Annotated[SchemaGuardrail, Tag("schema")]
    | Annotated[PythonGuardrail, Tag("python")]
    | Annotated[JudgeGuardrail, Tag("judge")],
    Discriminator(guardrail_kind),
]


class ToolGuardrails(Strict):
    """Guardrails on the arguments of some tool calls, checked before a call runs."""

    tools: list[str] | None = Field(
        default=None,
        description="The tool names (shell-style patterns) it applies to: an agent called as a tool "
        "by its name, an MCP tool as the model sees it (SERVER__TOOL), e.g. [execute_shell]; left "
        "out: every tool.",
    )
    check: list[Guardrail] = Field(
        min_length=1, description="The guardrails each call of those tools must pass."
    )


class GuardrailsSpec(Strict):
    """`guardrails:` of an agent (docs: how-to/guardrails.md)."""

    input: list[Guardrail] = Field(
        default_factory=list,
        description="Checked on the agent's task (as a sub-agent: the task its caller gave) before "
        "its first model call; `on_fail`: stop or warn.",
    )
    output: list[Guardrail] = Field(
        default_factory=list,
        description="Checked on its final answer, after an `output_schema` accepted it (the parsed "
        "JSON then); a failing answer is retried, stops the agent or warns.",
    )
    tools: list[ToolGuardrails] = Field(
        default_factory=list,
        description="Checked on the arguments of the tool calls the model makes, before any of "
        "them runs (before PreToolUse hooks and approvals); a failing call is refused with the "
        "reason as its result, stops the agent (none of its step's calls run), or warns.",
    )

    @property
    def empty(self) -> bool:
        return not (self.input or self.output or self.tools)
