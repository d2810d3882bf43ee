"""What mapping an ADK tree builds up (inputs, models, MCP servers, agent drafts, where each
`output_key` is kept), and the parts of an LlmAgent that need no other agent: the system prompt
as ADK builds it (the root's global_instruction, the instruction with its state placeholders
filled in, "You are an agent. Your internal name is ...") and the model (a Gemini id on the
`gemini` preset, LiteLLM names as CrewAI's, `generate_content_config` as its settings)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from flowrun.manifest.foreign import llm, placeholders
from flowrun.manifest.foreign.adk.tree import LLM, Node, Tree
from flowrun.manifest.foreign.conversion import Conversion, Doc, flowrun_name
from flowrun.manifest.foreign.keys import KeyTable
from flowrun.manifest.yaml_source import PathKey, Source

DEFAULT_MODEL = "adk-default"
ADK_DEFAULT = {"preset": "gemini", "model": "gemini-2.5-flash"}  # LlmAgent's default model
STATE_DIR = "state"  # `output_key` values: state/KEY.md in the run folder
# generate_content_config keys a flowrun model takes, and those sent as extra body fields
CONTENT_KEYS = {"temperature": "temperature", "max_output_tokens": "max_tokens"}
EXTRA_BODY = ("top_p", "top_k", "seed", "presence_penalty", "frequency_penalty")
PYTHON = "Python callbacks are not run"

AGENT_KEYS = KeyTable(
    "an ADK agent",
    used=(
        "agent_class",
        "name",
        "description",
        "model",
        "instruction",
        "global_instruction",
        "tools",
        "sub_agents",
        "output_key",
        "include_contents",
        "generate_content_config",
        "max_iterations",
    ),
    dropped={
        "before_agent_callbacks": PYTHON,
        "after_agent_callbacks": PYTHON,
        "before_model_callbacks": PYTHON,
        "after_model_callbacks": PYTHON,
        "before_tool_callbacks": PYTHON,
        "after_tool_callbacks": PYTHON,
        "model_code": "a model built in Python; the agent uses the default model",
        "input_schema": "the schema is a Python class; the agent takes text",
        "output_schema": "the schema is a Python class; give the agent an `output_schema` after import",
        "static_instruction": "static content is not sent; put it in `instruction`",
        "disallow_transfer_to_parent": "a sub-agent answers its parent as a tool call does",
        "disallow_transfer_to_peers": "sub-agents are offered to their parent only",
        "accumulate_output_key": "the final answer is the state value",
        "planner": "no planning step runs",
        "code_executor": "give the agent execute_shell",
    },
)


@dataclass
class Draft:
    data: Doc
    src: Source
    where: dict[PathKey, PathKey] = field(default_factory=dict)


@dataclass
class Build:
    tree: Tree
    root: Node
    inputs: dict[str, Doc] = field(default_factory=dict)
    models: dict[str, Doc] = field(default_factory=lambda: {DEFAULT_MODEL: dict(ADK_DEFAULT)})
    agents: dict[str, Draft] = field(default_factory=dict)
    servers: dict[str, Doc] = field(default_factory=dict)  # the workflow's mcp_servers
    state: dict[str, str] = field(default_factory=dict)  # output_key -> the file that holds it
    loops: dict[str, str] = field(default_factory=dict)  # agent -> the marker of the loop it is in

    @property
    def conv(self) -> Conversion:
        return self.tree.conv


def state_path(key: str) -> str:
    return f"{STATE_DIR}/{flowrun_name(key)}.md"


def collect_state(build: Build) -> None:
    """Every `output_key` of the tree: where later instructions read it."""
    for node in build.tree.nodes.values():
        key = node.value("output_key")
        if isinstance(key, str) and key.strip():
            build.state[key] = state_path(key)


def instruction(build: Build, node: Node, text: str) -> str:
    """An instruction with ADK's state placeholders as templates: a key some agent's
    `output_key` sets is read from its file, any other becomes an input (`{key?}`: optional)."""

    def render(found: re.Match[str]) -> str | None:
        name, optional = found.group(1), bool(found.group(2))
        key = name.split(":", 1)[-1]  # app:, user:, temp: scopes are one session state here
        if key in build.state:
            return f"{{{{ workspace.read({build.state[key]!r}) }}}}"
        if key not in build.inputs:
            build.inputs[key] = {"description": f"The session state `{key}` the instructions read."}
            if optional:
                build.inputs[key] |= {"required": False, "default": ""}
        return placeholders.variable(key)

    return placeholders.template(text, placeholders.ADK, render)


def prompt_of(build: Build, node: Node, text: str) -> str:
    parts: list[str] = []
    root = build.root
    global_text = root.value("global_instruction") if root.cls == LLM else None
    if isinstance(global_text, str) and global_text.strip():
        parts.append(instruction(build, node, global_text.strip()))
    parts.append(instruction(build, node, text.strip()))
    identity = f'You are an agent. Your internal name is "{node.name}".'
    description = node.value("description")
    parts.append(placeholders.literal(identity))
    if isinstance(description, str) and description.strip():
        parts.append(placeholders.literal(f' The description about you is "{description.strip()}"'))
    return "\n\n".join(p for p in parts if p)


def model_of(build: Build, node: Node) -> str | None:
    """The agent's model: its own, else its nearest LlmAgent ancestor's (ADK inherits it),
    with `generate_content_config` as its settings."""
    owner = next((n for n in [node, *node.ancestors] if n.cls == LLM and n.value("model") is not None), None)
    config = node.value("generate_content_config")
    if owner is None:
        return _with_settings(build, node, dict(ADK_DEFAULT), config) if isinstance(config, Mapping) else None
    value = owner.value("model")
    pick = (
        llm.litellm(value)
        if isinstance(value, str)
        else llm.ModelPick(problem=f"`model` must be a model name, not {value!r}")
    )
    if not pick.usable:
        build.conv.note(owner.src, ("model",), f"the default model: {pick.problem}", "approximated")
        message = f"{node.name}: {pick.problem}; it uses the default model ({ADK_DEFAULT['model']})"
        build.conv.problem(
            owner.src,
            ("model",),
            message,
            "a Gemini id (gemini-2.5-flash) or provider/model",
            "unknown-model",
            severity="warning",
        )
        return None
    if owner is node:
        build.conv.note(node.src, ("model",), pick.describe())
    if not isinstance(config, Mapping):
        return pick.ref if pick.spec is None else _named(build, node, pick.spec)
    spec = pick.spec or llm.settings({"model": str(value)}).spec or {}
    return _with_settings(build, node, dict(spec), config)


def _with_settings(build: Build, node: Node, spec: Doc, config: Mapping[str, object]) -> str:
    """`generate_content_config` over a model's settings: temperature and max_output_tokens as
    flowrun's keys, sampling settings as extra body fields, safety settings dropped."""
    extra: dict[str, object] = {}
    for key, value in config.items():
        where = ("generate_content_config", key)
        if key in CONTENT_KEYS:
            spec[CONTENT_KEYS[key]] = value
            build.conv.note(node.src, where, f"the model's {CONTENT_KEYS[key]}")
        elif key in EXTRA_BODY:
            extra[key] = value
            build.conv.note(
                node.src, where, f"sent as `{key}` in the request body (extra_body)", "approximated"
            )
        else:
            build.conv.note(node.src, where, "not used: flowrun does not send it", "dropped")
            message = f"generate_content_config.{key} is not sent to the model"
            build.conv.problem(node.src, where, message, "", "ignored-key", severity="warning", key=True)
    if extra:
        spec["extra_body"] = extra
    return _named(build, node, spec)


def _named(build: Build, node: Node, spec: Doc) -> str:
    name = flowrun_name(f"{node.name}-model")
    build.models[name] = spec
    return name


def output_path(node: Node) -> str:
    """The file an LlmAgent step writes its answer to: its `output_key`'s state file, else its own."""
    key = node.value("output_key")
    return state_path(key) if isinstance(key, str) and key.strip() else f"adk/{node.name}.md"
