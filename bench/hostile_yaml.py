"""What hostile manifests cost `flowrun validate`: for each case, the time spent on the file
(the process's time minus that of validating a one-line manifest) and the process's peak
memory, measured in a child process per case.

Run: python bench/hostile_yaml.py   (targets: each refused well under 1 s and under 100 MB)
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 3
LOL = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
BOMB = LOL + "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)
CASES = {
    "one line (baseline)": "kind: agent\n",
    "billion laughs (9^9 values)": "kind: agent\n" + BOMB,
    "1000-deep block nesting": "kind: agent\n" + "".join(" " * i + f"k{i}:\n" for i in range(1000)),
    "100,000-deep flow nesting": "kind: agent\nx: " + "[" * 100_000 + "]" * 100_000 + "\n",
    "40,000 keys": "kind: agent\nvars:\n" + "".join(f"  k{i}: v\n" for i in range(40_000)),
    "50 MB file": None,  # written below without building it in memory twice
}


def command() -> list[str]:
    script = Path(sys.executable).parent / "flowrun"
    return [str(script)] if script.exists() else [shutil.which("flowrun") or "flowrun"]


# runs the command and prints its peak RSS (KB): a fresh parent per case, so peaks do not mix
WRAP = (
    "import resource, subprocess, sys; subprocess.run(sys.argv[1:], capture_output=True); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def measure(path: Path) -> tuple[float, float]:
    """(median wall seconds, peak RSS in MB) of `flowrun validate PATH`."""
    times, peaks = [], []
    for _ in range(RUNS):
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", WRAP, *command(), "validate", str(path)],
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(time.perf_counter() - start)
        peaks.append(int(done.stdout.strip()) / 1024)
    return statistics.median(times), max(peaks)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for name, text in CASES.items():
            path = Path(tmp) / f"{len(results)}.yaml"
            if text is None:
                with path.open("w") as f:
                    f.write("kind: agent\nprompt: '")
                    for _ in range(50):
                        f.write("x" * 1_000_000)
                    f.write("'\n")
            else:
                path.write_text(text)
            results[name] = measure(path)
    base = results["one line (baseline)"][0]
    print(f"{'case':<30} {'extra time':>11} {'peak memory':>12}")
    for name, (seconds, peak) in results.items():
        extra = "" if name.startswith("one line") else f"{(seconds - base) * 1000:+.0f} ms"
        print(f"{name:<30} {extra:>11} {peak:>9.0f} MB")
    print(f"(process start-up and validating a one-line manifest: {base * 1000:.0f} ms)")


if __name__ == "__main__":
    main()
