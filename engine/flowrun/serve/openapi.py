"""The OpenAPI 3.1 document of `serve http` (GET /openapi.json), written by hand next to the
routes it describes (serve/http_app.py; a test checks that it is valid and lists every route)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from flowrun._version import __version__
from flowrun.states import NAMES

Json = dict[str, object]  # a piece of the document

JSON = "application/json"


def _ref(name: str) -> Json:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: Mapping[str, object], description: str) -> Json:
    return {"description": description, "content": {JSON: {"schema": schema}}}


def _responses(ok: str, answer: Json, *codes: int) -> Json:
    """The responses of an operation: `ok` (its status) and the errors it may answer."""
    out: Json = {ok: answer}
    out.update(_errors(*codes))
    return out


def _errors(*codes: int) -> Json:
    said = {
        400: "A mistake in the request (one line, with a hint)",
        401: "No valid token",
        404: "No such run, workflow, batch, eval or file",
        409: "The run's state does not allow it now",
    }
    return {str(code): _json(_ref("Error"), said[code]) for code in codes}


RUN_ID = {
    "name": "id",
    "in": "path",
    "required": True,
    "schema": {"type": "string"},
    "description": "The run id",
}
NUMBER_OR_NULL = {"type": ["number", "null"]}
STRING_OR_NULL = {"type": ["string", "null"]}

SCHEMAS: Json = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {"error": {"type": "string"}, "hint": STRING_OR_NULL},
    },
    "RunSummary": {
        "type": "object",
        "required": ["id", "workflow", "status"],
        "properties": {
            "id": {"type": "string"},
            "workflow": {"type": "string"},
            "status": {
                "type": "string",
                "description": "the run's state: " + ", ".join(NAMES) + " (docs: run-folder.md)",
            },
            "dry_run": {"type": "boolean"},
            "started": NUMBER_OR_NULL,
            "ended": NUMBER_OR_NULL,
            "duration_s": NUMBER_OR_NULL,
            "input_tokens": {"type": "integer"},
            "output_tokens": {"type": "integer"},
            "total_tokens": {"type": "integer"},
            "cost_usd": NUMBER_OR_NULL,
            "steps": {"type": "integer", "description": "Model calls over all agents"},
            "pending": {"type": "integer", "description": "Decisions it waits for"},
            "batch": STRING_OR_NULL,
        },
    },
    "PendingDecision": {
        "type": "object",
        "required": ["kind", "call_id", "ref", "agent", "agent_id"],
        "properties": {
            "kind": {"enum": ["approval", "question", "budget"]},
            "call_id": {"type": "string"},
            "ref": {
                "type": "string",
                "description": "AGENT_ID/CALL_ID#ATTEMPT: this request only, unique within the run",
            },
            "attempt": {"type": "integer", "description": "The run's resume count when it was first asked"},
            "agent": {"type": "string"},
            "agent_id": {"type": "string"},
            "tool": {"type": "string"},
            "arguments": {"type": "object"},
            "question": {"type": "string"},
            "limit": {"type": "string"},
            "amount": {"type": "number"},
            "message": {"type": "string"},
            "since": {"type": "number"},
            "deadline": {"type": "number"},
        },
    },
    "RunDetail": {
        "allOf": [
            _ref("RunSummary"),
            {
                "type": "object",
                "properties": {
                    "inputs": {"type": "object"},
                    "options": {"type": "object"},
                    "output": STRING_OR_NULL,
                    "message": STRING_OR_NULL,
                    "workflow_file": {"type": "string"},
                    "output_files": {"type": "array", "items": {"type": "string"}},
                    "pending": {"type": "array", "items": _ref("PendingDecision")},
                    "decisions": {"type": "array", "items": {"type": "object"}},
                    "usage": {
                        "type": "object",
                        "description": "usage.json's shape, counted from the log (also of a killed run), "
                        "and its rows summed per agent (`by_agent`) and per model (`by_model`)",
                    },
                    "agents": {
                        "type": "array",
                        "items": {"type": "object"},
                        "description": "per agent name: status (running, then waiting, else its latest), "
                        "runs, steps, total_tokens, cost_usd, time_s, first (its first invocation)",
                    },
                    "events": {"type": "integer"},
                    "last_seq": {"type": "integer"},
                    "tool_calls": {"type": "integer"},
                    "tool_errors": {"type": "integer"},
                    "retries": {"type": "integer"},
                    "invocations": {
                        "type": "array",
                        "items": {"type": "object"},
                        "description": "each agent invocation: usage, cost, its calls and items in order",
                    },
                    "tree": {"type": "array", "items": {"type": "object"}, "description": "who ran whom"},
                    "notes": {"type": "array", "items": {"type": "object"}},
                    "spans": {"type": "array", "items": {"type": "object"}, "description": "timeline bars"},
                    "replay": STRING_OR_NULL,
                    "now": {"type": "number", "description": "the server's clock when read"},
                },
            },
        ]
    },
    "StartRun": {
        "type": "object",
        "properties": {
            "workflow": {
                "type": "string",
                "description": "The workflow's name; may be left out when one is served",
            },
            "inputs": {"type": "object"},
            "options": {
                "type": "object",
                "description": "Run options: model, agent_models, dry_run, stream, sandbox, yes, "
                "no_thinking, limits, overrides, decisions (wait or refuse), decide_within",
            },
        },
    },
    "Decide": {
        "type": "object",
        "properties": {
            "call": {
                **STRING_OR_NULL,
                "description": "The call id or ref (a ref names that request only: one decided, "
                "timed out or of an earlier attempt is refused); may be left out when one is pending",
            },
            "allow": {"type": ["boolean", "null"], "description": "An approval or a budget"},
            "answer": {**STRING_OR_NULL, "description": "A question"},
            "grant": {**NUMBER_OR_NULL, "description": "A budget: how much more of the limit"},
            "reason": {**STRING_OR_NULL, "description": "A denial's reason reaches the agent"},
            "user": {**STRING_OR_NULL, "description": "Who decided (recorded)"},
            "continue": {"type": "boolean", "default": True, "description": "Resume once nothing is pending"},
        },
    },
    "Accepted": {"type": "object", "properties": {"id": {"type": "string"}, "status": {"type": "string"}}},
    "Edits": {
        "type": "object",
        "description": "Manifest changes over the recorded --set's, as --set makes them",
        "properties": {
            "prompts": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "Agent name -> its new prompt (a Jinja2 template)",
            },
            "set": {
                "type": ["object", "array"],
                "description": "PATH -> value, or PATH=VALUE texts read as YAML",
            },
        },
    },
    "ReplayAnswer": {
        "type": "object",
        "properties": {
            "status": {"type": "string"},
            "recorded_status": {"type": "string"},
            "divergence": {
                "type": ["object", "null"],
                "description": "The first step the edits change: agent, agent_id, step, reason, message",
            },
            "differences": {"type": "array", "items": {"type": "string"}},
            "edits": {"type": "array", "items": {"type": "string"}},
            "id": {"type": "string", "description": "A fork: the new run"},
        },
    },
    "AgentAnswer": {
        "type": "object",
        "required": ["agent", "agent_id", "status", "said"],
        "properties": {
            "agent": {"type": "string"},
            "agent_id": {"type": "string", "description": "The instance path from the entry agent down"},
            "status": {"type": "string", "description": "Its end, or the run's state when it had not ended"},
            "said": {"type": "string", "description": "Its last answer in words (empty before one)"},
            "steps": {"type": "integer", "description": "Its model calls that answered"},
            "total_tokens": {"type": "integer"},
            "cost_usd": NUMBER_OR_NULL,
        },
    },
    "Cancelled": {
        "type": "object",
        "required": ["id", "status", "agents", "resumable"],
        "properties": {
            "id": {"type": "string"},
            "status": {"type": "string", "description": "cancelled (or how it ended, when it ended first)"},
            "message": STRING_OR_NULL,
            "total_tokens": {"type": "integer"},
            "cost_usd": {**NUMBER_OR_NULL, "description": "So far; null when no model of it has a price"},
            "usage": {"type": "object", "description": "usage.json's shape"},
            "agents": {"type": "array", "items": _ref("AgentAnswer")},
            "pending": {"type": "array", "items": _ref("PendingDecision")},
            "resumable": {"type": "boolean", "description": "POST /v1/runs/{id}/resume continues it"},
        },
    },
}


RUN_QUERY: list[Json] = [
    {"name": name, "in": "query", "required": False, "schema": schema, "description": text}
    for name, schema, text in (
        ("workflow", {"type": "string"}, "Only this workflow's runs"),
        ("status", {"type": "string"}, "Only these statuses (comma-separated or repeated)"),
        ("since", {"type": "string"}, "Started at or after: epoch seconds or ISO 8601"),
        ("until", {"type": "string"}, "Started before: epoch seconds or ISO 8601"),
        ("q", {"type": "string"}, "Text in the id, the workflow or the inputs"),
        ("limit", {"type": "integer", "default": 50, "maximum": 1000}, "Page size"),
        ("offset", {"type": "integer", "default": 0}, "Runs to skip"),
    )
]
EVENTS_PARAMS: list[Json] = [
    RUN_ID,
    {"name": "Last-Event-ID", "in": "header", "required": False, "schema": {"type": "integer"}},
    {"name": "after", "in": "query", "required": False, "schema": {"type": "integer"}},
    {"name": "format", "in": "query", "required": False, "schema": {"enum": ["json"]}},
]
FILE_PARAMS: list[Json] = [
    RUN_ID,
    {"name": "path", "in": "path", "required": True, "schema": {"type": "string"}},
]
BATCH_NAME: list[Json] = [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}]
WORKFLOW_NAME: list[Json] = [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}]
SESSION_QUERY: list[Json] = [
    {"name": name, "in": "query", "required": False, "schema": {"type": "string"}, "description": text}
    for name, text in (
        ("run", "A run id (repeat it)"),
        ("batch", "A batch's name (repeat it)"),
        ("eval", "An eval's name (repeat it)"),
    )
]
AGENT_QUERY: list[Json] = [
    RUN_ID,
    {"name": "agent_id", "in": "query", "required": True, "schema": {"type": "string"}},
]
COMPARE_QUERY: list[Json] = [
    {"name": side, "in": "query", "required": True, "schema": {"type": "string"}, "description": "A run id"}
    for side in ("a", "b")
]
AGENT_MEMORY_PARAMS: list[Json] = [
    *WORKFLOW_NAME,
    {"name": "agent", "in": "path", "required": True, "schema": {"type": "string"}},
]


def _object(**properties: object) -> Json:
    return {"type": "object", "properties": properties}


def _list_of(items: Json) -> Json:
    return {"type": "array", "items": items}


LISTING = _object(
    runs=_list_of(_ref("RunSummary")),
    total={"type": "integer"},
    offset={"type": "integer"},
    limit={"type": "integer"},
)
STARTED = _object(id={"type": "string"}, run={"type": "string"})
MEMORY_FILE = _object(
    path={"type": "string", "description": "as the memory tool names it: /memories/..."},
    size={"type": "integer"},
    modified={"type": "number", "description": "when it last changed, in seconds since the epoch"},
    sha256={"type": "string"},
    text={**STRING_OR_NULL, "description": "null: not UTF-8 text, or too large"},
)
AGENT_MEMORY = _object(
    agent={"type": "string"},
    memory={"type": "string", "description": "the memory's name (agents may share one)"},
    scope={"enum": ["run", "project", "local", "user"]},
    folder={"type": "string"},
    files=_list_of(MEMORY_FILE),
)
MEMORY_WRITE = _object(
    seq={"type": "integer"},
    agent={"type": "string"},
    agent_id={"type": "string"},
    call_id={"type": "string"},
    memory={"type": "string"},
    command={"type": "string"},
    path={"type": "string"},
    to=STRING_OR_NULL,
    before={**STRING_OR_NULL, "description": "sha256 of what it touched before (null: nothing)"},
    after={**STRING_OR_NULL, "description": "sha256 after (null: removed)"},
    status={"type": "string", "description": "its call's result: success, error, or unfinished"},
)
RUN_MEMORY = _object(
    memories={
        "type": "object",
        "description": "by memory name: scope, folder, copy (a dry run's), files (sha256 at the run's "
        "start), now (its files as they are)",
    },
    indexes=_list_of({"type": "object"}),
    writes=_list_of(MEMORY_WRITE),
)
A_FILE: Json = {"description": "The file", "content": {"*/*": {"schema": {"type": "string"}}}}
SSE: Json = {
    "description": "Server-sent events: `id: SEQ`, `event: TYPE`, `data: LINE` per event of "
    "events.jsonl, then `event: end` with the status (format=json: the whole log at once)",
    "content": {"text/event-stream": {"schema": {"type": "string"}}, JSON: {"schema": {"type": "object"}}},
}
ANY: Json = {"type": "object"}


@dataclass(frozen=True)
class Operation:
    """One route of the API as the document describes it."""

    route: str  # "METHOD PATH"
    operation_id: str
    summary: str
    answer: Json  # the success's response
    errors: tuple[int, ...]  # the error statuses it may answer (_errors)
    parameters: list[Json] | None = None
    body: str | None = None  # the request body's schema (a name in SCHEMAS)
    ok: str = "200"  # the status of a success


RUN: list[Json] = [RUN_ID]
OPERATIONS = (
    Operation(
        "get /v1/session",
        "session",
        "Whether a token is needed and the one sent is right; whether runs, batches and evals exist "
        "(answered without the token; always 200)",
        _json(ANY, "token_required, authorized, runs, batches, evals"),
        (),
        SESSION_QUERY,
    ),
    Operation(
        "get /v1/workflows",
        "listWorkflows",
        "The workflows this server runs, with their inputs",
        _json(ANY, "The workflows"),
        (401,),
    ),
    Operation(
        "get /v1/workflows/{name}/team",
        "workflowTeam",
        "The workflow's steps, agents and who may call whom, each agent's prompt as written",
        _json(ANY, "The team"),
        (401, 404),
        WORKFLOW_NAME,
    ),
    Operation(
        "get /v1/workflows/{name}/cost",
        "workflowCost",
        "The worst case of a run before anything is sent, and earlier runs' spread (flowrun cost)",
        _json(ANY, "The cost preview"),
        (400, 401, 404),
        WORKFLOW_NAME,
    ),
    Operation(
        "get /v1/runs",
        "listRuns",
        "List runs, newest first (from the runs index)",
        _json(LISTING, "A page of runs"),
        (400, 401),
        RUN_QUERY,
    ),
    Operation(
        "post /v1/runs",
        "startRun",
        "Start a run",
        _json(STARTED, "Started"),
        (400, 401, 404),
        body="StartRun",
        ok="201",
    ),
    Operation("get /v1/runs/{id}", "getRun", "One run", _json(_ref("RunDetail"), "The run"), (401, 404), RUN),
    Operation(
        "get /v1/runs/{id}/conversations",
        "runConversations",
        "Each agent's conversation, sub-agents nested under their calls",
        _json(ANY, "The conversations"),
        (401, 404),
        RUN,
    ),
    Operation(
        "get /v1/runs/{id}/replay",
        "runReplay",
        "The model steps of the run's replay beside its own, the first difference",
        _json(ANY, "The steps"),
        (401, 404),
        RUN,
    ),
    Operation(
        "post /v1/runs/{id}/replay",
        "replayWithEdits",
        "Replay the run offline with edits (nothing written beside it): the first step they change",
        _json(_ref("ReplayAnswer"), "Where the replay first differs"),
        (400, 401, 404, 409),
        RUN,
        body="Edits",
    ),
    Operation(
        "post /v1/runs/{id}/fork",
        "forkRun",
        "A new run: the replay with edits, going on live from the first step they change",
        _json(_ref("ReplayAnswer"), "The new run (id) and where it went live"),
        (400, 401, 404, 409),
        RUN,
        body="Edits",
        ok="201",
    ),
    Operation(
        "post /v1/runs/{id}/rerun",
        "rerun",
        "Start the run's workflow again with its options and its inputs (or `inputs`)",
        _json(STARTED, "Started"),
        (400, 401, 404, 409),
        RUN,
        ok="201",
    ),
    Operation(
        "get /v1/runs/{id}/agent",
        "runAgent",
        "One agent instance as it was asked: prompts, tools, turns with steps, whole tool results",
        _json(ANY, "The instance"),
        (401, 404),
        AGENT_QUERY,
    ),
    Operation(
        "get /v1/runs/{id}/team",
        "runTeam",
        "The team of the run's workflow (null, with the problem, when its file no longer loads)",
        _json(ANY, "team, problem"),
        (401, 404),
        RUN,
    ),
    Operation(
        "get /v1/runs/{id}/events",
        "runEvents",
        "The run's events, replayed then followed live",
        SSE,
        (400, 401, 404),
        EVENTS_PARAMS,
    ),
    Operation(
        "post /v1/runs/{id}/decisions",
        "decide",
        "Take a decision the run waits for",
        _json(ANY, "Recorded"),
        (400, 401, 404, 409),
        RUN,
        body="Decide",
    ),
    Operation(
        "post /v1/runs/{id}/cancel",
        "cancelRun",
        "Stop a run (it ends cancelled, resumable); answered once the stop is recorded",
        _json(_ref("Cancelled"), "Stopped: its partial result"),
        (401, 404, 409),
        RUN,
    ),
    Operation(
        "post /v1/runs/{id}/resume",
        "resumeRun",
        "Continue a stopped or waiting run from its log",
        _json(_ref("Accepted"), "Resumed"),
        (400, 401, 404, 409),
        RUN,
        ok="202",
    ),
    Operation(
        "get /v1/runs/{id}/files",
        "listFiles",
        "The run folder's files",
        _json(_object(files=_list_of(ANY)), "Path, size and mtime of each"),
        (401, 404),
        RUN,
    ),
    Operation(
        "get /v1/runs/{id}/files/{path}",
        "getFile",
        "One file of the run folder (read-only; never outside it)",
        A_FILE,
        (401, 404),
        FILE_PARAMS,
    ),
    Operation(
        "get /v1/workers",
        "listWorkers",
        "The queue's workers, their runs and last heartbeat (none when the server runs its runs)",
        _json(_object(workers=_list_of(ANY)), "The workers"),
        (401,),
    ),
    Operation(
        "get /v1/runs/{id}/memory",
        "runMemory",
        "The run's memories (their state at its start and now), each prompt's index and the writes it made",
        _json(RUN_MEMORY, "The memories"),
        (401, 404),
        RUN,
    ),
    Operation(
        "get /v1/workflows/{name}/memory/{agent}",
        "agentMemory",
        "An agent's memory: its files as they are",
        _json(AGENT_MEMORY, "The memory"),
        (400, 401, 404),
        AGENT_MEMORY_PARAMS,
    ),
    Operation(
        "get /v1/batches",
        "listBatches",
        "The batch folders beside the runs folder",
        _json(_object(batches=_list_of(ANY)), "The batches"),
        (401,),
    ),
    Operation(
        "get /v1/batches/{name}",
        "getBatch",
        "One batch: items, counts, cost over time",
        _json(ANY, "The batch"),
        (401, 404),
        BATCH_NAME,
    ),
    Operation(
        "get /v1/evals",
        "listEvals",
        "The eval folders beside the runs folder (evals/NAME), each with its variants",
        _json(_object(evals=_list_of(ANY)), "The evals"),
        (401,),
    ),
    Operation(
        "get /v1/evals/{name}",
        "getEval",
        "One eval: its variants and each case's run per variant (ids EVAL:VARIANT:RUN)",
        _json(ANY, "The eval"),
        (401, 404),
        BATCH_NAME,
    ),
    Operation(
        "get /v1/compare",
        "compareRuns",
        "Two runs side by side: facts, per agent, model steps paired and the first that differs",
        _json(ANY, "a, b, agents, steps, first_difference"),
        (400, 401, 404),
        COMPARE_QUERY,
    ),
    Operation("get /openapi.json", "openapi", "This document", _json(ANY, "OpenAPI 3.1"), (401,)),
)


def _paths() -> Json:
    """The `paths` of the document, from OPERATIONS."""
    paths: dict[str, Json] = {}
    for op in OPERATIONS:
        entry: Json = {"summary": op.summary, "operationId": op.operation_id}
        if op.parameters is not None:
            entry["parameters"] = op.parameters
        if op.body is not None:
            entry["requestBody"] = {"required": True, "content": {JSON: {"schema": _ref(op.body)}}}
        entry["responses"] = _responses(op.ok, op.answer, *op.errors)
        method, path = op.route.split(" ", 1)
        paths.setdefault(path, {})[method] = entry
    return dict(paths)


def document() -> Json:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "flowrun runs API",
            "version": __version__,
            "description": "Start, follow, decide and resume flowrun runs (docs/reference/http-api.md).",
        },
        "paths": _paths(),
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{}, {"bearer": []}],  # the token: required off loopback
    }
