"""Generated run folders for the runs index benchmark (bench/http_api.py) and its tests
(tests/test_runs_index.py): N folders as the runtime leaves them (run.json, usage.json, a short
events.jsonl), with a mix of workflows and statuses and start times spread over 30 days."""

from __future__ import annotations

import json
import time
from pathlib import Path

STATUSES = ("completed", "completed", "completed", "failed", "waiting", "interrupted", "max_steps")
WORKFLOWS = ("research", "review", "triage", "summarize")


def generate(runs_dir: Path, n: int, now: float | None = None) -> None:
    """Write `n` run folders under `runs_dir` (created)."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    now = time.time() if now is None else now
    for i in range(n):
        run_id = f"run-{i:06d}"
        folder = runs_dir / run_id
        folder.mkdir()
        workflow = WORKFLOWS[i % len(WORKFLOWS)]
        status = STATUSES[i % len(STATUSES)]
        started = now - (n - i) * (30 * 86400 / n)
        usage = {
            "total_tokens": 150,
            "total_cost_usd": 0.0012,
            "by_agent_model": [
                {
                    "agent": "boss",
                    "model": "m",
                    "calls": 2,
                    "usage": {
                        "input_tokens": 100,
                        "output_tokens": 50,
                        "cache_read_tokens": 0,
                        "cache_write_tokens": 0,
                    },
                    "cost_usd": 0.0012,
                }
            ],
        }
        inputs = {"question": f"question number {i}"}
        options = {"model": None, "dry_run": i % 5 == 0, "decisions": "wait"}
        meta = {
            "run_id": run_id,
            "workflow": workflow,
            "workflow_file": f"/nowhere/{workflow}.yaml",
            "inputs": inputs,
            "status": status,
            "options": options,
            "output": None,
            "updated": started + 5,
        }
        if status == "waiting":
            meta["pending"] = [{"kind": "approval", "call_id": "c1", "tool": "write_file"}]
        events = [
            {"seq": 1, "t": started, "type": "run_start", "workflow": workflow, "inputs": inputs},
            {"seq": 2, "t": started + 2, "type": "agent_start", "agent": "boss", "agent_id": "boss"},
            {"seq": 3, "t": started + 5, "type": "run_end", "status": status, "usage": usage},
        ]
        (folder / "run.json").write_text(json.dumps(meta))
        (folder / "usage.json").write_text(json.dumps(usage))
        (folder / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
