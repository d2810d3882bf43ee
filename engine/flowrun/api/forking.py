"""A recorded run forked with edits: replayed with them into a new folder (no model asked: the
recording answers), and cut just before the first step the edits change, as if the run had
been killed there. `flowrun.resume` of that folder then goes on live from that step, with the
edits (the folder's run.json records them among its `--set`s), and everything before it is
taken from the recording. The recorded run's folder is only read."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from flowrun.api.replaying import replay
from flowrun.api.results import ReplayResult
from flowrun.atomic_files import replace_file
from flowrun.pinned import read_json_object, read_whole
from flowrun.records import ReplayDivergence
from flowrun.types import decode_json


async def fork(
    run_dir: str | Path, into: str | Path, edits: Mapping[str, object] | Iterable[str]
) -> ReplayResult:
    """Replay `run_dir` with `edits` (as `replay`'s) into the new folder `into`, and cut it
    before the first step that differs (see the module's docstring). Without a difference the
    folder is the replay, ended as the recording ended: there is nothing to go on with."""
    result = await replay(run_dir, into=into, edits=edits)
    if result.divergence is not None:
        cut_at_divergence(Path(into), result.divergence)
    return result


def cut_at_divergence(folder: Path, point: ReplayDivergence) -> None:
    """Keep the lines of the folder's log before the divergence: the model request of the
    differing step, else (a condition decided otherwise, a recorded call never made) the error
    the replay stopped with; its run.json then says interrupted (a log without an end)."""
    log = folder / "events.jsonl"
    lines = read_whole(log).splitlines(keepends=True)
    events = [_decoded(line) for line in lines]
    at = next((i for i, e in enumerate(events) if _is_request(e, point)), None)
    if at is None:
        at = next((i for i, e in enumerate(events) if _is_divergence(e)), len(lines))
    replace_file(log, b"".join(lines[:at]))
    meta = read_json_object(folder / "run.json")
    if meta:
        replace_file(folder / "run.json", json.dumps({**meta, "status": "interrupted"}, indent=2) + "\n")


def _is_request(event: Mapping[str, object], point: ReplayDivergence) -> bool:
    return (
        event.get("type") == "model_request"
        and event.get("agent_id") == point.get("agent_id")
        and event.get("step") == point.get("step")
    )


def _is_divergence(event: Mapping[str, object]) -> bool:
    return event.get("type") in ("error", "run_end") and "first differing step" in str(event.get("message"))


def _decoded(line: bytes) -> dict[str, object]:
    try:
        found = decode_json(line.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return {}
    return found if isinstance(found, dict) else {}
