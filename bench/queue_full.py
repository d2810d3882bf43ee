"""The queue's acceptance at the issue's full size (figures printed; the checks are the tests'):
CI runs tests/test_queue.py and tests/test_queue_postgres.py with fewer runs (40 and 24) to
stay fast on two cores; this runs the same tests with the issue's counts, so what they check
(every run completed exactly once, its log whole, the runs list and every event stream right,
no recorded model answer asked again after a worker's SIGKILL, a tool's shell never run twice,
SSE going on at the other instance, a decision through either instance) holds at that size:

1. embedded: `serve http --workers 2` with 100 runs through the API, over both wire formats;
2. Postgres: two `serve http --queue` instances and three workers on a throw-away cluster, 300
   runs with workers SIGKILLed in model and tool calls, over both wire formats.

Run: python bench/queue_full.py [--embedded 100] [--postgres 300]   (0: that part not run)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EMBEDDED = "tests/test_queue.py::test_two_workers_complete_every_run_once_with_the_list_and_sse_right"
POSTGRES = "tests/test_queue_postgres.py"


def run_tests(target: str, runs: int) -> bool:
    """The tests of `target` in one process (no xdist: they are the only load) with `runs`."""
    env = {**os.environ, "FLOWRUN_QUEUE_TEST_RUNS": str(runs)}
    kept = Path(tempfile.mkdtemp(prefix="flowrun-queue-full-"))  # the run folders, for a failure
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-n",
        "0",
        "-p",
        "no:cacheprovider",
        f"--basetemp={kept}",
        target,
    ]
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "(no output)"
    print(f"{target} with {runs} runs: {last} (wall {wall:.0f} s)")
    if done.returncode != 0:
        print(done.stdout[-6000:], done.stderr[-2000:], f"the run folders: {kept}", sep="\n")
    else:
        shutil.rmtree(kept, ignore_errors=True)
    return done.returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedded", type=int, default=100, help="runs of the embedded test")
    parser.add_argument("--postgres", type=int, default=300, help="runs of the Postgres tests")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    parts = [(EMBEDDED, args.embedded), (POSTGRES, args.postgres)]
    passed = [run_tests(target, runs) for target, runs in parts if runs > 0]  # 0: that part skipped
    sys.exit(0 if all(passed) else 1)


if __name__ == "__main__":
    main()
