"""`flowrun eval` wall time: an eval of N cases (default 200) at concurrency 20 and 200 ms model
latency, against the scripted wire server (tests/wire_server.py) in a process of its own, through
the real `openai` SDK, with one LLM judge per case.

Each case's run is one agent making two model calls (a write_file call, then its answer) and its
grading one judge call, so the eval makes 3 x N calls of `latency` each; at `concurrency` calls
at once the ideal wall time is 3 x N x latency / concurrency (6 s for the defaults). The eval
runs as the command line does (`flowrun eval ... --concurrency 20`, a fresh process: start-up,
loading the manifests, the batch, the grading and the reports included), and its wall time is
printed against that ideal (target: within 1.5x).

Run: python bench/eval.py [--cases 200] [--concurrency 20] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET = 1.5  # wall time within this factor of the ideal

WORKFLOW = """\
version: 1
kind: workflow
name: bench
inputs:
  question: {description: the question}
models:
  m: {provider: openai-compatible, base_url: BASE_URL, model: m, stream: false}
default_model: m
entry: answerer
task: "Question: {{ question }}"
output: answer.md
"""
AGENT = """\
version: 1
kind: agent
name: answerer
prompt: You answer questions.
tools: [write_file]
"""
EVALSET = """\
version: 1
kind: evalset
name: bench
workflow: bench.yaml
dataset: cases.jsonl
graders:
  - output: {contains: "42"}
  - status: completed
  - trajectory: {called: [write_file]}
  - judge: {model: m, rubric: "Is {{ output }} the answer to {{ inputs.question }}?"}
"""


def start_server(folder: Path, latency: float) -> tuple[subprocess.Popen[str], str]:
    script = {
        "agents": {
            "answerer": [
                {
                    "tool_calls": [
                        {"name": "write_file", "arguments": {"path": "answer.md", "content": "42\n"}}
                    ],
                    "delay_s": latency,
                },
                {"text": "answered", "delay_s": latency},
            ],
            "judge": [{"text": json.dumps({"score": 1, "reason": "right"}), "delay_s": latency}],
        },
        "match": {"answerer": "You answer questions", "judge": "You are the judge"},
    }
    path = folder / "script.json"
    path.write_text(json.dumps(script))
    server = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "wire_server.py"), "--script", str(path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="flowrun-bench-eval-") as tmp:
        folder = Path(tmp)
        server, url = start_server(folder, args.latency)
        try:
            (folder / "agents.d").mkdir()
            (folder / "agents.d" / "answerer.yaml").write_text(AGENT)
            (folder / "bench.yaml").write_text(WORKFLOW.replace("BASE_URL", url + "/v1"))
            (folder / "bench.eval.yaml").write_text(EVALSET)
            cases = "".join(
                json.dumps({"id": f"c{i}", "inputs": {"question": f"question {i}"}}) + "\n"
                for i in range(args.cases)
            )
            (folder / "cases.jsonl").write_text(cases)
            command = [str(Path(sys.executable).parent / "flowrun"), "eval", "bench.eval.yaml"]
            command += ["--concurrency", str(args.concurrency), "--json", "report.json", "--out", "out", "-q"]
            env = {**os.environ, "OPENAI_API_KEY": "bench"}
            start = time.perf_counter()
            done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, check=False)
            wall = time.perf_counter() - start
        finally:
            server.terminate()
            server.wait()
        if done.returncode != 0:
            raise SystemExit(
                f"the eval failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
            )
        report = json.loads((folder / "report.json").read_text())
    variant = report["variants"][0]
    ideal = 3 * args.cases * args.latency / args.concurrency
    latency_ms = args.latency * 1000
    print(f"flowrun eval: {args.cases} cases, concurrency {args.concurrency}, {latency_ms:.0f} ms latency")
    print(f"  score {variant['score']:.3f}, {len(variant['runs'])} runs graded, one judge call each")
    ratio = wall / ideal
    verdict = "OK" if ratio <= TARGET else "ABOVE TARGET"
    print(f"  wall time {wall:.2f} s; ideal {ideal:.2f} s (3 calls a case)")
    print(f"  {ratio:.2f}x the ideal ({verdict}: <= {TARGET}x)")


if __name__ == "__main__":
    main()
