"""The `direct` provider: no model. An agent's first call calls its one tool with the JSON object
its task gives as the arguments; its second answers with that tool's result, as it is (unframed
when it is an MCP server's or another outside text, see flowrun/foreign_text.py; an object
of the one property of the agent's output schema when the result is not such an object). An
agent without tools answers with its task. A step that runs one tool without a model (an Agent
Spec ApiNode or ToolNode), or that writes what it was given (a FlowNode's outputs), is an agent
of this provider."""

from __future__ import annotations

import json

from flowrun.errors import ProviderError
from flowrun.foreign_text import inner
from flowrun.providers.base import ModelRequest, Provider, call_index
from flowrun.types import ModelResponse, ToolCall, Usage


class DirectProvider(Provider):
    """No model: calls the agent's one tool with the JSON object its task gives, then answers
    with the tool's result (no tools: answers with its task). Agent Spec's ApiNode, ToolNode and
    FlowNode outputs run on it."""

    needs_key = False

    async def complete(self, request: ModelRequest) -> ModelResponse:
        task = next((m.content for m in request.messages if m.role == "user"), "")
        if not request.tools:
            return _answer(task)
        if call_index(request) > 0:
            # no model reads the result: a server's text framed as data for models is unframed
            results = [inner(m.content) for m in request.messages if m.role == "tool"]
            return _answer(_shaped(results[-1] if results else "", request.output_schema))
        try:
            arguments = json.loads(task or "{}")
        except json.JSONDecodeError as e:
            raise ProviderError(
                f"the task of agent '{request.agent}' is not the JSON of its tool's arguments: {e}",
                "a `direct` model's agent gets its tool's arguments as a JSON object",
                agent=request.agent,
                model=self.config.name,
            ) from e
        if not isinstance(arguments, dict):
            arguments = {}
        call = ToolCall(id=f"direct_{request.agent}_0", name=request.tools[0].name, arguments=arguments)
        return ModelResponse(text="", tool_calls=[call], usage=Usage(), model="direct")


def _answer(text: str) -> ModelResponse:
    return ModelResponse(text=text, tool_calls=[], usage=Usage(), model="direct")


def _shaped(result: str, schema: dict[str, object] | None) -> str:
    """`result` as an object of the schema's one property when it is not one already."""
    props = schema.get("properties") if schema else None
    if not isinstance(props, dict) or len(props) != 1:
        return result
    (name,) = props
    try:
        value: object = json.loads(result)
    except json.JSONDecodeError:
        value = result
    if isinstance(value, dict) and name in value:
        return result
    return json.dumps({name: value})
