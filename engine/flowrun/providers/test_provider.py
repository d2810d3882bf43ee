"""The `test` provider (used by --dry-run): no network. On its k-th call an agent gets a call of
its k-th tool with arguments generated from the tool's JSON Schema; after the last tool it
answers with plain text. Answers depend only on the request, so a resumed run gets the same."""

from __future__ import annotations

import json
from typing import Any

from flowrun.providers.base import ModelRequest, Provider, call_index
from flowrun.types import ModelResponse, ToolCall, ToolSpec, Usage

# tools that end an agent or ask a human: called last, or never
LAST = ("finish", "all_finished")
NEVER = ("ask_user",)


def sample_value(name: str, schema: dict[str, Any], hints: dict[str, Any]) -> Any:
    """A value valid for `schema`, chosen to be harmless and to show wiring."""
    if "enum" in schema:
        options = schema["enum"]
        preferred = [o for o in options if o in ("overwrite", "basic")]
        return preferred[0] if preferred else options[0]
    if "const" in schema:
        return schema["const"]
    if "default" in schema:
        return schema["default"]
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list) and options and isinstance(options[0], dict):
        return sample_value(name, options[0], hints)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if kind == "object" or (kind is None and "properties" in schema):
        return sample_object(schema, hints)
    if kind == "array":
        found = schema.get("items")
        items: dict[str, Any] = found if isinstance(found, dict) else {}
        return [sample_value(name, items, hints) for _ in range(int(schema.get("minItems", 0)))]
    if kind == "integer":
        return max(int(schema.get("minimum", 1)), 1)
    if kind == "number":
        return float(schema.get("minimum", 1))
    if kind == "boolean":
        return False
    text = sample_string(name, hints)
    return text.ljust(int(schema.get("minLength", 0)), ".")


def sample_string(name: str, hints: dict[str, Any]) -> str:
    agent = hints.get("agent", "agent")
    if name in ("path", "file_path", "filepath", "filename"):
        return str(hints.get("write_path") or f"dry-run/{agent}.md")
    if name in ("content", "new_content", "text", "result", "task", "description"):
        return f"dry run by {agent}: wiring checked"
    if name in ("query", "question"):
        return str(hints.get("query", "overview"))
    if name in ("command",):
        return "echo dry-run"
    if name in ("pattern",):
        return "*.md" if "glob" in hints.get("tool", "") else "dry"
    if name == "url":
        return str(hints.get("url", "https://example.invalid/"))
    return "dry-run"


def sample_object(schema: dict[str, Any], hints: dict[str, Any]) -> dict[str, Any]:
    props = schema.get("properties", {})
    return {
        name: sample_value(name, props[name], hints) for name in schema.get("required", []) if name in props
    }


def plan(tools: list[ToolSpec]) -> list[ToolSpec]:
    """Writers first (so later reads find something), finishers last, ask_user never."""
    middle = [t for t in tools if t.name not in LAST and t.name not in NEVER]
    middle.sort(key=lambda t: t.name != "write_file")
    return middle + [t for t in tools if t.name in LAST]


class TestProvider(Provider):
    async def complete(self, request: ModelRequest) -> ModelResponse:
        step = call_index(request)
        order = plan(request.tools)
        usage = Usage(input_tokens=len(request.system) // 4 + 10 * len(request.messages), output_tokens=20)
        if step < len(order):
            tool = order[step]
            hints = {**request.hints, "agent": request.agent, "tool": tool.name}
            if tool.name in LAST:
                args = {"result": self._final_text(request, f"dry run of {request.agent} finished")}
            else:
                args = sample_object(tool.parameters, hints)
            call = ToolCall(id=f"dry_{request.agent}_{step}", name=tool.name, arguments=args)
            return ModelResponse(
                text="", tool_calls=[call], usage=usage, stop_reason="tool_use", model="test"
            )
        text = self._final_text(
            request, f"Dry run of {request.agent}: called {len(order)} tool(s); wiring checked."
        )
        return ModelResponse(text=text, usage=usage, stop_reason="end_turn", model="test")

    def _final_text(self, request: ModelRequest, text: str) -> str:
        """The answer, or with an `output_schema` a JSON value valid against it."""
        if request.output_schema is None:
            return text
        hints = {**request.hints, "agent": request.agent}
        return json.dumps(sample_value("answer", request.output_schema, hints), ensure_ascii=False)
