"""Shared fixtures. tests/ is put on sys.path so `from wire_server import ...` works."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from flowrun.manifest import unions

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

import cli_forkserver  # noqa: E402

# tests read manifests in-process as the CLI does: the kinds are registered on first use
unions.on_first_use(lambda: __import__("flowrun.runtime.kinds"))


def _signals_as_a_terminal_sends_them() -> None:
    """The tests send SIGINT and SIGTERM to the processes they start, as a terminal's Ctrl-C or
    a `kill` would reach a command typed at a prompt. A test run started with them ignored (a
    background job of a non-interactive shell ignores SIGINT, and so may a CI runner or a
    process supervisor) would hand that on to every child: Python then leaves the signal
    ignored, so a Ctrl-C test waits in vain. Each test process (and so each child) starts from
    the defaults instead."""
    defaults = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
    for sig, default in defaults.items():
        if signal.getsignal(sig) is signal.SIG_IGN:
            signal.signal(sig, default)


_signals_as_a_terminal_sends_them()

SECRET_VARS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "TAVILY_API_KEY",
    "OPENAI_MODEL",
    "ANTHROPIC_MODEL",
    "LLM_BASE_URL",
)


@pytest.fixture(autouse=True, scope="session")
def _check_cache_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The manifest check cache of this test session (one per xdist worker), not the user's."""
    saved = os.environ.get("FLOWRUN_CACHE_DIR")
    os.environ["FLOWRUN_CACHE_DIR"] = str(tmp_path_factory.mktemp("flowrun-cache"))
    yield
    if saved is None:
        os.environ.pop("FLOWRUN_CACHE_DIR", None)
    else:
        os.environ["FLOWRUN_CACHE_DIR"] = saved


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    """A local Ray cluster for the session (tests that use it share one xdist group, so one
    worker starts it once); its address. Skipped only when the `ray` extra is not installed."""
    ray = pytest.importorskip("ray", reason="the ray extra is not installed (pip install 'flowrun[ray]')")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    try:
        yield str(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test marked `fresh_too` (the smoke set) runs twice: its commands forked by the fork
    server, then each a fresh process (`FLOWRUN_TEST_FORK=0`) as a user's `flowrun` starts,
    registering the kinds lazily at first use where the server had imported every module."""
    if metafunc.definition.get_closest_marker("fresh_too"):
        metafunc.parametrize("_cli_processes", ["forked", "fresh"], indirect=True)


@pytest.fixture(autouse=True)
def _cli_processes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """How `run_cli` starts this test's commands: through the fork server, or fresh."""
    if getattr(request, "param", "forked") == "fresh":
        monkeypatch.setenv("FLOWRUN_TEST_FORK", "0")


@pytest.fixture(autouse=True)
def _no_real_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may reach a real API: keys and base URLs from the developer's shell are removed."""
    for name in SECRET_VARS:
        monkeypatch.delenv(name, raising=False)


def flowrun_cmd() -> list[str]:
    """The installed console script when present, else the module (same code)."""
    script = Path(sys.executable).parent / "flowrun"
    return [str(script)] if script.exists() else [sys.executable, "-m", "flowrun"]


def run_cli(
    args: list[str], cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`flowrun ARGS` as a process of its own; through the fork server (cli_forkserver.py) when
    nothing it is given needs a fresh interpreter."""
    full_env = {k: v for k, v in os.environ.items() if k not in SECRET_VARS}
    full_env.update(env or {})
    if cli_forkserver.forkable(env or {}):
        return cli_forkserver.run(args, cwd, full_env, env or {}, timeout)
    return subprocess.run(
        [*flowrun_cmd(), *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def popen_cli(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """`flowrun ARGS` started fresh and not waited for (a test that signals or races it), its
    output piped; `env` over the test's environment without the real keys."""
    given = {k: v for k, v in os.environ.items() if k not in SECRET_VARS} | (env or {})
    pipe = subprocess.PIPE
    return subprocess.Popen([*flowrun_cmd(), *args], cwd=cwd, env=given, stdout=pipe, stderr=pipe, text=True)


def scripted_project(
    tmp: Path, workflow: dict[str, Any], agents: dict[str, dict[str, Any]], script: dict[str, Any]
) -> Path:
    """A project in `tmp` on the scripted model: `workflow` merged over a workflow whose entry
    is `boss` (a key set to None is dropped), an agent manifest per `agents` entry, and the
    model's replies per agent (`script`)."""
    base = {
        "version": 1,
        "kind": "workflow",
        "name": "t",
        "models": {"s": {"provider": "scripted", "model": "s", "script": "script.yaml"}},
        "default_model": "s",
        "entry": "boss",
        "task": "do it",
    }
    (tmp / "agents.d").mkdir(exist_ok=True)
    merged = {k: v for k, v in {**base, **workflow}.items() if v is not None}
    (tmp / "wf.yaml").write_text(yaml.safe_dump(merged))
    for name, spec in agents.items():
        agent = {"version": 1, "kind": "agent", "name": name, "prompt": f"You are {name}.", **spec}
        (tmp / "agents.d" / f"{name}.yaml").write_text(yaml.safe_dump(agent))
    (tmp / "script.yaml").write_text(yaml.safe_dump({"version": 1, "kind": "script", "agents": script}))
    return tmp


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    """Each test's outcome on its item (`item.rep_call`), for fixtures that keep evidence of a
    failure (the browser tests' screenshots)."""
    report: pytest.TestReport = yield
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]
    return report
