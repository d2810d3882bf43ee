"""What the batch's parent process and its worker processes say to each other (batch/processes.py,
batch/worker.py): one JSON object a line, each with an `op`.

    parent -> worker (the worker's stdin)
      {"op": "job", "job": Job}                       run this item
      {"op": "stop"}                                  cancel the running items (resumably)
      {"op": "reserved", "id": N, "delay": S}         the answer to reserve N: wait S seconds
      end of input                                    stop, report the running items, exit

    worker -> parent (a private copy of the worker's stdout)
      {"op": "ready", "pid": PID}                     the workflow is loaded; send jobs
      {"op": "error", "message", "hint", "exit_code"} the workflow could not be loaded
      {"op": "reserve", "id": N, "limit": Limit, "tokens": T}
      {"op": "settle", "limit": Limit, "estimated": E, "actual": A}
      {"op": "spent", "item": ID, "usd": X}           a model call's cost, as it is spent
      {"op": "ended", "result": ItemResult}           an item ended (however it ended)

Jobs (their RunOptions as run.json records them), results and limits are plain data; JSON is
written ASCII-only, so any string an item holds (even a lone surrogate) crosses the pipe
unchanged."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from flowrun.batch.folder import ItemResult
from flowrun.batch.jobs import Job
from flowrun.runtime.models.rate_limits import Limit
from flowrun.runtime.options import RunOptions
from flowrun.types import as_plain

LINE_LIMIT = 1 << 30  # a job carries its item's inputs: a line may be as long as an item


def encode(message: Mapping[str, object]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode("ascii") + b"\n"


def decode(line: bytes) -> dict[str, object] | None:
    """The message on `line`, or None when it is not one."""
    try:
        message = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    return message if isinstance(message, dict) and isinstance(message.get("op"), str) else None


def job_message(job: Job) -> dict[str, Any]:
    return {"op": "job", "job": {**as_plain(job), "options": job.options.to_dict()}}


def job_of(raw: dict[str, Any]) -> Job:
    return Job(**{**raw, "options": RunOptions.from_dict(raw["options"])})


def result_message(result: ItemResult) -> dict[str, object]:
    return {"op": "ended", "result": result.to_dict()}


def result_of(raw: dict[str, Any]) -> ItemResult:
    return ItemResult.from_dict(raw)


def limit_dict(limit: Limit) -> dict[str, object]:
    return asdict(limit)


def limit_of(raw: dict[str, Any]) -> Limit:
    return Limit(str(raw["key"]), raw.get("requests_per_minute"), raw.get("tokens_per_minute"))
