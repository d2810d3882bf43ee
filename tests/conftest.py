"""The session's fixtures. tests/ is put on sys.path so that the test kit imports as `support`
(`from support.cli import run_cli`): see support/__init__.py."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from support.env import SECRET_VARS  # noqa: E402

# the provider tests' fixtures (make_provider, wire); the browser tests' (browser, page, tabs, api_server)
pytest_plugins = ["support.providers", "support.browser"]


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


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[str]:
    """A throw-away Postgres cluster for the session (support/postgres.py; the tests that use it
    share one xdist group, so one worker starts it once); the URL of its `postgres` database."""
    from support.postgres import cluster

    with cluster() as url:
        yield url


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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    """Each test's outcome on its item (`item.rep_call`), for fixtures that keep evidence of a
    failure (the browser tests' screenshots)."""
    report: pytest.TestReport = yield
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]
    return report
