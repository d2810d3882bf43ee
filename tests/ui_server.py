"""A SMALL stand-in for the runs API (HTTP_CONTRACT.md) so the browser tests of the pages run
before the real server (`flowrun.serve.http_app`) is merged: replace it with the real one then.

It serves, from a real runs folder, the read routes the pages use: GET /v1/workflows, GET and
POST /v1/runs, GET /v1/runs/{id}, /events (server-sent events that replay events.jsonl then
follow it, resumable with Last-Event-ID or ?after=; ?format=json for the whole log), /files,
and POST /v1/runs/{id}/decisions (flowrun.respond, then flowrun.resume in the background),
plus the pages (flowrun.serve.ui.mount). No index: each list request reads the folders' small
files, cached by run.json's mtime.

    python tests/ui_server.py --runs-dir runs [WORKFLOW.yaml ...]   prints `listening on URL`
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

import flowrun
from flowrun.serve.ui import mount

FOLLOW_EVERY_S = 0.05  # how often a followed log is read again for new lines
ENDED = ("completed", "failed", "max_steps", "budget_exceeded", "interrupted", "waiting")


def _json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _first_time(log: Path) -> float | None:
    try:
        with log.open(encoding="utf-8") as f:
            first = f.readline()
        return float(json.loads(first).get("t"))
    except (OSError, ValueError, TypeError, AttributeError):
        return None


class Runs:
    """The run folders of one runs dir, summarised as RunSummary dicts."""

    def __init__(self, root: Path, workflows: list[flowrun.Workflow]) -> None:
        self.root = root
        self.workflows = {wf.name: wf for wf in workflows}
        self.cache: dict[str, tuple[float, dict[str, Any]]] = {}
        self.tasks: dict[str, asyncio.Task[Any]] = {}  # run id -> the run (or resume) going on here

    def folder(self, run_id: str) -> Path | None:
        path = self.root / run_id
        ok = "/" not in run_id and run_id not in ("", ".", "..") and (path / "run.json").is_file()
        return path if ok else None

    def summary(self, run_dir: Path) -> dict[str, Any]:
        mtime = (run_dir / "run.json").stat().st_mtime
        cached = self.cache.get(run_dir.name)
        if cached and cached[0] == mtime:
            return cached[1]
        meta = _json(run_dir / "run.json")
        usage = _json(run_dir / "usage.json")
        tokens = {"input_tokens": 0, "output_tokens": 0}
        for row in usage.get("by_agent_model") or []:
            for key in tokens:
                tokens[key] += int((row.get("usage") or {}).get(key) or 0)
        started = _first_time(run_dir / "events.jsonl")
        status = meta.get("status") or "unknown"
        ended = meta.get("updated") if status != "running" else None
        out = {
            "id": run_dir.name,
            "workflow": meta.get("workflow"),
            "status": status,
            "dry_run": bool((meta.get("options") or {}).get("dry_run")),
            "started": started,
            "ended": ended,
            "duration_s": ended - started if ended and started else None,
            **tokens,
            "total_tokens": usage.get("total_tokens", tokens["input_tokens"] + tokens["output_tokens"]),
            "cost_usd": usage.get("total_cost_usd"),
            "pending": len(meta.get("pending") or []),
            "batch": None,
            "_inputs": json.dumps(meta.get("inputs") or {}, ensure_ascii=False),
        }
        self.cache[run_dir.name] = (mtime, out)
        return out

    def all(self) -> list[dict[str, Any]]:
        found = []
        for entry in self.root.iterdir() if self.root.is_dir() else []:
            if (entry / "run.json").is_file():
                found.append(self.summary(entry))
        return sorted(found, key=lambda r: r["started"] or 0, reverse=True)


def public(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if not k.startswith("_")}


class Api:
    """The routes, each a method (the request's run id, when it has one, is checked first)."""

    def __init__(self, runs_dir: Path, workflows: list[flowrun.Workflow]) -> None:
        self.runs_dir = runs_dir
        self.workflows = workflows
        self.runs = Runs(runs_dir, workflows)

    def routes(self) -> list[BaseRoute]:
        routes: list[BaseRoute] = [
            Route("/v1/workflows", self.list_workflows),
            Route("/v1/runs", self.list_runs, methods=["GET"]),
            Route("/v1/runs", self.start_run, methods=["POST"]),
            Route("/v1/runs/{run_id}", self.get_run),
            Route("/v1/runs/{run_id}/events", self.events),
            Route("/v1/runs/{run_id}/decisions", self.decide, methods=["POST"]),
            Route("/v1/runs/{run_id}/files", self.files),
            Route("/v1/runs/{run_id}/files/{path:path}", self.one_file),
            Route("/v1/batches", self.list_batches),
            Route("/v1/batches/{name}", self.get_batch),
        ]
        mount(routes)
        return routes

    def folder(self, request: Request) -> Path:
        run_id = request.path_params["run_id"]
        folder = self.runs.folder(run_id)
        if folder is None:
            raise HTTPException(404, f"no run {run_id}")
        return folder

    async def list_workflows(self, request: Request) -> JSONResponse:
        out = []
        for wf in self.workflows:
            inputs = {
                name: {
                    "type": spec.type,
                    "description": spec.description,
                    "required": spec.is_required,
                    "default": spec.default,
                    "choices": spec.choices,
                }
                for name, spec in wf.inputs.items()
            }
            out.append({"name": wf.name, "description": wf.spec.description, "file": "", "inputs": inputs})
        return JSONResponse({"workflows": out})

    async def list_runs(self, request: Request) -> JSONResponse:
        q = request.query_params
        rows = self.runs.all()
        if q.get("status"):
            rows = [r for r in rows if r["status"] == q["status"]]
        if q.get("workflow"):
            rows = [r for r in rows if r["workflow"] == q["workflow"]]
        if q.get("q"):
            needle = q["q"].lower()
            rows = [r for r in rows if needle in f"{r['id']} {r['workflow']} {r['_inputs']}".lower()]
        limit, offset = int(q.get("limit", 50)), int(q.get("offset", 0))
        page = [public(r) for r in rows[offset : offset + limit]]
        return JSONResponse({"runs": page, "total": len(rows), "offset": offset, "limit": limit})

    async def start_run(self, request: Request) -> JSONResponse:
        body = await request.json()
        wf = self.runs.workflows.get(body.get("workflow"))
        if wf is None:
            return JSONResponse({"error": f"no workflow {body.get('workflow')!r}", "hint": ""}, 400)
        run_id = flowrun.api.new_run_id(wf.name)
        options = {k: v for k, v in (body.get("options") or {}).items() if v is not None}
        started = asyncio.Event()

        def on_event(event: object) -> None:
            started.set()

        run = wf.run(
            body.get("inputs") or {},
            runs_dir=self.runs_dir,
            run_id=run_id,
            decisions="wait",
            on_event=on_event,
            **options,
        )
        task = self.runs.tasks[run_id] = asyncio.create_task(run)
        await asyncio.wait([task, asyncio.create_task(started.wait())], return_when=asyncio.FIRST_COMPLETED)
        return JSONResponse({"id": run_id, "status": "running", "run": f"/v1/runs/{run_id}"}, 201)

    async def get_run(self, request: Request) -> JSONResponse:
        folder = self.folder(request)
        meta = _json(folder / "run.json")
        out = public(self.runs.summary(folder)) | {
            "inputs": meta.get("inputs") or {},
            "options": meta.get("options") or {},
            "output": meta.get("output"),
            "message": "",
            "pending": meta.get("pending") or [],
            "usage": _json(folder / "usage.json"),
        }
        return JSONResponse(out)

    async def events(self, request: Request) -> Response:
        folder = self.folder(request)
        log = folder / "events.jsonl"
        if request.query_params.get("format") == "json":
            lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
            return JSONResponse({"events": [json.loads(line) for line in lines if line.strip()]})
        after = int(request.headers.get("last-event-id") or request.query_params.get("after") or 0)
        return StreamingResponse(self.follow(folder, after), media_type="text/event-stream")

    async def follow(self, folder: Path, after: int) -> AsyncIterator[str]:
        """Each line of the log after `after`, then each new one, until the run has ended."""
        log, offset, rest = folder / "events.jsonl", 0, ""
        while True:
            status = _json(folder / "run.json").get("status")
            if log.exists():
                with log.open(encoding="utf-8") as f:
                    f.seek(offset)
                    rest += f.read()
                    offset = f.tell()
                *lines, rest = rest.split("\n")
                for line in lines:
                    event = json.loads(line) if line.strip() else {}
                    if event.get("seq", 0) > after:
                        after = event["seq"]
                        yield f"id: {after}\nevent: {event.get('type')}\ndata: {line}\n\n"
            task = self.runs.tasks.get(folder.name)
            if status in ENDED and (task is None or task.done()):
                yield f"event: end\ndata: {json.dumps({'status': status})}\n\n"
                return
            await asyncio.sleep(FOLLOW_EVERY_S)

    async def decide(self, request: Request) -> JSONResponse:
        folder = self.folder(request)
        body = await request.json()
        try:
            decision = flowrun.respond(
                folder,
                body.get("call"),
                allow=body.get("allow"),
                answer=body.get("answer"),
                grant=body.get("grant"),
                reason=body.get("reason"),
                by="ui",
            )
        except flowrun.FlowrunError as e:
            return JSONResponse({"error": str(e).splitlines()[0], "hint": ""}, 409)
        pending = [p.to_dict() for p in flowrun.pending_decisions(folder)]
        if not pending and body.get("continue", True):
            self.runs.tasks[folder.name] = asyncio.create_task(flowrun.resume(folder))
        out = {"decision": dataclasses.asdict(decision), "pending": pending, "status": "running"}
        return JSONResponse(out)

    async def list_batches(self, request: Request) -> JSONResponse:
        root = self.runs_dir.parent / "batches"
        found = [p for p in sorted(root.iterdir()) if (p / "batch.json").is_file()] if root.is_dir() else []
        summaries = [{k: v for k, v in batch_summary(p).items() if k != "items"} for p in found]
        return JSONResponse({"batches": summaries})

    async def get_batch(self, request: Request) -> JSONResponse:
        folder = self.runs_dir.parent / "batches" / request.path_params["name"]
        if "/" in request.path_params["name"] or not (folder / "batch.json").is_file():
            raise HTTPException(404, "no such batch")
        summary = batch_summary(folder)
        return JSONResponse(summary | {"cost_over_time": cost_over_time(folder, summary["items"])})

    async def files(self, request: Request) -> JSONResponse:
        folder = self.folder(request)
        listed = [
            {"path": str(p.relative_to(folder)), "size": p.stat().st_size, "mtime": p.stat().st_mtime}
            for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.is_symlink()
        ]
        return JSONResponse({"files": listed})

    async def one_file(self, request: Request) -> Response:
        folder = self.folder(request)
        path = (folder / request.path_params["path"]).resolve()
        if not path.is_relative_to(folder.resolve()) or not path.is_file():
            raise HTTPException(404, "no such file")
        return FileResponse(path, media_type="text/plain; charset=utf-8")


def _items_total(meta: dict[str, Any], results: list[dict[str, Any]]) -> int:
    try:
        lines = Path(meta.get("items_file") or "").read_text(encoding="utf-8").splitlines()
    except OSError:
        return len(results)
    return max(sum(1 for line in lines if line.strip()), len(results))


def batch_summary(folder: Path) -> dict[str, Any]:
    """A batch folder (batch.json, results.jsonl, runs/) as the contract's batch summary."""
    meta = _json(folder / "batch.json")
    results_file = folder / "results.jsonl"
    lines = results_file.read_text(encoding="utf-8").splitlines() if results_file.exists() else []
    latest = {r["id"]: r for r in (json.loads(line) for line in lines if line.strip())}
    results = list(latest.values())
    counts: dict[str, int] = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return {
        "name": folder.name,
        "workflow": Path(meta.get("workflow_file") or "").stem,
        "status": meta.get("status"),
        "total": _items_total(meta, results),
        "counts": counts,
        "cost_usd": sum(r.get("cost_usd") or 0 for r in results),
        "items": results,
    }


def cost_over_time(folder: Path, items: list[dict[str, Any]]) -> list[list[float]]:
    ends = sorted(
        (float(_json(folder / r["run_dir"] / "run.json").get("updated") or 0), r.get("cost_usd") or 0.0)
        for r in items
    )
    spent, out = 0.0, []
    for t, cost in ends:
        spent += cost
        out.append([t, spent])
    return out


async def _refused(request: Request, exc: Exception) -> JSONResponse:
    detail = exc.detail if isinstance(exc, HTTPException) else str(exc)
    return JSONResponse({"error": detail, "hint": ""}, getattr(exc, "status_code", 500))


def app_for(runs_dir: Path, workflows: list[flowrun.Workflow]) -> Starlette:
    return Starlette(routes=Api(runs_dir, workflows).routes(), exception_handlers={HTTPException: _refused})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"))
    parser.add_argument("workflows", nargs="*", type=Path)
    args = parser.parse_args()
    import flowrun.runtime.kinds  # the CLI registers the kinds on first use

    app = app_for(args.runs_dir, [flowrun.load(path) for path in args.workflows])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections wait from now on, before uvicorn accepts them
    host, port = sock.getsockname()[:2]
    print(f"listening on http://{host}:{port}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[sock])


if __name__ == "__main__":
    sys.exit(main())
