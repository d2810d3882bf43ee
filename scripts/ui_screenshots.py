"""The screenshots of docs/how-to/web-ui.md, made from real runs: dry runs of
examples/research.yaml (the test model calls every tool of every agent once, offline) in a
temporary folder, `flowrun ui` serving them, and Playwright driving Debian's `chromium` through
the pages as a person would. Run it from the repository after changing the pages:

    .venv/bin/python scripts/ui_screenshots.py            # writes docs/assets/web-ui-*.png
    .venv/bin/python scripts/ui_screenshots.py --out DIR  # elsewhere
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
RESEARCH = REPO / "examples" / "research.yaml"
QUESTIONS = ("How do Python's sorting functions work?", "What makes a hash table fast?")


def flowrun(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    found = subprocess.run(
        [sys.executable, "-m", "flowrun", *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    if found.returncode != 0:
        raise SystemExit(f"flowrun {' '.join(args)} failed:\n{found.stderr}")
    return found


def make_runs(root: Path) -> Path:
    runs = root / "runs"
    for i, question in enumerate(QUESTIONS):
        flowrun(str(RESEARCH), "--question", question, "--dry-run", "--run-id", f"research-{i + 1}",
                "--runs-dir", str(runs), "-q", cwd=root)  # fmt: skip
    return runs


def serve(root: Path, runs: Path) -> tuple[subprocess.Popen[str], str]:
    command = ["ui", "--port", "0", "--runs-dir", str(runs), "--dry-run", str(RESEARCH)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "flowrun", *command],
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    first = proc.stderr.readline()
    port = re.search(r"http://[^\s/]+:(\d+)", first)
    if port is None:
        proc.kill()
        raise SystemExit(f"flowrun ui did not start: {first}{proc.stderr.read()}")
    return proc, f"http://127.0.0.1:{port.group(1)}"


def shoot(url: str, out: Path) -> list[Path]:
    from playwright.sync_api import expect, sync_playwright

    made: list[Path] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1440, "height": 960})

        def save(name: str, target: Any = None, full: bool = False) -> None:
            path = out / f"web-ui-{name}.png"
            if target is None:
                page.screenshot(path=str(path), full_page=full)
            else:
                target.screenshot(path=str(path))
            made.append(path)

        page.goto(f"{url}/")
        expect(page.locator("tr.run-row")).to_have_count(len(QUESTIONS))
        save("runs")

        page.goto(f"{url}/runs/research-1")
        page.wait_for_selector(".run-view[data-status='completed']")
        timeline = page.get_by_role("region", name="Timeline", exact=True)
        timeline.get_by_role("button", name=re.compile(r"^web_search, searcher")).click()
        page.get_by_role("region", name="Details").locator(".result-text").wait_for()
        save("run")
        save("team", page.get_by_role("region", name="Team", exact=True))

        page.get_by_role("button", name="Replay with edits").click()
        edits = page.get_by_role("region", name="Replay with edits")
        edits.get_by_label("Agent whose prompt to change").select_option("writer")
        edits.get_by_role("textbox", name="Prompt").fill("You are the writer. Keep the report to one page.")
        edits.get_by_role("button", name="Replay offline").click()
        edits.locator(".first-changed").wait_for()
        save("replay-edits", edits)

        page.goto(f"{url}/compare?a=research-1&b=research-2")
        page.locator(".first-difference").wait_for()
        save("compare")

        page.goto(f"{url}/new")
        page.get_by_role("region", name="Cost preview").get_by_role("table").wait_for()
        save("start")

        phone = browser.new_page(viewport={"width": 390, "height": 844})
        phone.goto(f"{url}/")
        expect(phone.locator("tr.run-row")).to_have_count(len(QUESTIONS))
        path = out / "web-ui-runs-phone.png"
        phone.screenshot(path=str(path))
        made.append(path)
        browser.close()
    return made


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "assets")
    out: Path = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="flowrun-shots-") as folder:
        root = Path(folder)
        runs = make_runs(root)
        proc, url = serve(root, runs)
        try:
            made = shoot(url, out)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    for path in made:
        print(f"wrote {path.relative_to(REPO) if path.is_relative_to(REPO) else path}")


if __name__ == "__main__":
    main()
