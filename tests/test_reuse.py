"""In-process reuse through the Python API: a second run in the same process uses the parsed
workflow and the SDK client (with its open connection) of the first, in both wire formats."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.env import WIRES, point_sdks
from support.paths import REPO
from support.wire_server import WireServer
from test_e2e_research import research_script

import flowrun

RESEARCH = REPO / "examples" / "research.yaml"
QUESTION = {"question": "How does Python sort?"}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> WireServer:
    with WireServer(research_script()) as srv:
        point_sdks(monkeypatch, srv, *WIRES)
        yield srv


@pytest.mark.parametrize("transport", ["httpx", "aiohttp"])
@pytest.mark.parametrize("model", ["openai:gpt-test", "anthropic:claude-test"])
def test_a_second_run_reuses_the_workflow_and_the_connection(
    server: WireServer, tmp_path: Path, model: str, transport: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWRUN_HTTP", transport)

    async def twice() -> list[flowrun.RunResult]:
        first = flowrun.load(RESEARCH)
        results = [await first.run(QUESTION, runs_dir=tmp_path, model=model)]
        second = flowrun.load(RESEARCH)
        assert second.project is first.project  # parsed and checked once
        results.append(await second.run(QUESTION, runs_dir=tmp_path, model=model))
        return results

    results = asyncio.run(twice())
    assert [r.status for r in results] == ["completed", "completed"]
    assert results[0].run_dir != results[1].run_dir
    assert len(server.requests) == 2 * 10  # the research roster: 10 model calls, one at a time
    # all twenty calls of both runs went over one connection of one client
    assert server.connections_opened == 1
    asyncio.run(twice())  # a new event loop gets a new client (its connection is new)
    assert server.connections_opened == 2


def test_one_client_per_sdk_and_settings(server: WireServer, tmp_path: Path) -> None:
    from flowrun.providers.clients import open_clients

    async def run() -> int:
        wf = flowrun.load(RESEARCH)
        assert (await wf.run(QUESTION, runs_dir=tmp_path, model="openai:gpt-test")).ok
        assert (await wf.run(QUESTION, runs_dir=tmp_path, model="anthropic:claude-test")).ok
        return open_clients()

    assert asyncio.run(run()) == 2  # one per SDK and settings, kept open between runs
    assert server.connections_opened == 2  # one connection each


def test_an_unknown_http_client_fails_the_run_with_a_hint(
    server: WireServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWRUN_HTTP", "curl")
    result = flowrun.load(RESEARCH).run_sync(QUESTION, runs_dir=tmp_path, model="openai:gpt-test")
    assert result.status == "failed" and result.exit_code == 1
    expected = "FLOWRUN_HTTP='curl' is not an HTTP client flowrun knows (hint: use httpx or aiohttp)"
    assert expected in result.message
    assert not server.requests


IMPORTS_OFF_THE_LOOP = """
import asyncio, sys, threading
import flowrun

where = {}

def hook(event, args):
    package = str(args[0]).partition(".")[0] if event == "import" else ""
    if package in ("openai", "anthropic", "aiohttp"):  # import_module audits the modules below
        where.setdefault(package, threading.current_thread() is threading.main_thread())

sys.addaudithook(hook)


async def three():  # at once: two of them find the SDK half imported by the first
    wf = flowrun.load(sys.argv[1], prefetch=False)  # the first calls import it (test_sdk_prefetch: load)
    runs = [wf.run({"question": "q"}, runs_dir=sys.argv[2], model=sys.argv[3]) for _ in range(3)]
    return await asyncio.gather(*runs)


statuses = sorted({result.status for result in asyncio.run(three())})
print(statuses, sorted(name for name, on_loop in where.items() if on_loop), sorted(where))
"""


@pytest.mark.parametrize("model", ["openai:gpt-test", "anthropic:claude-test"])
def test_the_sdk_is_imported_off_the_event_loop(server: WireServer, tmp_path: Path, model: str) -> None:
    """The SDK and its HTTP client are imported in a worker thread: on the loop thread their
    import (0.3 s to seconds) would hold up every other run of the process."""
    done = subprocess.run(
        [sys.executable, "-c", IMPORTS_OFF_THE_LOOP, str(RESEARCH), str(tmp_path), model],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "FLOWRUN_HTTP": "aiohttp"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    sdk = model.split(":")[0]
    assert done.stdout.split() == ["['completed']", "[]", "['aiohttp',", f"'{sdk}']"]


HALF_IMPORTED = """
import asyncio, sys
from flowrun.providers.clients import import_sdk


async def main():
    first = asyncio.ensure_future(import_sdk("anthropic"))
    while "anthropic" not in sys.modules:  # the first import is under way in its thread
        await asyncio.sleep(0.001)
    second = await import_sdk("anthropic")  # must wait for it, not take the half-made module
    print(hasattr(second, "AsyncAnthropic"), (await first) is second)


asyncio.run(main())
"""


def test_a_run_never_gets_an_sdk_another_run_is_still_importing() -> None:
    done = subprocess.run([sys.executable, "-c", HALF_IMPORTED], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "True"]
