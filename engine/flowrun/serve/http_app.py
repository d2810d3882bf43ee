"""`flowrun serve http`: the runs API on Starlette (docs/reference/http-api.md has every route).

    POST /v1/runs                      start a run of a served workflow
    GET  /v1/runs                      the runs folder's runs (filters, paged; the runs index)
    GET  /v1/runs/{id}                 one run's summary: state, usage, agents, timeline, decisions
    GET  /v1/runs/{id}/conversations   each agent's conversation, sub-agents under their calls
    GET  /v1/runs/{id}/replay          its replay's model steps beside its own (404: none)
    GET  /v1/runs/{id}/events          its log as server-sent events (Last-Event-ID resumes)
    POST /v1/runs/{id}/decisions       allow, deny, answer or grant what it waits for
    POST /v1/runs/{id}/cancel|resume   stop it resumably (its partial result), continue it
    GET  /v1/runs/{id}/files[/PATH]    its folder's files, read-only
    GET  /v1/runs/{id}/memory          its memories: their state at its start and now, its writes
    GET  /v1/workflows/{name}/memory/{agent}   an agent's memory: its files as they are
    GET  /v1/workflows, /v1/batches[/NAME], /v1/evals[/NAME], /openapi.json

Every request passes the Host and Origin check (serve/access.py) and, when the server has a
token, must carry it. Blocking reads (the index, a folder) run in worker threads so the loop
stays free for the runs."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import mimetypes
import os
import stat
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from flowrun.errors import FlowrunError, RunInUse
from flowrun.pinned import open_regular, walk
from flowrun.runtime.durable.event_log import read_lines
from flowrun.runtime.durable.run_folder import LOCK_NAME
from flowrun.runtime.summary.conversations import conversation_json
from flowrun.runtime.summary.folder import replay_steps
from flowrun.serve.access import BearerToken, HostCheck, NoFraming, accepted_hosts
from flowrun.serve.eval_folders import eval_detail, eval_list
from flowrun.serve.event_feed import follow
from flowrun.serve.http_common import body_of, reply, runs_of
from flowrun.serve.openapi import document
from flowrun.serve.page_routes import (
    SESSION,
    agent_route,
    compare_route,
    fork_route,
    rerun_route,
    run_team_route,
    session_route,
    workflow_cost_route,
    workflow_team_route,
)
from flowrun.serve.page_routes import replay_route as replay_edits_route
from flowrun.serve.run_listing import runs_page
from flowrun.serve.served_runs import (
    Conflict,
    NotFound,
    ServedRuns,
    decision_dict,
    describe_error,
    result_dict,
)
from flowrun.serve.workflow_info import batch_detail, batches, workflow_info
from flowrun.states import NAMES

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route
    from starlette.types import ASGIApp

MAX_FILES = 10_000  # a files listing stops here (a workspace may be huge)
MAX_LIMIT = 1000


def build_app(
    served: Callable[[], ServedRuns],
    host: str = "127.0.0.1",
    token: str | None = None,
    allowed_hosts: tuple[str, ...] = (),
    on_start: Callable[[ServedRuns], None] | None = None,
) -> ASGIApp:
    """The ASGI app. `served` makes the server's ServedRuns once the loop runs; `on_start` is
    told of it (the CLI prints the runs left waiting or stopped)."""
    from starlette.applications import Starlette

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        runs = served()
        app.state.served = runs
        if on_start is not None:
            on_start(runs)
        try:
            yield
        finally:
            await runs.close()  # each run ends cancelled: resumable after a restart

    routes = api_routes()
    pages = importlib.util.find_spec("flowrun.serve.ui") is not None  # absent in a trimmed build
    if pages:
        importlib.import_module("flowrun.serve.ui").mount(routes)
    app: ASGIApp = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={FlowrunError: flowrun_error, Exception: internal_error},
    )
    if token is not None:
        app = BearerToken(app, token, query_token=True, public=api_free if pages else None)
    return HostCheck(NoFraming(app), accepted_hosts(host, allowed_hosts))


def api_routes() -> list[Route]:
    """The runs API's routes (docs/reference/http-api.md lists them)."""
    from starlette.routing import Route

    return [
        Route("/v1/session", session_route, methods=["GET"]),
        Route("/v1/workflows", workflows_route, methods=["GET"]),
        Route("/v1/workflows/{name}/team", workflow_team_route, methods=["GET"]),
        Route("/v1/workflows/{name}/cost", workflow_cost_route, methods=["GET"]),
        Route("/v1/runs", list_route, methods=["GET"]),
        Route("/v1/runs", start_route, methods=["POST"]),
        Route("/v1/runs/{id}", run_route, methods=["GET"]),
        Route("/v1/runs/{id}/conversations", conversations_route, methods=["GET"]),
        Route("/v1/runs/{id}/replay", replay_route, methods=["GET"]),
        Route("/v1/runs/{id}/replay", replay_edits_route, methods=["POST"]),
        Route("/v1/runs/{id}/fork", fork_route, methods=["POST"]),
        Route("/v1/runs/{id}/rerun", rerun_route, methods=["POST"]),
        Route("/v1/runs/{id}/agent", agent_route, methods=["GET"]),
        Route("/v1/runs/{id}/team", run_team_route, methods=["GET"]),
        Route("/v1/runs/{id}/events", events_route, methods=["GET"]),
        Route("/v1/runs/{id}/decisions", decisions_route, methods=["POST"]),
        Route("/v1/runs/{id}/cancel", cancel_route, methods=["POST"]),
        Route("/v1/runs/{id}/resume", resume_route, methods=["POST"]),
        Route("/v1/runs/{id}/files", files_route, methods=["GET"]),
        Route("/v1/runs/{id}/files/{path:path}", file_route, methods=["GET"]),
        Route("/v1/workers", workers_route, methods=["GET"]),
        Route("/v1/runs/{id}/memory", run_memory_route, methods=["GET"]),
        Route("/v1/workflows/{name}/memory/{agent}", agent_memory_route, methods=["GET"]),
        Route("/v1/batches", batches_route, methods=["GET"]),
        Route("/v1/batches/{name}", batch_route, methods=["GET"]),
        Route("/v1/evals", evals_route, methods=["GET"]),
        Route("/v1/evals/{name}", eval_route, methods=["GET"]),
        Route("/v1/compare", compare_route, methods=["GET"]),
        Route("/openapi.json", openapi_route, methods=["GET"]),
    ]


def api_free(path: str) -> bool:
    """The web UI's shell and assets: served without the token, since a browser opening the
    address `flowrun ui` prints cannot send it; they hold no run data, which the pages read
    from /v1/... with the token; and the session, which says whether the token sent is right."""
    return path == SESSION or (not path.startswith("/v1/") and path != "/openapi.json")


# ---------------------------------------------------------------- answers


async def flowrun_error(request: Request, e: Exception) -> Response:
    if isinstance(e, NotFound):
        return reply(describe_error(e), 404)
    if isinstance(e, Conflict | RunInUse):
        return reply(describe_error(e), 409)
    assert isinstance(e, FlowrunError)
    return reply(describe_error(e), 400)


async def internal_error(request: Request, e: Exception) -> Response:
    return reply({"error": f"internal error: {type(e).__name__}: {e}", "hint": None}, 500)


# ---------------------------------------------------------------- routes


async def workflows_route(request: Request) -> Response:
    served = runs_of(request)
    return reply({"workflows": [workflow_info(wf) for wf in served.workflows.values()]})


async def start_route(request: Request) -> Response:
    body = await body_of(request)
    served = runs_of(request)
    run_id = await served.start(body.get("workflow"), body.get("inputs"), body.get("options"))
    return reply({"id": run_id, "status": served.start_state, "run": f"/v1/runs/{run_id}"}, 201)


async def list_route(request: Request) -> Response:
    from flowrun.errors import UsageError

    served = runs_of(request)
    query = request.query_params
    try:
        limit = min(int(query.get("limit", 50)), MAX_LIMIT)
        offset = int(query.get("offset", 0))
    except ValueError:
        raise UsageError("limit and offset are whole numbers", "e.g. ?limit=50&offset=100") from None
    statuses = [s for value in query.getlist("status") for s in value.split(",") if s]
    runs, total = await asyncio.to_thread(
        runs_page,
        served.runs_dir,
        workflow=query.get("workflow") or None,
        status=statuses or None,
        since=_time(query.get("since"), "since"),
        until=_time(query.get("until"), "until"),
        q=query.get("q") or None,
        limit=limit,
        offset=offset,
        batches=query.get("batches", "1") not in ("0", "false"),
        own=served.listing(),
    )
    return reply({"runs": runs, "total": total, "offset": offset, "limit": limit, "states": NAMES})


def _time(value: str | None, name: str) -> float | None:
    """Epoch seconds, or an ISO 8601 date or date and time."""
    from datetime import datetime

    from flowrun.errors import UsageError

    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        raise UsageError(f"{name}={value!r} is not a time", "epoch seconds or 2025-01-31T12:00") from None


async def run_route(request: Request) -> Response:
    served = runs_of(request)
    return reply(await asyncio.to_thread(run_detail, served, request.path_params["id"]))


def run_detail(served: ServedRuns, run_id: str) -> dict[str, object]:
    """The run's summary (runtime/summary/), as `flowrun show` reads it."""
    return served.summary(run_id).to_dict()


async def conversations_route(request: Request) -> Response:
    served = runs_of(request)
    summary = await asyncio.to_thread(served.summary, request.path_params["id"])
    return reply({"conversations": conversation_json(summary.conversations)})


async def replay_route(request: Request) -> Response:
    served = runs_of(request)
    run_id = request.path_params["id"]
    summary = await asyncio.to_thread(served.summary, run_id)
    if summary.replay is None:
        raise NotFound(f"run {run_id} has no replay", f"flowrun replay {summary.entry.path} makes one")
    return reply(await asyncio.to_thread(replay_steps, summary.entry.path, summary.replay))


async def events_route(request: Request) -> Response:
    from starlette.responses import StreamingResponse

    from flowrun.errors import UsageError

    served = runs_of(request)
    run_id = request.path_params["id"]
    folder = served.folder(run_id)
    log = folder / "events.jsonl"
    if request.query_params.get("format") == "json":
        return reply({"events": await asyncio.to_thread(read_lines, log)})
    given = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
    try:
        after = int(given)
    except ValueError:
        raise UsageError(f"Last-Event-ID {given!r} is not an event's seq", "a whole number") from None

    def status() -> str:
        entry = served.entry(run_id)
        return entry.status

    stream = follow(
        log,
        after,
        running=lambda: served.running(run_id),
        wait=lambda timeout: served.changes.wait(run_id, timeout),
        status=status,
    )
    headers = {"cache-control": "no-store", "x-accel-buffering": "no"}
    return StreamingResponse(stream, media_type="text/event-stream", headers=headers)


async def decisions_route(request: Request) -> Response:
    body = await body_of(request)
    served = runs_of(request)
    decision, pending, status = await served.decide(request.path_params["id"], body)
    return reply(
        {"decision": decision_dict(decision), "pending": [p.to_dict() for p in pending], "status": status}
    )


async def cancel_route(request: Request) -> Response:
    """Answered once the stop is recorded: the run's partial result."""
    result = await runs_of(request).cancel(request.path_params["id"])
    return reply(result_dict(result))


async def resume_route(request: Request) -> Response:
    run_id = request.path_params["id"]
    served = runs_of(request)
    await served.resume(run_id)
    return reply({"id": run_id, "status": served.start_state}, 202)


async def files_route(request: Request) -> Response:
    folder = runs_of(request).folder(request.path_params["id"])
    return reply({"files": await asyncio.to_thread(list_files, folder)})


def list_files(folder: Path) -> list[dict[str, object]]:
    """The run folder's regular files (not the lock), relative paths; symlinks not followed."""
    found: list[dict[str, object]] = []
    real = folder.resolve()
    for path in walk(real):  # (a tree the agents made: walked without recursion, 256 deep at most)
        if path.parent == real and path.name == LOCK_NAME:
            continue
        with contextlib.suppress(OSError):
            info = path.lstat()
            if stat.S_ISREG(info.st_mode):
                found.append(
                    {
                        "path": path.relative_to(real).as_posix(),
                        "size": info.st_size,
                        "mtime": info.st_mtime,
                    }
                )
            if len(found) >= MAX_FILES:
                return found
    return found


async def file_route(request: Request) -> Response:
    from starlette.responses import StreamingResponse

    folder = runs_of(request).folder(request.path_params["id"])
    given = request.path_params["path"]
    opened = await asyncio.to_thread(open_confined, folder, given)
    if opened is None:
        raise NotFound(f"no file {given!r} in the run", "GET /v1/runs/ID/files lists them")
    file, size = opened

    async def body() -> AsyncIterator[bytes]:
        """The file as it was when opened: `size` bytes (a live run's log grows meanwhile)."""
        left = size
        try:
            while left > 0 and (chunk := await asyncio.to_thread(file.read, min(left, 1 << 16))):
                left -= len(chunk)
                yield chunk
        finally:
            file.close()

    media = mimetypes.guess_type(given)[0] or "text/plain"
    headers = {"cache-control": "no-store", "x-content-type-options": "nosniff", "content-length": str(size)}
    return StreamingResponse(body(), media_type=media, headers=headers)


def open_confined(folder: Path, given: str) -> tuple[BinaryIO, int] | None:
    """The regular file `given` names inside the run folder, opened as checked (a folder a
    running tool swaps for a symlink meanwhile is not followed: flowrun/pinned.py), and its
    size; None for anything else (see `confined`)."""
    real = confined(folder, given)
    if real is None:
        return None
    try:
        file = open_regular(real)  # (never waits on a FIFO put there since)
    except OSError:
        return None
    return file, os.fstat(file.fileno()).st_size


def confined(folder: Path, given: str) -> Path | None:
    """The regular file `given` names inside the run folder; None for anything else: a path
    out of it (`..`, absolute), through a symlink, the lock, a folder, nothing."""
    if "\x00" in given:  # (no file name holds one; the system calls would refuse the path)
        return None
    parts = Path(given).parts
    if not parts or Path(given).is_absolute() or any(p in ("..", ".", "") for p in parts):
        return None
    path = folder.joinpath(*parts)
    probe = folder
    try:
        for part in parts:  # no symlink anywhere on the way, whatever it points at
            probe = probe / part
            if probe.is_symlink():
                return None
        real = path.resolve(strict=True)
    except OSError:  # (a name longer than the system takes, too)
        return None
    if not real.is_relative_to(folder.resolve()) or not real.is_file() or parts == (LOCK_NAME,):
        return None
    return real


async def workers_route(request: Request) -> Response:
    """The queue's workers (`flowrun workers`); none when the server runs its runs itself."""
    import dataclasses

    rows = await asyncio.to_thread(runs_of(request).worker_rows)
    return reply({"workers": [dataclasses.asdict(row) for row in rows]})


async def run_memory_route(request: Request) -> Response:
    """The run's memories (their state at its start, their files now), the index each agent
    instance's prompt got and the writes it made (api/memory.py): what the web UI shows."""
    from flowrun.api.memory import run_memory

    folder = runs_of(request).folder(request.path_params["id"])
    return reply(await asyncio.to_thread(run_memory, folder))


async def agent_memory_route(request: Request) -> Response:
    from flowrun.api.memory import memory_document, memory_in

    served = runs_of(request)
    name, agent = request.path_params["name"], request.path_params["agent"]
    workflow = served.workflows.get(name)
    if workflow is None:
        raise NotFound(f"no workflow {name!r}", "GET /v1/workflows lists them")
    found = memory_in(workflow.project, workflow.path.parent, agent)
    return reply(await asyncio.to_thread(memory_document, found))


async def batches_route(request: Request) -> Response:
    served = runs_of(request)
    return reply({"batches": await asyncio.to_thread(batches, served.runs_dir)})


async def batch_route(request: Request) -> Response:
    return await _folder_answer(request, batch_detail, "batch", "GET /v1/batches lists them")


async def evals_route(request: Request) -> Response:
    served = runs_of(request)
    return reply({"evals": await asyncio.to_thread(eval_list, served.runs_dir)})


async def eval_route(request: Request) -> Response:
    return await _folder_answer(request, eval_detail, "eval", "GET /v1/evals lists them")


async def _folder_answer(
    request: Request, read: Callable[[Path, str], dict[str, object] | None], what: str, hint: str
) -> Response:
    """A batch's or an eval's folder beside the runs folder, as `read` gives it; 404 without."""
    name = request.path_params["name"]
    found = await asyncio.to_thread(read, runs_of(request).runs_dir, name)
    if found is None:
        raise NotFound(f"no {what} {name!r}", hint)
    return reply(found)


async def openapi_route(request: Request) -> Response:
    return reply(document())
