"""The manifest kinds as pydantic models: the one source of truth for `schema/*.schema.json`.

Every model forbids unknown keys. Optional fields default to None so that `extends:` can tell
what a manifest set itself (`model_fields_set`); engine defaults are applied when resolving.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

NAME = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"
PRESETS = ("deepseek", "qwen", "glm", "moonshot", "ollama", "vllm", "openrouter")
PROVIDERS = ("anthropic", "openai", "openai-compatible", "test", "scripted")

Name = Annotated[str, Field(pattern=NAME, description="Letters, digits, _ and -; starts with a letter.")]
EnvName = Annotated[
    str, Field(pattern=ENV_NAME, description="The NAME of an environment variable, not its value.")
]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


# ---------------------------------------------------------------- models / providers


class Price(Strict):
    input: float = Field(ge=0, description="USD per million input tokens.")
    output: float = Field(ge=0, description="USD per million output tokens.")
    cache_read: float | None = Field(None, ge=0, description="USD per million cache-read tokens.")
    cache_write: float | None = Field(None, ge=0, description="USD per million cache-write tokens.")


class Thinking(Strict):
    enabled: bool = Field(True, description="Extended thinking on or off.")
    budget_tokens: int = Field(2048, ge=1024, description="Tokens the model may spend thinking per call.")


class ModelSpec(Strict):
    """One named model: which provider serves it and how to call it. Secrets are never inline."""

    provider: Literal[PROVIDERS] | None = Field(  # type: ignore[valid-type]
        None,
        description="anthropic | openai | openai-compatible (needs base_url) | test | scripted. "
        "May be omitted when `preset` is given.",
    )
    preset: Literal[PRESETS] | None = Field(  # type: ignore[valid-type]
        None,
        description="An openai-compatible service whose base_url and key variable flowrun knows: "
        + ", ".join(PRESETS)
        + ".",
    )
    model: str = Field(min_length=1, description="The model id the provider expects.")
    base_url: str | None = Field(None, description="Override the API base URL (proxies, local servers).")
    api_key_env: EnvName | None = Field(None, description="Env var holding the API key.")
    auth_token_env: EnvName | None = Field(
        None, description="Env var holding a bearer auth token (anthropic; used instead of the key)."
    )
    max_tokens: int | None = Field(None, ge=1, description="Max output tokens per call (default 4096).")
    temperature: float | None = Field(None, ge=0, le=2, description="Sampling temperature.")
    thinking: bool | Thinking | None = Field(
        None, description="Extended thinking: true/false or {budget_tokens}."
    )
    stream: bool | None = Field(None, description="Stream responses (default true).")
    timeout_s: float | None = Field(None, gt=0, description="Per-request timeout in seconds (default 300).")
    max_retries: int | None = Field(None, ge=0, le=20, description="Retries on 429/5xx/timeouts (default 4).")
    context_window: int | None = Field(None, ge=1024, description="Context window in tokens (for `compact`).")
    tool_calling: Literal["native", "react"] | None = Field(
        None,
        description="native tool calls, or `react`: tools described in text (Thought/Action/Observation).",
    )
    price: Price | None = Field(None, description="Prices for the cost summary.")
    headers: dict[str, str] | None = Field(None, description="Extra HTTP headers (not secrets).")
    script: str | None = Field(
        None, description="scripted provider: the script file, relative to the workflow."
    )

    @model_validator(mode="after")
    def _provider_or_preset(self) -> ModelSpec:
        if self.provider is None and self.preset is None:
            raise ValueError("a model needs `provider` or `preset`")
        if self.provider == "openai-compatible" and not self.base_url:
            raise ValueError("provider openai-compatible needs `base_url` (or use a `preset`)")
        if self.provider == "scripted" and not self.script:
            raise ValueError("provider scripted needs `script:` (a kind: script file)")
        return self


ModelRef = Annotated[
    str,
    Field(
        min_length=1,
        description="A model name from the workflow's `models` (or models.d), or `provider:model-id` "
        "such as `anthropic:claude-sonnet-4-5`, `openai:gpt-4o`, `deepseek:deepseek-chat`.",
    ),
]


class ModelsManifest(Strict):
    """`models.d/NAME.yaml`: named models shared by every workflow of a project."""

    version: Literal[1] = Field(description="Manifest format version.")
    kind: Literal["models"]
    models: dict[Name, ModelSpec] = Field(description="Named models.")
    default_model: str | None = Field(None, description="The model agents use when they name none.")


# ---------------------------------------------------------------- tools


class PythonImplementation(Strict):
    python: str = Field(
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$",
        description="`package.module:function`, an async function (ctx, **arguments) -> ToolResult.",
    )


class CommandImplementation(Strict):
    command: list[str] = Field(
        min_length=1,
        description="argv list run without a shell; each item a Jinja2 template over the arguments.",
    )
    cwd: str | None = Field(
        None, description="Working folder, relative to the workspace (default: the agent's)."
    )
    env: dict[str, str] | None = Field(None, description="Extra environment variables (not secrets).")


class ToolLimits(Strict):
    timeout_s: float | None = Field(None, gt=0, description="Kill the call after this many seconds.")
    max_output_bytes: int | None = Field(None, ge=256, description="Cap on captured output.")


class ToolManifest(Strict):
    """`tools.d/NAME.yaml`: a tool the model can call."""

    version: Literal[1] = Field(description="Manifest format version.")
    kind: Literal["tool"]
    name: Name = Field(description="The name the model calls.")
    description: str = Field(min_length=1, description="What the model reads about the tool.")
    parameters: dict[str, Any] = Field(description="JSON Schema (type: object) of the arguments.")
    implementation: PythonImplementation | CommandImplementation
    config: dict[str, Any] | None = Field(
        None, description="JSON Schema of the per-agent config an agent may set for this tool."
    )
    defaults: dict[str, Any] | None = Field(None, description="Default config values.")
    limits: ToolLimits | None = None
    sequential: bool | None = Field(
        None, description="true: never run concurrently with the other tool calls of a step."
    )


# ---------------------------------------------------------------- agents

ToolEntry = Annotated[
    str | Annotated[dict[Name, dict[str, Any] | None], Field(min_length=1, max_length=1)],
    Field(
        description="A tool or agent name, or `{name: {config}}` to set per-agent config and "
        "constraints (paths, write_paths, read_only, allow, deny, timeout, session, ...)."
    ),
]


class ContextSpec(Strict):
    strategy: Literal["full", "dashboard", "compact"] = Field(
        "full",
        description="full: keep every turn; dashboard: after update_dashboard the history becomes system "
        "prompt + dashboards; compact: near the context limit, older turns are summarised into a file.",
    )
    dashboards: dict[Name, str] | None = Field(
        None, description="dashboard strategy: dashboard name -> file in the workspace."
    )
    compact_at: float | None = Field(
        None, gt=0, lt=1, description="compact: share of the context window that triggers (default 0.75)."
    )
    keep_recent: int | None = Field(
        None, ge=1, description="compact: recent turns kept verbatim (default 6)."
    )


class StopSpec(Strict):
    pattern: str | None = Field(
        None, description=r"Regex on the model's text that ends the agent, e.g. '\bDONE\b\s*$'."
    )
    on_text: bool | None = Field(
        None, description="End when the model answers without tool calls (default true)."
    )


class AgentManifest(Strict):
    """`agents.d/NAME.yaml`: one role."""

    version: Literal[1] = Field(description="Manifest format version.")
    kind: Literal["agent"]
    name: Name = Field(description="The agent's name; also its tool name when offered to other agents.")
    extends: Name | None = Field(
        None, description="Inherit another agent's keys (same name: the next one on the search path)."
    )
    description: str | None = Field(
        None, description="What callers see when this agent is offered as a tool."
    )
    prompt: str | None = Field(None, description="Inline Jinja2 system prompt.")
    prompt_file: str | None = Field(
        None, description="A Jinja2 template under prompts/ (the system prompt), a relative path."
    )
    model: ModelRef | None = None
    max_steps: int | None = Field(
        None, ge=1, le=10_000, description="Model calls before it stops (default 30)."
    )
    tools: list[ToolEntry] | None = Field(None, description="The allowlist: tools and agents it may call.")
    context: ContextSpec | None = None
    stop: StopSpec | None = None
    session: Literal["fresh", "persistent"] | None = Field(
        None,
        description="As a tool: fresh = a new conversation per call (default); persistent = one instance "
        "keeps its conversation across calls.",
    )
    selectable_models: list[ModelRef] | None = Field(
        None, description="As a tool: models the caller may pick for this agent (adds a `model` argument)."
    )
    vars: dict[str, Any] | None = Field(None, description="Values for the prompt template.")
    summary_max_chars: int | None = Field(
        None, ge=100, description="As a tool: cap on the summary returned to the caller (default 4000)."
    )

    @field_validator("prompt_file")
    @classmethod
    def _inside_prompts(cls, value: str | None) -> str | None:
        if value is not None and (value.startswith("/") or ".." in value.replace("\\", "/").split("/")):
            raise ValueError(f"prompt_file {value!r} must be a relative path inside prompts/, without '..'")
        return value

    @model_validator(mode="after")
    def _one_prompt(self) -> AgentManifest:
        if self.prompt is not None and self.prompt_file is not None:
            raise ValueError("set `prompt` or `prompt_file`, not both")
        return self


AGENT_TOOL_CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "session": {"enum": ["fresh", "persistent"], "description": "Override the sub-agent's session mode."},
        "max_calls": {"type": "integer", "minimum": 1, "description": "Calls allowed (a round limit)."},
        "max_steps": {"type": "integer", "minimum": 1, "description": "Override the sub-agent's max_steps."},
        "selectable_models": {"type": "array", "items": {"type": "string"}},
    },
}


# per-agent config of a declarative command tool whose manifest declares none
COMMAND_TOOL_CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "allow": {"type": "array", "items": {"type": "string"}, "description": "Command patterns allowed."},
        "deny": {"type": "array", "items": {"type": "string"}, "description": "Command patterns refused."},
        "timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "Seconds before the call is killed.",
        },
        "max_output_bytes": {"type": "integer", "minimum": 256},
        "env": {"type": "object", "additionalProperties": {"type": "string"}},
        "base_dir": {"type": "string", "description": "Folder under the workspace the tool is confined to."},
    },
}


# ---------------------------------------------------------------- workflows


class InputSpec(Strict):
    description: str | None = Field(None, description="Shown in --help.")
    type: Literal["string", "integer", "number", "boolean"] = "string"
    required: bool | None = Field(None, description="Default: true unless a default is given.")
    default: Any = None
    choices: list[Any] | None = None


class AgentStep(Strict):
    agent: Name = Field(description="The agent this step runs.")
    task: str | None = Field(None, description="Jinja2: the first user message (default: the workflow task).")
    workdir: str | None = Field(
        None,
        description="Jinja2: working folder under the workspace, "
        "e.g. execution_outputs/iteration_{{ iteration }}.",
    )


class LoopBody(Strict):
    steps: list[Step] = Field(min_length=1)
    until: str | None = Field(
        None,
        description="Jinja2 expression checked after each iteration, e.g. "
        "\"workspace.json('eval.json').success_rate >= 0.9\"; workspace.read/json/exists read files.",
    )
    max_iterations: int = Field(ge=1, le=1000)


class LoopStep(Strict):
    loop: LoopBody


Step = AgentStep | LoopStep
LoopBody.model_rebuild()


class WorkspaceSpec(Strict):
    files: dict[str, str] | None = Field(
        None, description="Seed files: workspace path -> Jinja2 content over the inputs."
    )
    copy_paths: list[str] | None = Field(
        None, alias="copy", description="Files or folders next to the workflow copied into the workspace."
    )


class Limits(Strict):
    max_total_tokens: int | None = Field(None, ge=1)
    max_cost_usd: float | None = Field(None, gt=0)
    max_wall_time_s: float | None = Field(None, gt=0)
    max_total_steps: int | None = Field(None, ge=1)
    max_depth: int | None = Field(None, ge=1, le=10, description="Nesting of agents as tools (default 3).")
    max_concurrency: int | None = Field(
        None, ge=1, description="Tool calls run at once per step (default 8)."
    )


class WorkflowManifest(Strict):
    """A runnable workflow: `flowrun FILE.yaml --input value`."""

    version: Literal[1] = Field(description="Manifest format version.")
    kind: Literal["workflow"]
    name: Name
    description: str | None = None
    inputs: dict[Name, InputSpec] | None = Field(None, description="Each becomes a CLI option (--name).")
    models: dict[Name, ModelSpec] | None = Field(None, description="Named models for this workflow's agents.")
    default_model: str | None = Field(None, description="The model agents use when they name none.")
    entry: Name | None = Field(None, description="The agent that runs (or use `steps`).")
    task: str | None = Field(None, description="Jinja2: the first user message to the entry agent.")
    steps: list[Step] | None = Field(None, description="A sequence of agent steps and loops.")
    workspace: WorkspaceSpec | None = None
    output: str | None = Field(None, description="The declared output file in the workspace, e.g. report.md.")
    limits: Limits | None = None

    @model_validator(mode="after")
    def _entry_or_steps(self) -> WorkflowManifest:
        if (self.entry is None) == (self.steps is None):
            raise ValueError("a workflow needs exactly one of `entry` or `steps`")
        return self


# ---------------------------------------------------------------- scripted provider


class ScriptedCall(Strict):
    name: str
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class ScriptedReply(Strict):
    text: str = ""
    tool_calls: list[ScriptedCall] = Field(default_factory=list)


class ScriptManifest(Strict):
    """Responses for the `scripted` provider: per agent, the reply for each of its model calls."""

    version: Literal[1] = Field(description="Manifest format version.")
    kind: Literal["script"]
    agents: dict[str, list[ScriptedReply]]


KINDS: dict[str, type[Strict]] = {
    "workflow": WorkflowManifest,
    "agent": AgentManifest,
    "tool": ToolManifest,
    "models": ModelsManifest,
    "script": ScriptManifest,
}
