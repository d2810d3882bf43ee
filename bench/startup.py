"""Median wall time of `import flowrun`, `flowrun --help` and `flowrun validate examples/` over
10 runs each, whole processes; validate after one warm-up run (the check cache is warm).

Run: python bench/startup.py   (targets: import under 150 ms, --help under 100 ms, validate
under 200 ms with a warm cache)

flowrun's bytecode is compiled first, as `pip install` does (see bench/cold.py); `--no-compile`
leaves that to the environment.
"""

from __future__ import annotations

import os
import resource
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


def median_seconds(argv: list[str]) -> tuple[float, float]:
    """(median wall time, median CPU time) of `argv` as a whole process. On a busy machine the
    CPU time (user + system) is the steadier figure: the wall time adds waiting for a core."""
    times, cpu = [], []
    for _ in range(RUNS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, cwd=REPO, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(times), statistics.median(cpu)


def main() -> None:
    if "--no-compile" not in sys.argv[1:]:
        import compileall

        import flowrun

        compileall.compile_dir(Path(flowrun.__file__).parent, quiet=1)
    print(f"load average {os.getloadavg()[0]:.1f} (other processes wanting the cores stretch wall times)")
    for label, argv, target in (
        ("import flowrun", [sys.executable, "-c", "import flowrun"], 150),
        ("flowrun --help", [*command(), "--help"], 100),
        ("flowrun validate examples/", [*command(), "validate", "examples/"], 200),
    ):
        subprocess.run(argv, cwd=REPO, capture_output=True, check=False)  # warm-up
        wall, cpu = median_seconds(argv)
        ms = wall * 1000
        verdict = "OK" if ms <= target else "ABOVE TARGET"
        print(
            f"{label:<28} median {ms:7.1f} ms wall, {cpu * 1000:6.1f} ms CPU over {RUNS} runs "
            f"(target <= {target} ms) {verdict}"
        )


if __name__ == "__main__":
    main()
