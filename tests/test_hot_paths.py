"""The shortcuts taken on paths every event, tool call or batch item goes through give exactly
what the plain ways give (speed without a change of behaviour)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
from collections import namedtuple
from pathlib import Path

import pytest

from flowrun.batch.folder import ItemResult
from flowrun.runtime.loop.contracts import parameters_validator
from flowrun.runtime.loop.prompt_record import _pretty
from flowrun.runtime.models.usage import UsageLine
from flowrun.settle import settle
from flowrun.types import (
    Finish,
    Message,
    ModelResponse,
    ToolCall,
    ToolError,
    ToolResult,
    Usage,
    as_plain,
)

Pair = namedtuple("Pair", "left right")


@dataclasses.dataclass
class Odd:
    path: Path
    pair: Pair
    nested: dict[int, list[tuple[str, ...]]]
    items: list[Usage]


def test_as_plain_is_asdict() -> None:
    values = [
        ToolResult.ok("done", files=["a", "b"], size=3.5),
        ToolResult("error", "no", {"x": {"y": [1, None]}}, ToolError("NOT_FOUND", "no"), control=Finish("r")),
        ModelResponse(
            "hi \U0001f600",
            [ToolCall("c1", "read_file", {"path": "a"}, "{bad", "err")],
            Usage(1, 2, 3, 4),
            "stop",
        ),
        Message("assistant", "x", [ToolCall("c", "t")], thinking=[{"type": "reasoning", "text": "t"}]),
        ItemResult("q1", 3, "failed", "runs/q1", cost_usd=0.25, error="boom"),
        Odd(Path("/tmp/x"), Pair(1, "b"), {1: [("a", "b")]}, [Usage(5)]),
    ]
    for value in values:
        assert as_plain(value) == dataclasses.asdict(value)
    odd = as_plain(values[-1])
    assert type(odd["pair"]) is Pair and type(odd["nested"][1][0]) is tuple and odd["path"] == Path("/tmp/x")
    line = UsageLine("agent", "model")
    assert as_plain(line) == dataclasses.asdict(line)


def test_as_plain_copies_containers() -> None:
    result = ToolResult.ok("done", files=["a"])
    plain = as_plain(result)
    plain["data"]["files"].append("b")
    assert result.data == {"files": ["a"]}


def test_the_validator_is_shared_by_equal_schemas() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    one = parameters_validator(json.dumps(schema, sort_keys=True))
    two = parameters_validator(json.dumps(dict(reversed(schema.items())), sort_keys=True))
    assert one is two
    assert one.is_valid({"n": 1}) and not one.is_valid({"n": "x"})


def test_pretty_schema_is_the_indented_dump() -> None:
    schema = {"type": "object", "properties": {"z": {"description": "caf\u00e9", "default": 1.0}, "a": {}}}
    assert _pretty(json.dumps(schema, ensure_ascii=False)) == json.dumps(schema, indent=2, ensure_ascii=False)


async def test_settle_does_the_whole_work_through_cancels() -> None:
    """A run's seeding that copies files is done off the loop; a cancel meanwhile (a second
    Ctrl-C) waits for the copying to end and is then a cancel as usual."""
    started, release, done = threading.Event(), threading.Event(), []

    def work() -> int:
        started.set()
        release.wait(10)
        done.append("written")
        return 7

    task = asyncio.create_task(settle(work))
    assert await asyncio.to_thread(started.wait, 10)
    task.cancel()
    await asyncio.sleep(0.05)
    task.cancel()
    await asyncio.sleep(0.05)
    assert not task.done() and not done
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert done == ["written"]
    assert await settle(lambda: 3) == 3
