"""The `test` provider (used by --dry-run): no network. On its k-th call an agent gets a call of
its k-th tool (in the order the tool manifests' `dry_run_order` gives: makers first, deleters
late, finishers last, tools that need a person never) with arguments valid for that tool:
derived from the tool's JSON Schema, filled in from the runtime's hints (a file it may write, a
page to visit, a query) and the tool manifest's `dry_run` arguments, and, for a handle such as
`stream_id` or `bash_id`, taken from an earlier result that names it
(`continue_stream_read(stream_id='ab12')`). A tool whose arguments cannot be made (no handle
yet, no folder it may create) is left out. After the last tool it answers with plain text.
Answers depend only on the request, so a resumed run gets the same."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from flowrun.plain_schema import Check, plain_check
from flowrun.providers.base import ModelRequest, Provider, call_index
from flowrun.providers.schema_samples import Unavailable, sample_object, sample_value
from flowrun.types import Message, ModelResponse, ToolCall, ToolSpec, Usage

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

# where a tool's `dry_run_order` puts it among the middle ones ("last" and "never" are apart)
RANK = {"first": 0, "late": 2}
PLACEHOLDER = re.compile(r"\{(path|dir|text)\}")


def _filled(value: object, hints: Mapping[str, object]) -> object:
    """A manifest's `dry_run` value with {path}, {dir} and {text} filled in."""
    if isinstance(value, list):
        return [_filled(v, hints) for v in value]
    if not isinstance(value, str):
        return value

    def one(match: re.Match[str]) -> str:
        found = hints.get(match.group(1))
        if found is None:
            raise Unavailable(match.group(1))
        return str(found)

    return PLACEHOLDER.sub(one, value)


def arguments(tool: ToolSpec, hints: dict[str, Any]) -> dict[str, object]:
    """Valid arguments for one tool (Unavailable when they cannot be made). Made ones are
    checked against the tool's schema; a manifest's own `dry_run` arguments are used as given."""
    hints = {**hints, "tool": tool.name, "path": (hints.get("paths") or {}).get(tool.name)}
    args = sample_object(tool.parameters, hints)
    declared = tool.parameters.get("properties") or {}
    given = (hints.get("dry_run") or {}).get(tool.name) or {}
    for name, value in given.items():
        if name in declared:
            args[name] = _filled(value, hints)
    if not given and not _valid(tool.parameters, args):
        raise Unavailable(tool.name)
    return args


_VALIDATORS: dict[str, Validator] = {}
_CHECKS: dict[str, Check] = {}


def _valid(schema: Mapping[str, object], value: Any) -> bool:
    key = json.dumps(schema, sort_keys=True, default=str)
    if key not in _CHECKS:
        _CHECKS[key] = plain_check(schema)
    if _CHECKS[key](value):
        return True  # decided without importing jsonschema (plain_schema.py)
    from jsonschema import Draft202012Validator

    if key not in _VALIDATORS:
        _VALIDATORS[key] = Draft202012Validator(schema)
    return bool(_VALIDATORS[key].is_valid(value))


def handles(messages: list[Message]) -> dict[str, str]:
    """Handles earlier tool results named (`stream_id='ab12'`, `bash_id='bash_1'`), latest last."""
    found: dict[str, str] = {}
    for message in messages:
        if message.role == "tool" and not message.is_error:
            for name, value in re.findall(r"\b(\w+_id)=['\"]([^'\"]+)['\"]", message.content):
                found[name] = value
    return found


def plan(tools: list[ToolSpec], order: dict[str, str]) -> list[ToolSpec]:
    """Makers first (so later calls find a file and a folder), a deleter late, finishers last,
    a tool that needs a person never: as each manifest's `dry_run_order` says."""
    middle = [t for t in tools if order.get(t.name) not in ("last", "never")]
    middle.sort(key=lambda t: RANK.get(order.get(t.name, ""), 1))
    return middle + [t for t in tools if order.get(t.name) == "last"]


def callable_plan(
    tools: list[ToolSpec], hints: dict[str, Any]
) -> tuple[list[tuple[ToolSpec, dict[str, Any]]], list[str]]:
    """(each tool that can be called now with its arguments, the names of those that cannot)."""
    out, left_out = [], []
    for tool in plan(tools, hints.get("order") or {}):
        try:
            out.append((tool, arguments(tool, hints)))
        except Unavailable:
            left_out.append(tool.name)
    return out, left_out


class TestProvider(Provider):
    """Offline answers made from the agent's tools and the workflow's hints (`--dry-run`)."""

    needs_key = False  # offline: the dry run's answers

    async def complete(self, request: ModelRequest) -> ModelResponse:
        step = call_index(request)
        hints = {**request.hints, "agent": request.agent, "handles": handles(request.messages)}
        order, left_out = callable_plan(request.tools, hints)
        usage = Usage(input_tokens=len(request.system) // 4 + 10 * len(request.messages), output_tokens=20)
        if step < len(order):
            tool, args = order[step]
            if "result" in args and (hints.get("order") or {}).get(tool.name) == "last":
                args["result"] = self._final_text(request, f"dry run of {request.agent} finished")
            call = ToolCall(id=f"dry_{request.agent}_{step}", name=tool.name, arguments=args)
            return ModelResponse(
                text="", tool_calls=[call], usage=usage, stop_reason="tool_use", model="test"
            )
        summary = f"Dry run of {request.agent}: called {len(order)} tool(s); wiring checked."
        if left_out:
            summary += (
                f" Left out (no valid arguments could be made for them): {', '.join(left_out)}; "
                "give their manifests `dry_run:` arguments."
            )
        text = self._final_text(request, summary)
        return ModelResponse(text=text, usage=usage, stop_reason="end_turn", model="test")

    def _final_text(self, request: ModelRequest, text: str) -> str:
        """The answer, or with an `output_schema` a JSON value valid against it."""
        if request.output_schema is None:
            return text
        hints = {**request.hints, "agent": request.agent}
        return json.dumps(sample_value("answer", request.output_schema, hints), ensure_ascii=False)
