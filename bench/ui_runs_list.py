"""The web UI's runs list over many run folders, in a real headless Chromium: the time from a
filter's change (status, then workflow, then a search) to the page showing the filtered rows,
and from the page's load to its first rows. The issue's target: under a second for 2,000 runs.

The folders are generated as the runtime leaves them (run.json, usage.json, events.jsonl); the
server is `flowrun ui` (the runs API with its SQLite index, and the pages).

Run: python bench/ui_runs_list.py [--runs 2000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from test_ui_browser import CHROMIUM, generate_runs  # noqa: E402  (tests/ is on the path above)


def start_server(runs_dir: Path) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "flowrun", "ui", "--runs-dir", str(runs_dir), "--port", "0"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    said = ""
    for line in proc.stderr:
        said += line
        if line.startswith("the web UI: "):
            return proc, line.split()[-1].split("/#")[0].rstrip("/")
    raise SystemExit(f"the server did not start: {said}")


def timed(page: object, action: object, total: int) -> float:
    began = time.perf_counter()
    action()  # type: ignore[operator]
    page.wait_for_selector(f".runs-total[data-total='{total}']", timeout=60_000)  # type: ignore[attr-defined]
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        runs_dir = Path(tmp) / "runs"
        generate_runs(runs_dir, args.runs)
        failed = len(range(1, args.runs, 4))  # generate_runs: status i % 4 == 1 is failed
        failed_early = len(range(1, min(args.runs, 1000), 4))  # ... and named run-00xxx
        proc, url = start_server(runs_dir)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                page = browser.new_page()
                loads, filters = [], []
                for _ in range(args.repeat):
                    loads.append(timed(page, lambda: page.goto(url + "/"), args.runs))
                    filters.append(
                        timed(page, lambda: page.select_option("select.filter-status", "failed"), failed)
                    )
                    filters.append(timed(page, lambda: page.fill("input.filter-q", "run-00"), failed_early))
                browser.close()
        finally:
            proc.terminate()
            proc.communicate(timeout=10)
    print(f"{args.runs} runs, flowrun ui")
    print(f"  first page of the list:  median {statistics.median(loads):.3f} s  max {max(loads):.3f} s")
    print(f"  a filter applied:        median {statistics.median(filters):.3f} s  max {max(filters):.3f} s")
    print(f"  target: under 1 s -> {'met' if max(filters) < 1 else 'NOT met'}")


if __name__ == "__main__":
    main()
