"""The routes of the runs API that the web UI's pages lean on beyond reading and deciding runs:
what a page may show before it draws (the token, whether a run exists), one agent instance as
it was asked (the details of a step), the team of a workflow or of a run, the cost preview,
re-run, replay with edits, fork, and two runs compared. Listed in serve/http_app.py with the
others (docs/reference/http-api.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from flowrun.errors import FlowrunError, UsageError
from flowrun.runtime.summary.conversations import instance_json
from flowrun.serve.compare import compare_runs
from flowrun.serve.eval_folders import eval_exists
from flowrun.serve.http_common import body_of, reply, runs_of
from flowrun.serve.run_actions import fork_run, replay_with_edits, rerun
from flowrun.serve.served_runs import NotFound, ServedRuns
from flowrun.serve.team_graph import team_graph
from flowrun.serve.workflow_info import batches_folder

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from flowrun.api import Workflow

SESSION = "/v1/session"  # answered without the token (it says whether the one sent is right)


async def session_route(request: Request) -> Response:
    """Whether the server wants a token and the request's is right; then whether the runs
    (`run`), batches (`batch`) and evals (`eval`) asked about exist. Always 200: a page tells a missing run or
    a wrong token from this answer, with no failed request to show."""
    state = request.scope.get("state") or {}
    required = "token_ok" in state
    authorized = bool(state.get("token_ok", True))
    answer: dict[str, object] = {"token_required": required, "authorized": authorized}
    if authorized:
        served = runs_of(request)
        runs = request.query_params.getlist("run")
        batches = request.query_params.getlist("batch")
        evals = request.query_params.getlist("eval")
        answer["runs"] = {run_id: await asyncio.to_thread(_exists, served, run_id) for run_id in runs}
        answer["batches"] = {name: _batch_exists(served, name) for name in batches}
        answer["evals"] = {name: eval_exists(served.runs_dir, name) for name in evals}
    return reply(answer)


def _exists(served: ServedRuns, run_id: str) -> bool:
    try:
        served.folder(run_id)
    except NotFound:
        return False
    return True


def _batch_exists(served: ServedRuns, name: str) -> bool:
    if "/" in name or name in ("", ".", ".."):
        return False
    return (batches_folder(served.runs_dir) / name).is_dir()


async def agent_route(request: Request) -> Response:
    """One agent instance of a run as it was asked: its prompts and tools, its turns with
    their steps and whole tool results (`?agent_id=`)."""
    served = runs_of(request)
    run_id = request.path_params["id"]
    agent_id = request.query_params.get("agent_id") or ""
    summary = await asyncio.to_thread(served.summary, run_id)
    found = instance_json(summary.conversations, agent_id)
    if found is None:
        raise NotFound(f"run {run_id} has no agent instance {agent_id!r}", "GET /v1/runs/ID lists them")
    return reply(found)


async def run_team_route(request: Request) -> Response:
    """The team of the run's workflow (its file as it is now); `team` null, with the problem,
    when the file is gone or no longer loads."""
    served = runs_of(request)
    folder = served.folder(request.path_params["id"])
    try:
        workflow = await asyncio.to_thread(_run_workflow, served, folder)
    except FlowrunError as e:
        return reply({"team": None, "problem": e.message})
    return reply({"team": await asyncio.to_thread(team_graph, workflow), "problem": None})


def _run_workflow(served: ServedRuns, folder: Path) -> Workflow:
    from flowrun.api import recorded_run
    from flowrun.pinned import read_json_object

    recorded = read_json_object(folder / "run.json").get("workflow_file")
    for wf in served.workflows.values():
        if isinstance(recorded, str) and wf.path.resolve() == Path(recorded).resolve():
            return wf
    return recorded_run(folder)[1]


async def workflow_team_route(request: Request) -> Response:
    workflow = runs_of(request).workflow(request.path_params["name"])
    return reply(await asyncio.to_thread(team_graph, workflow))


async def workflow_cost_route(request: Request) -> Response:
    """The cost preview of a run of the workflow (`flowrun cost --format json`), with the
    server's options and the earlier runs of its runs folder."""
    from flowrun.api.cost_preview import cost_preview_json

    served = runs_of(request)
    workflow = served.workflow(request.path_params["name"])
    dry = request.query_params.get("dry_run") in ("1", "true")
    options = served.options.changed(dry_run=dry) if dry else served.options
    found = await asyncio.to_thread(cost_preview_json, workflow, options, {}, served.runs_dir)
    return reply(found)


async def rerun_route(request: Request) -> Response:
    body = await body_of(request)
    if set(body) - {"inputs"} or not isinstance(body.get("inputs", {}), dict):
        raise UsageError("a re-run takes only `inputs` (an object)", '{"inputs": {"question": "..."}}')
    run_id = await rerun(runs_of(request), request.path_params["id"], body)
    return reply({"id": run_id, "status": "running", "run": f"/v1/runs/{run_id}"}, 201)


async def replay_route(request: Request) -> Response:
    body = await body_of(request)
    return reply(await replay_with_edits(runs_of(request), request.path_params["id"], body))


async def fork_route(request: Request) -> Response:
    body = await body_of(request)
    return reply(await fork_run(runs_of(request), request.path_params["id"], body), 201)


async def compare_route(request: Request) -> Response:
    query = request.query_params
    first, second = query.get("a"), query.get("b")
    if not first or not second:
        raise UsageError("name two runs: ?a=RUN&b=RUN", "GET /v1/runs lists them")
    served = runs_of(request)
    return reply(await asyncio.to_thread(compare_runs, served, first, second))
