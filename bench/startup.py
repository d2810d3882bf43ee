"""Median wall time of `flowrun --help` and `flowrun validate examples/` over 10 runs each.

Run: python bench/startup.py   (target: both under 0.3 s)
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUNS = 10


def command() -> list[str]:
    script = Path(sys.executable).parent / "flowrun"
    if script.exists():
        return [str(script)]
    found = shutil.which("flowrun")
    return [found] if found else [sys.executable, "-m", "flowrun"]


def median_seconds(args: list[str]) -> float:
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run([*command(), *args], cwd=REPO, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    for label, args in (
        ("flowrun --help", ["--help"]),
        ("flowrun validate examples/", ["validate", "examples/"]),
    ):
        print(f"{label:<28} median {median_seconds(args) * 1000:7.1f} ms over {RUNS} runs (target < 300 ms)")


if __name__ == "__main__":
    main()
