"""flowrun: a declarative engine for LLM agent teams.

The public API (see flowrun.api) is imported on first use, so `import flowrun` stays fast:

    import flowrun
    wf = flowrun.load("examples/research.yaml")
    result = wf.run_sync({"question": "..."}, dry_run=True)  # or flowrun.RunOptions(dry_run=True)
    summary = asyncio.run(flowrun.run_batch(wf, "questions.jsonl", concurrency=20))
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from flowrun import collector
from flowrun._version import __version__
from flowrun.manifest import unions

# the built-in kinds are registered when a manifest that holds one is first read, not at import
# (`flowrun --help`, and validate answering from its check cache, read none)
unions.on_first_use(lambda: import_module("flowrun.runtime.kinds"), "implementation", "step", "context")
unions.on_first_use(lambda: import_module("flowrun.evals.grader_kinds"), "grader")

if TYPE_CHECKING:
    from flowrun.api import (
        AgentAnswer,
        EventStream,
        ReplayResult,
        RunHandle,
        RunResult,
        Workflow,
        load,
        read_result,
        replay,
        resume,
    )
    from flowrun.batch import BatchProgress, BatchSummary, ItemResult, run_batch
    from flowrun.errors import (
        BudgetExceeded,
        FlowrunError,
        ManifestError,
        ProviderError,
        RunError,
        RunInUse,
        SandboxError,
        UsageError,
    )
    from flowrun.manifest.diagnostics import Diagnostic, ManifestInvalid
    from flowrun.queue.submit import submit
    from flowrun.runtime.decide import expire_decisions, pending_decisions, respond
    from flowrun.runtime.durable.decisions import Decision, PendingDecision
    from flowrun.runtime.durable.runs_index import RunEntry, RunList, list_runs
    from flowrun.runtime.loop.approvals import ApprovalRequest
    from flowrun.runtime.options import RunOptions

_EXPORTS = {
    "load": "flowrun.api",
    "resume": "flowrun.api",
    "replay": "flowrun.api",
    "Workflow": "flowrun.api",
    "RunResult": "flowrun.api",
    "RunHandle": "flowrun.api",
    "AgentAnswer": "flowrun.api",
    "read_result": "flowrun.api",
    "ReplayResult": "flowrun.api",
    "EventStream": "flowrun.api",
    "run_batch": "flowrun.batch",
    "BatchSummary": "flowrun.batch",
    "BatchProgress": "flowrun.batch",
    "ItemResult": "flowrun.batch",
    "FlowrunError": "flowrun.errors",
    "ManifestError": "flowrun.errors",
    "UsageError": "flowrun.errors",
    "RunError": "flowrun.errors",
    "RunInUse": "flowrun.errors",
    "ProviderError": "flowrun.errors",
    "BudgetExceeded": "flowrun.errors",
    "SandboxError": "flowrun.errors",
    "ApprovalRequest": "flowrun.runtime.loop.approvals",
    "respond": "flowrun.runtime.decide",
    "pending_decisions": "flowrun.runtime.decide",
    "expire_decisions": "flowrun.runtime.decide",
    "PendingDecision": "flowrun.runtime.durable.decisions",
    "Decision": "flowrun.runtime.durable.decisions",
    "list_runs": "flowrun.runtime.durable.runs_index",
    "RunEntry": "flowrun.runtime.durable.runs_index",
    "RunList": "flowrun.runtime.durable.runs_index",
    "RunOptions": "flowrun.runtime.options",
    "submit": "flowrun.queue.submit",
    "ManifestInvalid": "flowrun.manifest.diagnostics",
    "Diagnostic": "flowrun.manifest.diagnostics",
}

__all__ = [
    "AgentAnswer",
    "ApprovalRequest",
    "BatchProgress",
    "BatchSummary",
    "BudgetExceeded",
    "Decision",
    "Diagnostic",
    "EventStream",
    "FlowrunError",
    "ItemResult",
    "ManifestError",
    "ManifestInvalid",
    "PendingDecision",
    "ProviderError",
    "ReplayResult",
    "RunEntry",
    "RunError",
    "RunHandle",
    "RunInUse",
    "RunList",
    "RunOptions",
    "RunResult",
    "SandboxError",
    "UsageError",
    "Workflow",
    "__version__",
    "expire_decisions",
    "list_runs",
    "load",
    "pending_decisions",
    "read_result",
    "replay",
    "respond",
    "resume",
    "run_batch",
    "submit",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'flowrun' has no attribute {name!r}")
    with collector.paused():  # the API's import: what it makes is kept for good (collector.py)
        value = getattr(import_module(module), name)
    globals()[name] = value
    return value
