"""What the web UI's browser tests share: a headless Chromium (Playwright driving Debian's
`chromium`; one per test module), a tab per test that fails the test on any console error or
uncaught exception of the pages, `flowrun ui` on a free port, a Gate that holds model requests at
the wire server until the test lets them through, and the small projects the tests run. A pytest
plugin (tests/conftest.py): the fixtures `browser`, `tabs`, `page` and `api_server` need no
import."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.cli import popen_cli, run_cli
from support.env import model_env, under_ci
from support.paths import REPO
from support.project import model, wire_script, workflow, write_project
from support.served import Served
from support.wire_server import Reply, Responder, ToolCallSpec, WireRequest, WireServer, calls

CHROMIUM = "/usr/bin/chromium"
SHOTS = REPO / "test-output" / "ui"
WAIT_MS = 30_000
XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2"> **bold** done'


def _browser_or_reason() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing: apt-get install -y chromium (Debian's package)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is missing: pip install -e '.[dev]'"
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    reason = _browser_or_reason()
    if reason is not None:
        if under_ci():
            pytest.fail(f"the browser tests cannot run in CI: {reason} (.ci/run installs it)")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


class Tab:
    """A browser context and its page, with what the pages said on the console."""

    def __init__(self, browser: Any, width: int = 1280, height: int = 900, strict: bool = False) -> None:
        # without the pages' Content-Security-Policy unless `strict`, so that the escaping itself
        # is what is tested (and Playwright may evaluate its waiting conditions)
        self.context = browser.new_context(viewport={"width": width, "height": height}, bypass_csp=not strict)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.expected: list[str] = []  # console lines a test causes on purpose (see expect_console)
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(f"console: {m.text}"))
        OPEN[id(self.page)] = self

    def unexpected(self) -> list[str]:
        return [e for e in self.errors if not any(words in e for words in self.expected)]


OPEN: dict[int, Tab] = {}  # the open tabs by their page


def expect_console(page: Any, words: str) -> None:
    """A console error holding `words` is what the test does on purpose (a request the server
    refuses: the browser logs every answer of 4xx); any other still fails the test."""
    OPEN[id(page)].expected.append(words)


@pytest.fixture
def tabs(browser: Any, api_server: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """`tabs(width=..., strict=...)` opens a tab; each must end with no console error. (The
    servers a test starts stop after its tabs close: a page never outlives its server.)"""
    made: list[Tab] = []

    def open_tab(width: int = 1280, height: int = 900, strict: bool = False) -> Any:
        made.append(Tab(browser, width, height, strict))
        return made[-1].page

    yield open_tab
    report = getattr(request.node, "rep_call", None)  # conftest.py keeps each test's outcome
    for i, tab in enumerate(made):
        if report is not None and report.failed:
            SHOTS.mkdir(parents=True, exist_ok=True)
            tab.page.screenshot(path=str(SHOTS / f"failed-{request.node.name}-{i}.png"), full_page=True)
        tab.context.close()
        OPEN.pop(id(tab.page), None)
    errors = [e for tab in made for e in tab.unexpected()]
    assert errors == [], errors


@pytest.fixture
def page(tabs: Any) -> Any:
    return tabs()


def shoot(target: Any, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    target.screenshot(path=str(path))
    return path


def region(page: Any, name: str) -> Any:
    return page.get_by_role("region", name=name, exact=True)


class Gate:
    """A responder that holds each model request until the test lets it through."""

    def __init__(self, then: Responder) -> None:
        self.then = then
        self.cond = threading.Condition()
        self.arrived = 0
        self.allowed = 0
        self.opened = False

    def __call__(self, request: WireRequest) -> Reply:
        with self.cond:
            self.arrived += 1
            self.cond.notify_all()
            self.cond.wait_for(lambda: self.opened or self.allowed > 0, timeout=120)
            if not self.opened:
                self.allowed -= 1
        return self.then(request)

    def wait_arrived(self, n: int) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: self.arrived >= n, timeout=60), f"{self.arrived} of {n}"

    def release(self, n: int = 1) -> None:
        with self.cond:
            self.allowed += n
            self.cond.notify_all()

    def open(self) -> None:
        with self.cond:
            self.opened = True
            self.cond.notify_all()


def project(tmp: Path, agents: dict[str, list[Any]], **keys: Any) -> Path:
    """A workflow of `agents` (name -> tools), the first the entry, on the openai wire format;
    `keys` over the defaults."""
    priced = model("openai", price={"input": 3, "output": 15})
    spec = workflow(priced, **{"entry": next(iter(agents)), "task": "Do the job.", **keys})
    return write_project(tmp, spec, agents)


def start_run(wf: Path, run_id: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return popen_cli([str(wf), "--run-id", run_id, "-q"], wf.parent, env)


def wait_for_file(path: Path, proc: subprocess.Popen[str] | None = None, timeout: float = 60) -> None:
    """Wait until `path` exists (the run made its folder), or fail when the run died first."""
    ends = time.monotonic() + timeout
    while not path.exists():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the run ended before {path} existed: {proc.stderr.read() if proc.stderr else ''}")
        assert time.monotonic() < ends, f"{path} never appeared"
        time.sleep(0.02)


@pytest.fixture
def api_server() -> Iterator[Any]:
    """Start `flowrun ui` (the runs API of `serve http` with the pages) on a runs folder, on a
    free port, with the model server's environment for the runs it starts or resumes; the URL
    it serves at."""
    started: list[Served] = []

    def start(runs_dir: Path, env: dict[str, str] | None = None, workflows: tuple[Path, ...] = ()) -> str:
        runs_dir.mkdir(parents=True, exist_ok=True)
        args = ["--port", "0", "--runs-dir", str(runs_dir), *map(str, workflows)]
        started.append(Served(runs_dir.parent, args, env, command="ui"))
        return started[-1].base

    yield start
    for served in started:
        served.stop()


def finished_script() -> Responder:
    """orchestrator -> worker, who writes a file and answers with markup that must stay text."""
    return wire_script(
        {
            "orchestrator": [calls(ToolCallSpec("worker", {"task": "Write the notes."})), Reply(XSS)],
            "worker": [
                calls(
                    ToolCallSpec(
                        "write_file",
                        {"path": "notes.md", "content": "# Notes\n<img src=x onerror=alert(1)>\n"},
                    )
                ),
                Reply(XSS),
            ],
        }
    )


def finished_project(tmp_path: Path) -> Path:
    return project(tmp_path, {"orchestrator": ["worker"], "worker": ["write_file"]})


def finished_run(tmp_path: Path) -> Path:
    """The run `done` of the finished project, through the CLI; its folder."""
    wf = finished_project(tmp_path)
    with WireServer(finished_script()) as server:
        done = run_cli([str(wf), "--run-id", "done", "-q"], cwd=tmp_path, env=model_env(server, "openai"))
        assert done.returncode == 0, done.stdout + done.stderr
    return tmp_path / "runs" / "done"


def wait_status(page: Any, status: str) -> None:
    page.wait_for_selector(f".run-view[data-status='{status}']", timeout=WAIT_MS)


def bars(page: Any) -> int:
    count: int = page.locator("svg.timeline rect.bar").count()
    return count


def wait_bars(page: Any, n: int) -> None:
    page.locator("svg.timeline rect.bar").nth(n - 1).wait_for(timeout=WAIT_MS)
