"""Provider-neutral types every layer speaks: messages, tool calls and results, usage.

Plain dataclasses (not pydantic) so importing them costs nothing at start-up.
"""

from __future__ import annotations

import copy
import json
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]
Status = Literal["success", "partial", "error"]
# what a tool declares it does with the path it is given (tool manifests' `files:`, @tool(files=))
FileUse = Literal["read", "write", "change"]
# what a replay does with a recorded call of the tool (`replay:`): run it again, or use the record
ReplayUse = Literal["run", "recorded"]
# what a dry run does with a call of the tool: run it, or answer it from the tool's schemas
# without running it (it may change something outside the run folder)
DryRunUse = Literal["run", "simulate"]

_ATOMS = (str, int, float, bool, type(None))
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def as_plain(value: object) -> Any:
    """`dataclasses.asdict` with the same result, made for the hot path (every event written):
    asdict deep-copies each leaf value, and copying a str, a number or None gives the same
    object back anyway, so those are taken as they are."""
    if isinstance(value, _ATOMS):
        return value
    if is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        names = _FIELD_NAMES.get(cls)
        if names is None:
            names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(value))
        return {name: as_plain(getattr(value, name)) for name in names}
    if isinstance(value, list):
        return [as_plain(v) for v in value]
    if isinstance(value, dict):
        return type(value)((as_plain(k), as_plain(v)) for k, v in value.items())
    if isinstance(value, tuple):
        items = [as_plain(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    return copy.deepcopy(value)


@dataclass(slots=True)
class ToolCall:
    """One tool call a model asked for. `arguments` is the decoded JSON object; when the
    model sent something that is not a JSON object, `arguments` is {} and `raw_arguments`
    keeps the text so the runtime can answer with an INVALID_PARAM error result."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None
    parse_error: str | None = None


@dataclass(slots=True)
class ToolError:
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class Finish:
    """Loop control: end the calling agent with `result` as its answer (finish, all_finished)."""

    result: str
    action: Literal["finish"] = "finish"


@dataclass(frozen=True, slots=True)
class ResetContext:
    """Loop control: restart the agent's history from its opening message (update_dashboard)."""

    action: Literal["reset_context"] = "reset_context"


Control = Finish | ResetContext


def control_from_dict(raw: object) -> Control | None:
    if not isinstance(raw, dict):
        return None
    if raw.get("action") == "finish":
        return Finish(str(raw.get("result", "")))
    if raw.get("action") == "reset_context":
        return ResetContext()
    return None


@dataclass(slots=True)
class ToolResult:
    """The one result shape of every tool (see DESIGN.md, the tool result protocol).
    `control` is set only by tools that steer the agent loop itself; the runtime acts on it
    once every call of the step has returned."""

    status: Status
    text: str
    data: dict[str, Any] = field(default_factory=dict)
    error: ToolError | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)
    control: Control | None = None

    @classmethod
    def ok(cls, text: str, **data: object) -> ToolResult:
        return cls(status="success", text=text, data=data)

    @classmethod
    def partial(cls, text: str, **data: object) -> ToolResult:
        return cls(status="partial", text=text, data=data)

    @classmethod
    def fail(cls, code: str, message: str, **data: object) -> ToolResult:
        return cls(status="error", text=message, data=data, error=ToolError(code, message))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, object] = as_plain(self)
        if self.control is None:
            del out["control"]
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ToolResult:
        """A result as recorded in events.jsonl. Logs written before loop control became a
        field carried it as `data["control"]`; both forms are read."""
        error = raw.get("error")
        data = dict(raw.get("data") or {})
        control = control_from_dict(raw.get("control")) or control_from_dict(data.pop("control", None))
        return cls(
            status=raw["status"],
            text=raw.get("text", ""),
            data=data,
            error=ToolError(**error) if error else None,
            stats=raw.get("stats") or {},
            context=raw.get("context") or {},
            control=control,
        )

    def model_text(self) -> str:
        """What the model reads: the text, with the status made explicit when it is not
        a plain success so the model knows to correct itself or ask for more."""
        if self.status == "error" and self.error is not None:
            return f"[error {self.error.code}] {self.text}"
        if self.status == "partial":
            return f"[partial] {self.text}"
        return self.text


@dataclass(slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens


@dataclass(slots=True)
class Message:
    """One turn of a conversation. `tool_calls` on assistant turns; `tool_call_id` on tool
    turns. `thinking` keeps provider reasoning blocks verbatim (Anthropic requires them to be
    sent back unchanged with the tool results that follow them)."""

    role: Role
    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    thinking: list[dict[str, Any]] = field(default_factory=list)
    is_error: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, object] = as_plain(self)
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Message:
        calls = [ToolCall(**c) for c in raw.get("tool_calls", [])]
        return cls(**{**raw, "tool_calls": calls})


@dataclass(slots=True)
class ToolSpec:
    """A tool as offered to a model: name, description and the JSON Schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(slots=True)
class ModelResponse:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None
    thinking: list[dict[str, Any]] = field(default_factory=list)
    model: str = ""
    # the answer as the model wrote it, when a provider read `text` and the calls out of it (a
    # ReAct answer's Thought: and Action: lines); None when it is `text`
    raw_text: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, object] = as_plain(self)
        if self.raw_text is None:
            del out["raw_text"]  # (the lines of every other answer stay as they were)
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ModelResponse:
        return cls(
            text=raw.get("text", ""),
            tool_calls=[ToolCall(**c) for c in raw.get("tool_calls", [])],
            usage=Usage(**raw.get("usage", {})),
            stop_reason=raw.get("stop_reason"),
            thinking=raw.get("thinking", []),
            model=raw.get("model", ""),
            raw_text=raw.get("raw_text"),
        )


MAX_JSON_DEPTH = 64  # arrays and objects in one another; deeper breaks the stack of the code after
TOO_DEEP = f"arguments are nested more than {MAX_JSON_DEPTH} levels deep (arrays and objects)"
_CONSTANTS = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def parse_arguments(raw: str | dict[str, Any] | None) -> tuple[dict[str, Any], str | None]:
    """Decode a model's tool arguments. Returns (arguments, error); never raises."""
    if isinstance(raw, dict):
        value: object = raw
    elif raw is None or raw.strip() == "":
        return {}, None
    else:
        try:
            value = json.loads(raw, parse_constant=_no_constant)
        except json.JSONDecodeError as e:
            return {}, f"arguments are not valid JSON ({e.msg} at char {e.pos})"
        except RecursionError:
            return {}, TOO_DEEP
        except ValueError as e:  # NaN or Infinity (_no_constant), a number of thousands of digits
            return {}, f"arguments are not valid JSON ({unreadable_number(e)})"
    if not isinstance(value, dict):
        return {}, f"arguments must be a JSON object, got {type(value).__name__}"
    if problem := _not_json(value):
        return {}, problem
    return value, None


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON value")


def _not_json(value: object) -> str | None:
    """Why `value` (decoded by an SDK: Anthropic's `input`) is no JSON a tool may take: nested past
    MAX_JSON_DEPTH, or holding NaN or an infinity; walked without recursion."""
    for item, depth in _walk(value):
        if isinstance(item, float) and not math.isfinite(item):
            return "arguments are not valid JSON (" + _CONSTANTS[repr(item)] + " is not a JSON value)"
        if depth > MAX_JSON_DEPTH and isinstance(item, dict | list):
            return TOO_DEEP
    return None


def _walk(value: object) -> Iterator[tuple[object, int]]:
    """Every value in `value` and how deep it sits (1: `value`), without recursion; arrays and
    objects (lists, tuples, dicts) below MAX_JSON_DEPTH + 1 are not opened, so a value that
    holds itself ends too."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        yield item, depth
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list | tuple) else ()
        if depth <= MAX_JSON_DEPTH:
            stack.extend((child, depth + 1) for child in children)


def decode_json(text: str) -> Any:
    """json.loads for JSON a model or an agent wrote: a JSONDecodeError, too, for arrays and objects
    nested more than MAX_JSON_DEPTH levels (the code that walks a value recurses: deeper, it would
    break the stack)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise json.JSONDecodeError(f"nested more than {MAX_JSON_DEPTH} levels deep", text, 0) from None
    except ValueError as e:  # an integer of more digits than Python converts
        raise json.JSONDecodeError(unreadable_number(e), text, 0) from None
    require_shallow(value, text)
    return value


def unreadable_number(e: ValueError) -> str:
    """What a ValueError of json.loads (not a JSONDecodeError) says, in a model's terms."""
    if "integer string conversion" in str(e):
        return f"a number has more than {sys.get_int_max_str_digits()} digits"
    return str(e)


def nested_too_deep(value: object) -> bool:
    """Whether `value` nests arrays and objects (lists, tuples, dicts) more than MAX_JSON_DEPTH
    levels, or holds itself; walked without recursion."""
    return any(
        depth > MAX_JSON_DEPTH and isinstance(item, dict | list | tuple) for item, depth in _walk(value)
    )


def require_shallow(value: object, text: str = "") -> None:
    """JSONDecodeError when `value` nests arrays and objects more than MAX_JSON_DEPTH levels."""
    if nested_too_deep(value):
        raise json.JSONDecodeError(f"nested more than {MAX_JSON_DEPTH} levels deep", text, 0)
