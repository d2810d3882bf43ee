"""ReAct text mode for models or proxies without native tool calling: tools are described in the
system prompt, and Thought / Action / Action Input / Observation are parsed from plain text.

It wraps any provider, so the agent loop is unchanged: the loop's history keeps the parsed tool
calls and results, and this module turns them into text turns on the way out."""

from __future__ import annotations

import json
import re
from typing import Any

from flowrun.providers.base import ModelConfig, ModelRequest, Provider, call_index
from flowrun.providers.structured import output_instructions, with_instructions
from flowrun.types import Message, ModelResponse, ToolCall, ToolSpec

ACTION = re.compile(r"^\s*Action\s*:\s*(.+?)\s*$", re.MULTILINE | re.IGNORECASE)
ACTION_INPUT = re.compile(r"^\s*Action\s*Input\s*:\s*", re.MULTILINE | re.IGNORECASE)
FINAL = re.compile(r"^\s*Final\s*Answer\s*:\s*", re.MULTILINE | re.IGNORECASE)
OBSERVATION = re.compile(r"^\s*Observation\s*:", re.MULTILINE | re.IGNORECASE)

PROTOCOL = """\
## Tools
You have no native tool calling. To use a tool, answer in exactly this format and then stop:

Thought: what you will do and why
Action: the tool name
Action Input: the arguments as one JSON object (it may span several lines)

The result comes back as a message starting with "Observation:". Use one tool per answer.
When you are done, answer:

Thought: why you are done
Final Answer: your answer

Available tools:
"""


def describe_tools(tools: list[ToolSpec]) -> str:
    lines = []
    for tool in tools:
        schema = json.dumps(tool.parameters, ensure_ascii=False, separators=(",", ":"))
        lines.append(f"- {tool.name}: {tool.description}\n  arguments (JSON Schema): {schema}")
    return PROTOCOL + "\n".join(lines)


def to_text_messages(messages: list[Message]) -> list[Message]:
    """Native-style history → plain user/assistant text turns."""
    out: list[Message] = []
    for message in messages:
        if message.role == "tool":
            text = f"Observation: {message.content}"
            if out and out[-1].role == "user":
                out[-1] = Message("user", out[-1].content + "\n\n" + text)
            else:
                out.append(Message("user", text))
        elif message.role == "assistant":
            out.append(Message("assistant", message.content or "(no answer)"))
        else:
            out.append(Message(message.role, message.content))
    return out


def _json_object(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """The first JSON object in `text` (tolerates code fences and trailing prose)."""
    text = text.strip()
    fence = re.match(r"^```(?:json)?\s*(.*?)```", text, re.DOTALL)
    if fence:
        text = fence.group(1).strip()
    start = text.find("{")
    if start < 0:
        return None, "no JSON object found"
    decoder = json.JSONDecoder()
    try:
        value, _ = decoder.raw_decode(text[start:])
    except json.JSONDecodeError as e:
        return None, f"Action Input is not valid JSON ({e.msg})"
    if not isinstance(value, dict):
        return None, "Action Input must be a JSON object"
    return value, None


def parse_react(text: str, tools: list[ToolSpec], call_id: str) -> tuple[str, list[ToolCall]]:
    """(answer text, tool calls) from one ReAct answer. Without an Action it is a final answer."""
    observed = OBSERVATION.search(text)
    if observed:  # the model invented an observation: everything after it is not real
        text = text[: observed.start()]
    action = ACTION.search(text)
    final = FINAL.search(text)
    if action is None or (final is not None and final.start() < action.start()):
        answer = text[final.end() :] if final else text
        return answer.strip(), []
    name = action.group(1).strip().strip("`")
    after = text[action.end() :]
    found = ACTION_INPUT.search(after)
    raw = after[found.end() :].strip() if found else ""
    arguments, error = _json_object(raw) if raw else ({}, None)
    if arguments is None and not raw.lstrip("`").lstrip().startswith("{"):
        arguments, error = _single_string_argument(name, raw, tools, error)
    call = ToolCall(
        id=call_id,
        name=name,
        arguments=arguments or {},
        raw_arguments=raw if error else None,
        parse_error=error,
    )
    return text.strip(), [call]


def _single_string_argument(
    name: str, raw: str, tools: list[ToolSpec], error: str | None
) -> tuple[dict[str, Any] | None, str | None]:
    """`Action Input: some text` for a tool with one required string argument."""
    tool = next((t for t in tools if t.name == name), None)
    required = tool.parameters.get("required", []) if tool else []
    props = tool.parameters.get("properties", {}) if tool else {}
    if len(required) == 1 and props.get(required[0], {}).get("type") == "string":
        return {required[0]: raw}, None
    return None, error


def system_as_sent(
    system: str, tools: list[ToolSpec], output_schema: dict[str, object] | None, config: ModelConfig
) -> str:
    """The system prompt as the model gets it: with an output schema described in it where the
    model takes no native format (`structured_output: instructions`, and every ReAct model),
    and the ReAct tool block where tools are text (`tool_calling: react`). What an agent was
    told (`flowrun show --prompts`, prompts/AGENT.md) is this."""
    react = config.tool_calling == "react"
    if output_schema is not None and (react or config.structured_output != "native"):
        system = f"{system}\n\n{output_instructions(output_schema)}".strip()
    if react and tools:
        system = f"{system}\n\n{describe_tools(tools)}"
    return system


class ReactProvider(Provider):
    """Wraps a provider so its model sees tools as text and answers in the ReAct format."""

    def __init__(self, inner: Provider) -> None:
        super().__init__(inner.config)
        self.inner = inner

    async def complete(self, request: ModelRequest) -> ModelResponse:
        request = with_instructions(request)  # no native format in the text protocol
        system = request.system
        if request.tools:
            system = f"{system}\n\n{describe_tools(request.tools)}"
        text_request = ModelRequest(
            agent=request.agent,
            system=system,
            messages=to_text_messages(request.messages),
            tools=[],
            agent_id=request.agent_id,
            hints=request.hints,
            step=request.step,
        )
        response = await self.inner.complete(text_request)
        answer, calls = parse_react(response.text, request.tools, f"react_{call_index(request)}")
        response.tool_calls = calls
        # the history keeps the answer up to the action (an invented "Observation:" is dropped);
        # the log keeps what the model wrote (its Thought: before a Final Answer: too)
        if answer != response.text:
            response.raw_text = response.text
        response.text = answer
        return response

    async def ready(self, agent: str) -> None:
        await self.inner.ready(agent)

    async def aclose(self) -> None:
        await self.inner.aclose()
