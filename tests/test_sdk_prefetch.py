"""The SDKs' head start: `flowrun.load` starts importing the SDKs of the models a workflow's
agents use in a background thread (runtime/models/prefetch.py); nothing is started for a load
that sends nothing (`prefetch=False`, a dry run on the command line); and an SDK whose import
fails in that thread fails the first call exactly as it does without the head start."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from support.cli import run_cli
from support.env import clean_env
from support.project import write_project
from support.runs import folders
from support.wire_server import Reply, Script, WireServer

from flowrun.batch.forked import FORK_ENV

AGENT = "version: 1\nkind: agent\nname: solo\nprompt: You are solo.\n"
WORKFLOW = """\
version: 1
kind: workflow
name: solo
models:
  m: {{provider: {provider}, model: m, api_key_env: PREFETCH_KEY, stream: false}}
default_model: m
entry: solo
"""


def project(folder: Path, provider: str = "openai") -> Path:
    return write_project(folder, WORKFLOW.format(provider=provider), files={"agents.d/solo.yaml": AGENT})


def python(code: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = clean_env()
    full.update({"PREFETCH_KEY": "k", **(env or {})})
    argv = [sys.executable, "-c", textwrap.dedent(code)]
    return subprocess.run(argv, cwd=cwd, env=full, capture_output=True, text=True, timeout=120)


LOADED = """\
import sys, threading
import flowrun
wf = flowrun.load("wf.yaml", prefetch={prefetch})
started = sorted(t.name for t in threading.enumerate() if t.name.startswith("flowrun-import"))
for thread in threading.enumerate():
    if thread.name.startswith("flowrun-import"):
        thread.join()  # the state it leaves, not a time
print(started, "{sdk}" in sys.modules)
"""


def test_load_starts_importing_the_workflows_sdk(tmp_path: Path) -> None:
    for provider, sdk in (("openai", "openai"), ("anthropic", "anthropic")):
        folder = project(tmp_path / provider, provider).parent
        done = python(LOADED.format(prefetch=True, sdk=sdk), folder)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == [f"['flowrun-import-{sdk}']", "True"]
        other = "anthropic" if sdk == "openai" else "openai"
        done = python(LOADED.format(prefetch=True, sdk=other), folder)
        assert done.stdout.split()[-1] == "False"  # only the SDK its models use


def test_the_head_start_loads_jsonschema_when_a_tools_arguments_need_it(tmp_path: Path) -> None:
    """The first tool call checks its arguments. A schema beyond the plain checks of
    flowrun/plain_schema.py (a pattern, here) needs jsonschema (20-100 ms to import): it
    is imported after the SDK, while the first request waits. The built-in tools' schemas, and
    an agent without tools, need none."""
    code = LOADED.format(prefetch=True, sdk="jsonschema")
    env = {"FLOWRUN_CACHE_DIR": str(tmp_path / "cache")}  # checking manifests imports it too: warm
    folder = project(tmp_path / "plain").parent
    python(code, folder, env)
    assert python(code, folder, env).stdout.split()[-1] == "False"  # solo has no tools
    builtin = project(tmp_path / "builtin").parent
    (builtin / "agents.d" / "solo.yaml").write_text(AGENT + "tools: [read_file]\n")
    python(code, builtin, env)
    done = python(code, builtin, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "False"
    with_pattern = project(tmp_path / "pattern").parent
    (with_pattern / "agents.d" / "solo.yaml").write_text(AGENT + "tools: [lookup]\n")
    (with_pattern / "tools.d").mkdir()
    (with_pattern / "tools.d" / "lookup.yaml").write_text(LOOKUP)
    (with_pattern / "mytools.py").write_text("async def lookup(ctx, code):\n    return code\n")
    python(code, with_pattern, env)
    done = python(code, with_pattern, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "True"


LOOKUP = """\
version: 1
kind: tool
name: lookup
description: Looks a code up.
parameters:
  type: object
  properties: {code: {type: string, pattern: "^[A-Z]+$"}}
  required: [code]
implementation: {python: mytools:lookup}
"""


def test_no_head_start_for_a_load_that_sends_nothing(tmp_path: Path) -> None:
    folder = project(tmp_path).parent
    done = python(LOADED.format(prefetch=False, sdk="openai"), folder)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "False"]
    probe = "import sys, runpy\nsys.argv = ['flowrun', *sys.argv[1:]]\n"
    probe += "import atexit\natexit.register(lambda: print('SDK', 'openai' in sys.modules))\n"
    probe += "runpy.run_module('flowrun', run_name='__main__')\n"
    cli = subprocess.run(
        [sys.executable, "-c", probe, "wf.yaml", "--dry-run", "-q", "--runs-dir", str(tmp_path / "runs")],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert cli.returncode == 0, cli.stderr
    assert "SDK False" in cli.stdout  # a dry run calls no model: its SDK is not imported


BROKEN = "raise ImportError('this openai is broken')\n"
RUN = """\
import flowrun
wf = flowrun.load("wf.yaml", prefetch={prefetch})
try:
    result = wf.run_sync({{}}, runs_dir="runs-{prefetch}")
    print("RESULT", result.status, result.message)
except Exception as e:
    print("RAISED", type(e).__name__, e)
"""


def test_a_failed_background_import_fails_the_first_call_as_without_it(tmp_path: Path) -> None:
    broken = tmp_path / "broken" / "openai"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text(BROKEN)
    folder = project(tmp_path / "p").parent
    env = {"PYTHONPATH": str(tmp_path / "broken"), "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    with_head_start = python(RUN.format(prefetch=True), folder, env)
    without = python(RUN.format(prefetch=False), folder, env)
    assert with_head_start.returncode == without.returncode
    assert "this openai is broken" in with_head_start.stdout + with_head_start.stderr
    assert with_head_start.stdout == without.stdout
    assert with_head_start.stderr == without.stderr
    cli = run_cli(["wf.yaml", "-q", "--runs-dir", "cli-runs"], cwd=folder, env={**env, "PREFETCH_KEY": "k"})
    assert cli.returncode != 0 and "this openai is broken" in cli.stdout + cli.stderr
    assert "Traceback" not in cli.stderr


def test_a_run_after_the_head_start_reaches_the_server(tmp_path: Path) -> None:
    script = Script({"solo": [Reply(text="hello from the server")]}, {"solo": "You are solo"})
    with WireServer(script) as server:
        folder = project(tmp_path).parent
        env = {"OPENAI_BASE_URL": server.openai_base_url}
        done = python(RUN.format(prefetch=True), folder, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:2] == ["RESULT", "completed"]
    events = (folders(folder / "runs-True")[0] / "events.jsonl").read_text().splitlines()
    assert any(json.loads(line)["type"] == "model_response" for line in events)


BATCH = """\
import asyncio, json, os, sys
from pathlib import Path
import flowrun
Path("items.jsonl").write_text("".join(json.dumps({{"id": n}}) + "\\n" for n in "ab"))
out = "out-{processes}-{dry}-" + os.environ.get("FLOWRUN_BATCH_FORK", "")
given = dict(out=out, processes={processes}, dry_run={dry})
summary = asyncio.run(flowrun.run_batch("wf.yaml", "items.jsonl", **given))
print(summary.completed, "openai" in sys.modules)
"""


def test_a_batch_imports_the_sdk_where_its_items_run(tmp_path: Path) -> None:
    """Over worker processes forked from the batch (batch/forked.py), the batch process imports
    the SDK once, before the forks, for all of them; over fresh interpreters
    (FLOWRUN_BATCH_FORK=0) it calls no model and imports no SDK (the cores go to the workers,
    which call the server); a dry run, over workers or in one process, imports none."""
    folder = project(tmp_path).parent
    with WireServer(Script({"solo": [Reply(text="done")] * 6}, {"solo": "You are solo"})) as server:
        env = {"OPENAI_BASE_URL": server.openai_base_url}
        done = python(BATCH.format(processes=2, dry=False), folder, env)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["2", "True"]
        fresh = python(BATCH.format(processes=2, dry=False), folder, {**env, FORK_ENV: "0"})
        assert fresh.returncode == 0, fresh.stderr
        assert fresh.stdout.split() == ["2", "False"]
        # a program with a thread of its own cannot fork: it imports nothing for workers it will
        # not fork, and they are fresh interpreters
        threaded = "import threading\nthreading.Thread(target=threading.Event().wait, daemon=True).start()\n"
        done = python(threaded + BATCH.format(processes=2, dry=False), folder, {**env, FORK_ENV: "1"})
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["2", "False"]
        assert len(server.requests) == 6  # the workers' calls
    for processes in (1, 2):
        done = python(BATCH.format(processes=processes, dry=True), folder)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["2", "False"]


WARM = """\
import asyncio, sys
import flowrun
from flowrun.batch.worker import _warm
from flowrun.providers import clients
asyncio.run(_warm(flowrun.load("wf.yaml", prefetch=False)))
print("openai" in sys.modules, "aiohttp" in sys.modules, "genai_prices.data_snapshot" in sys.modules,
      len(clients._SSL_CONTEXTS))
from flowrun.providers import prices
assert prices._lookup(("openai", None), "m") is None  # what the first answer looks up: no entry
"""


def test_a_batch_worker_is_warm_when_it_says_ready(tmp_path: Path) -> None:
    """What a worker does before it says ready: the SDK and its HTTP client imported, the price
    table loaded (the model may be priced from it), the clients' SSL context made; its first
    item then waits for none of them."""
    folder = project(tmp_path).parent
    env = {"FLOWRUN_HTTP": "aiohttp", "FLOWRUN_CACHE_DIR": str(tmp_path / "cache")}
    done = python(WARM, folder, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True", "1"]
    # the table has no entry for the model: the next worker knows it and does not load it
    again = python(WARM, folder, env)
    assert again.returncode == 0, again.stderr
    assert again.stdout.split() == ["True", "True", "False", "1"]


def test_aiohttp_clients_share_one_verifying_ssl_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One SSL context a process (the CA files read once), the SDKs' default: verifying, from
    the system's CA files, or SSL_CERT_FILE when set (another context for another file)."""
    import ssl

    import openai

    from flowrun.providers import clients

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    shared = clients.ssl_context()
    assert shared is clients.ssl_context()
    assert shared.verify_mode == ssl.CERT_REQUIRED and shared.check_hostname
    options = clients.http_client_options(openai, "aiohttp")
    transport = options["http_client"]._transport  # type: ignore[attr-defined]
    assert transport.ssl_context is shared
    certifi = ssl.get_default_verify_paths().openssl_cafile
    if Path(certifi).is_file():
        monkeypatch.setenv("SSL_CERT_FILE", certifi)
        own = clients.ssl_context()
        assert own is not shared and own.verify_mode == ssl.CERT_REQUIRED
    assert clients.http_client_options(openai, "httpx") == {}
