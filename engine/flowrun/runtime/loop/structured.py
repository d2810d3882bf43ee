"""Final answers of agents with an `output_schema`: parsed (a bare JSON value, or one inside a
code fence or some prose), validated against the schema, and when they do not match, a repair
turn that tells the agent what is wrong; after the agent's `output_repairs`, a clear failure."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flowrun.atomic_files import replace_beneath
from flowrun.errors import OutputInvalid
from flowrun.events import OutputInvalidEvent
from flowrun.runtime.loop.contracts import AgentInstance, LoopServices, Outcome
from flowrun.types import MAX_JSON_DEPTH, Message, decode_json, require_shallow, unreadable_number

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)
MAX_PROBLEMS = 5


def parse_answer(text: str) -> tuple[Any, str | None]:
    """(value, None), or (None, why it is not JSON)."""
    stripped = text.strip()
    if not stripped:
        return None, "the answer is empty"
    fenced = FENCE.search(stripped)
    candidates = [stripped] + ([fenced.group(1).strip()] if fenced else [])
    for candidate in candidates:
        try:
            return decode_json(candidate), None
        except json.JSONDecodeError:
            pass
    start = min((i for i in (stripped.find("{"), stripped.find("[")) if i >= 0), default=-1)
    if start >= 0:
        try:
            value, _ = json.JSONDecoder().raw_decode(stripped[start:])
            require_shallow(value)
            return value, None
        except json.JSONDecodeError as e:
            return None, f"the answer is not valid JSON ({e.msg} at char {start + e.pos})"
        except RecursionError:
            return None, f"the answer is not valid JSON (nested more than {MAX_JSON_DEPTH} levels deep)"
        except ValueError as e:  # an integer of more digits than Python converts
            return None, f"the answer is not valid JSON ({unreadable_number(e)})"
    return None, f"the answer holds no JSON value (it reads: {_quoted(stripped)})"


def _quoted(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


@lru_cache(maxsize=64)
def _validator(schema_text: str) -> Validator:
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    schema = json.loads(schema_text)
    return validator_for(schema, default=Draft202012Validator)(schema)  # its `$schema` draft


def schema_problems(schema: Mapping[str, object], value: Any) -> str | None:
    validator = _validator(json.dumps(schema, sort_keys=True))
    problems = []
    for error in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        problems.append(f"{where}: {error.message}")
    if not problems:
        return None
    more = f" (and {len(problems) - MAX_PROBLEMS} more)" if len(problems) > MAX_PROBLEMS else ""
    return "; ".join(problems[:MAX_PROBLEMS]) + more


def check_answer(schema: Mapping[str, object], text: str) -> tuple[Any, str | None]:
    value, problem = parse_answer(text)
    if problem is None:
        problem = schema_problems(schema, value)
    return (value, None) if problem is None else (None, problem)


def repair_message(problem: str) -> str:
    return (
        f"Your final answer does not match the required JSON Schema: {problem}. "
        "Answer again with only the corrected JSON value."
    )


def accept_final(services: LoopServices, inst: AgentInstance, outcome: Outcome, repairs: int) -> bool:
    """True when the outcome's answer matches the agent's schema (its parsed value goes to
    `outcome.data`, its compact JSON to `outcome.text`); False after asking for a repair;
    OutputInvalid when no repair turn is left."""
    if inst.output_schema is None:
        return True
    value, problem = check_answer(inst.output_schema, outcome.text)
    if problem is None:
        outcome.data = value
        outcome.text = json.dumps(value, ensure_ascii=False)
        return True
    left = inst.spec.output_repairs - repairs
    services.emit(
        OutputInvalidEvent(
            agent=inst.name, agent_id=inst.id, step=inst.model_calls, problem=problem, repairs_left=left
        )
    )
    if left <= 0:
        raise OutputInvalid(
            f"agent '{inst.name}': its final answer does not match its output_schema "
            f"{_after(repairs)}: {problem}",
            "say in the prompt what to answer, raise `output_repairs`, or use a model with structured output",
        )
    inst.messages.append(Message("user", repair_message(problem)))
    return False


def _after(repairs: int) -> str:
    if not repairs:
        return "(no repair turns)"
    return f"after {repairs} repair turn{'s' if repairs != 1 else ''}"


def write_json_output(workspace: Path, output: str | None, outcome: Outcome) -> None:
    """A workflow whose `output` is a .json file gets the last agent's parsed answer there."""
    if not output or not output.endswith(".json") or outcome.data is None:
        return
    path = (workspace / output).resolve()
    if path.is_relative_to(workspace):
        replace_beneath(workspace, path, outcome.answer())
