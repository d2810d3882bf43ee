"""How much the dashboard and compact strategies shrink the prompt of a long research run.

The same scripted 60-step run of a research_v2-style agent, three times: with `context: full`
every step's tool result stays in the history; with `context: dashboard` the agent rewrites its
current dashboard every 10 steps, which restarts its history from the system prompt and the
dashboards; with `context: compact` older turns are summarised into a workspace file whenever the
prompt passes 30% of the model's context window (the summary calls are counted as model calls).
Each step reads a page of the offline corpus (examples/corpus, 5-45 kB each); the last step calls
all_finished. Printed: the largest prompt the agent sent, measured at the scripted wire server
(tests/support/wire_server.py) as characters of the request's messages, with a rough token count (chars / 4).

Run: python bench/context.py [--steps 60] [--every 10]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from support.wire_server import Reply, ToolCallSpec, WireRequest, WireServer  # noqa: E402

CORPUS = REPO / "examples" / "corpus"
MAX_PAGE_BYTES = 45_000
DONE_STEPS = re.compile(r"Completed steps: (\d+)")

WORKFLOW = """\
version: 1
kind: workflow
name: context_MODE
models:
  m: {provider: openai, model: bench, api_key_env: BENCH_KEY, stream: false}
default_model: m
entry: reader_MODE
task: Research the Python documentation in corpus/ and report on it.
workspace:
  copy: [corpus]
  files:
    overall_dashboard.md: "# Overall dashboard\\n\\nBlueprint: read the corpus page by page.\\n"
    current_dashboard.md: "# Current dashboard\\n\\nCompleted steps: 0\\n"
"""
AGENT = """\
version: 1
kind: agent
name: reader_MODE
prompt: You are the bench reader (context MODE). Read pages, keep notes, finish with all_finished.
max_steps: 1000
context: CONTEXT
stop: {on_text: false}
tools: [read_file, update_dashboard, all_finished]
"""

# each strategy takes only its own keys
CONTEXTS = {
    "full": "{strategy: full}",
    "dashboard": "{strategy: dashboard, dashboards: "
    "{overall: overall_dashboard.md, current: current_dashboard.md}}",
    "compact": "{strategy: compact, compact_at: 0.3}",
}


def pages() -> list[str]:
    """Corpus pages small enough for one read_file call, as workspace paths."""
    found = [p for p in sorted(CORPUS.rglob("*.md")) if p.stat().st_size <= MAX_PAGE_BYTES]
    return [f"corpus/{p.relative_to(CORPUS).as_posix()}" for p in found if p.parent != CORPUS]


def make_project(folder: Path) -> dict[str, Path]:
    (folder / "agents.d").mkdir(parents=True, exist_ok=True)
    (folder / "corpus").symlink_to(CORPUS, target_is_directory=True)
    workflows = {}
    for mode in ("full", "dashboard", "compact"):
        (folder / f"context_{mode}.yaml").write_text(WORKFLOW.replace("MODE", mode))
        agent = AGENT.replace("CONTEXT", CONTEXTS[mode]).replace("MODE", mode)
        (folder / "agents.d" / f"reader_{mode}.yaml").write_text(agent)
        workflows[mode] = folder / f"context_{mode}.yaml"
    return workflows


class Responder:
    """Step k of the run: read a page; in dashboard mode every `every`-th step rewrites the
    current dashboard instead; the last step finishes. After a dashboard reset the step count
    comes from the dashboard text, so replies stay a pure function of the request."""

    def __init__(self, steps: int, every: int) -> None:
        self.steps = steps
        self.every = every
        self.pages = pages()

    def __call__(self, request: WireRequest) -> Reply:
        if "You compress the earlier part" in request.system:  # a `compact` summary request
            transcript = _first_user_text(request)
            prior = DONE_STEPS.findall(transcript)
            done = (int(prior[-1]) if prior else 0) + transcript.count("### assistant")
            return Reply(text=f"Completed steps: {done}\nNotes: pages read so far.")
        dashboard = "(context dashboard)" in request.system
        step = request.assistant_turns
        if dashboard or "(context compact)" in request.system:
            # after a reset or a compaction the steps done so far are stated in a user turn
            found = DONE_STEPS.findall(_user_texts(request))
            step += int(found[-1]) if found else 0
        if step >= self.steps - 1:
            return Reply(tool_calls=[ToolCallSpec("all_finished", {"result": "read the corpus"})])
        if dashboard and step % self.every == self.every - 1:
            content = f"# Current dashboard\n\nCompleted steps: {step + 1}\nNotes: pages read so far.\n"
            return Reply(
                tool_calls=[ToolCallSpec("update_dashboard", {"name": "current", "content": content})]
            )
        page = self.pages[step % len(self.pages)]
        return Reply(tool_calls=[ToolCallSpec("read_file", {"path": page})])


def _user_texts(request: WireRequest) -> str:
    users = [m.get("content", "") for m in request.messages if m.get("role") == "user"]
    return "\n".join(c if isinstance(c, str) else json.dumps(c) for c in users)


def _first_user_text(request: WireRequest) -> str:
    user = next((m for m in request.messages if m.get("role") == "user"), {})
    content = user.get("content", "")
    return content if isinstance(content, str) else json.dumps(content)


def run_once(workflow: Path, runs: Path) -> None:
    import flowrun

    result = flowrun.load(workflow).run_sync({}, run_dir=runs / f"r{time.time_ns()}")
    if result.status != "completed":
        raise SystemExit(f"bench run failed: {result.status}: {result.message}")


def largest_prompt(requests: list[WireRequest]) -> tuple[int, int]:
    """(characters of the largest request's messages, number of requests)."""
    sizes = [len(json.dumps(r.messages, ensure_ascii=False)) for r in requests]
    return max(sizes), len(sizes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--every", type=int, default=10, help="dashboard update every N steps")
    args = parser.parse_args()
    os.environ["BENCH_KEY"] = "bench-key"
    results: dict[str, tuple[int, int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        workflows = make_project(Path(tmp) / "p")
        for mode, workflow in workflows.items():
            with WireServer(Responder(args.steps, args.every)) as server:
                os.environ["OPENAI_BASE_URL"] = server.openai_base_url
                run_once(workflow, Path(tmp) / "runs")
                results[mode] = largest_prompt(server.requests)
    print(f"{args.steps}-step scripted research run; largest prompt the agent sent (messages only):")
    for mode, (chars, calls) in results.items():
        print(f"  context {mode:<9}  {chars:>10,} chars  ~{chars // 4:>8,} tokens  ({calls} model calls)")
    full, dash, compact = results["full"][0], results["dashboard"][0], results["compact"][0]
    print(f"dashboard / full = {dash / full:.3f} (updates every {args.every} steps)")
    print(f"compact / full = {compact / full:.3f} (older turns summarised at 30% of a 128k window)")


if __name__ == "__main__":
    main()
