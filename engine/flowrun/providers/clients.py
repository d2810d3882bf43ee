"""SDK clients shared by every run on one event loop, so a second run in the same process (the
Python API, a batch) reuses the client and its open connections instead of building both again.

A client is keyed by everything that makes two of them differ (SDK, key, base URL, timeout,
headers, the SDK's variables in the environment). The clients of a loop are closed when the loop
shuts down: `asyncio.run`, and every runner, closes the async generators still open on its loop,
and one such generator per loop holds the clients (the documented `loop.shutdown_asyncgens()`
hook)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import importlib
import importlib.util
import os
import sys
import threading
import weakref
from collections.abc import AsyncGenerator, Callable, Hashable
from types import ModuleType
from typing import Any

from flowrun import collector
from flowrun.environ import variables
from flowrun.errors import UsageError


class _LoopClients:
    def __init__(self) -> None:
        self.clients: dict[Hashable, Any] = {}
        self.closer: AsyncGenerator[None, None] | None = None

    async def close_all(self) -> None:
        clients, self.clients = list(self.clients.values()), {}
        for client in clients:
            with contextlib.suppress(Exception):  # a connection already gone is closed enough
                await client.close()


def keep_imported() -> None:
    """Mark what is in memory now (the modules just imported, their classes and functions) as
    kept for the life of the process: `gc.freeze()`, as the gc module's documentation advises
    after start-up. The collector's full passes, during a run and the interpreter's own at exit,
    no longer walk the tens of thousands of objects an SDK's import makes: for a short script
    they cost more than its run (0.2-0.3 s of a cold fan-out's CPU, bench/cold.py). The
    command line's start-up thresholds end here (collector.settle)."""
    gc.freeze()
    collector.settle()


_IMPORT_LOCK = threading.Lock()  # one import of an SDK at a time (threads importing the same
# package at once can meet the import system's deadlock detection)
_IMPORTED: set[str] = set()  # imported whole by import_sdk


async def import_sdk(name: str, *also: str) -> ModuleType:
    """`import name` (and the modules in `also`) in a worker thread the first time: an SDK takes
    0.3 s to seconds to import, and on the loop thread that would hold up every other run of the
    process (their timers, their streams). Later calls return at once."""
    if name in _IMPORTED and _IMPORTED.issuperset(also):
        return sys.modules[name]
    # (not sys.modules: a module is there from the start of its import, half made, while
    # another run's thread is still importing it)
    return await asyncio.to_thread(import_sdk_now, name, *also)


def import_sdk_now(name: str, *also: str) -> ModuleType:
    """`import_sdk` in the calling thread (a thread of its own, or before any loop runs)."""
    with _IMPORT_LOCK, collector.paused():
        for extra in also:
            importlib.import_module(extra)
            _IMPORTED.add(extra)
        module = importlib.import_module(name)
        _IMPORTED.add(name)
        keep_imported()
        return module


_PREFETCHED: set[str] = set()  # SDKs a background import was started for
_PREFETCH_THREADS: list[threading.Thread] = []  # those imports' threads (prefetch_done waits)


def prefetch_sdk(name: str, *also: str, then: Callable[[], object] | None = None) -> None:
    """Start `import name` (and `also`) in a background thread now, so the import runs while the
    caller still builds the run and sets up its folder, instead of after, at the first call.
    Only a head start: a failed import is forgotten here, and the first call's `import_sdk`
    imports again and fails as it would have without it. Once per SDK a process. `then` runs
    next in the same thread (what the first answer needs: the price table)."""
    with _LOCK:
        if name in _PREFETCHED or name in _IMPORTED:
            return
        _PREFETCHED.add(name)

    def load() -> None:
        with _IMPORT_LOCK, collector.paused():
            try:
                for module in (*also, name):
                    importlib.import_module(module)
                    _IMPORTED.add(module)
            except Exception:  # the first call imports again and reports it
                return
            if "aiohttp" in also:
                with contextlib.suppress(Exception):  # the first client makes it and reports it
                    ssl_context()  # what the first client makes (the CA files read)
            keep_imported()
        if then is not None:
            with contextlib.suppress(Exception), collector.paused():  # its first use reports failures
                then()
                keep_imported()

    # a daemon: a process that never calls the model does not wait for it to leave
    thread = threading.Thread(target=load, name=f"flowrun-import-{name}", daemon=True)
    _PREFETCH_THREADS.append(thread)
    thread.start()


def prefetch_threads() -> list[threading.Thread]:
    """The background imports `prefetch_sdk` started that still run."""
    return [thread for thread in _PREFETCH_THREADS if thread.is_alive()]


def prefetch_done() -> None:
    """Wait until the background imports `prefetch_sdk` started have ended (a batch forks its
    workers only once no other thread runs)."""
    for thread in list(_PREFETCH_THREADS):
        thread.join()
        with contextlib.suppress(ValueError):
            _PREFETCH_THREADS.remove(thread)


_LOOPS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClients] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


async def _close_at_shutdown(pool: _LoopClients) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        await pool.close_all()


async def shared_client(key: tuple[Hashable, ...], make: Callable[[], Any]) -> Any:
    """The client for `key` on the running loop, made by `make()` the first time."""
    loop = asyncio.get_running_loop()
    with _LOCK:
        pool = _LOOPS.get(loop)
        fresh = pool is None
        if pool is None:
            pool = _LOOPS[loop] = _LoopClients()
    if fresh:
        pool.closer = _close_at_shutdown(pool)
        await pool.closer.asend(None)  # now open: the loop closes it (and the clients) at shutdown
    client = pool.clients.get(key)
    if client is None:
        client = pool.clients[key] = make()
    return client


def secret_digest(value: str | None) -> str:
    """A key's fingerprint for a client key (the pool does not keep secrets twice)."""
    return hashlib.sha256((value or "").encode()).hexdigest()


def sdk_environment(prefix: str) -> str:
    """What an SDK reads from the environment when a client is made (OPENAI_BASE_URL, ...), as a
    fingerprint: a changed variable means another client."""
    found = sorted((k, v) for k, v in variables() if k.startswith(prefix))
    return secret_digest(repr(found))


def open_clients() -> int:
    """How many clients the running loop holds (for tests and benches)."""
    pool = _LOOPS.get(asyncio.get_running_loop())
    return len(pool.clients) if pool is not None else 0


HTTP_ENV = "FLOWRUN_HTTP"  # httpx | aiohttp: which HTTP client the SDK clients use


def http_transport() -> str:
    """`aiohttp` when it is installed (`pip install 'flowrun[aiohttp]'`), else `httpx`; the
    environment variable FLOWRUN_HTTP picks one. Both SDKs ship an aiohttp transport of their
    own (`DefaultAioHttpClient`) and document it for concurrency: it costs about half of the
    default httpx2 client's time per request, which is what a batch of many runs is made of."""
    wanted = os.environ.get(HTTP_ENV, "").strip().lower()
    installed = importlib.util.find_spec("aiohttp") is not None
    if wanted == "aiohttp" and not installed:
        raise UsageError(
            f"{HTTP_ENV}=aiohttp, but aiohttp is not installed", "pip install 'flowrun[aiohttp]'"
        )
    if wanted not in ("", "httpx", "aiohttp"):
        raise UsageError(f"{HTTP_ENV}={wanted!r} is not an HTTP client flowrun knows", "use httpx or aiohttp")
    return wanted or ("aiohttp" if installed else "httpx")


def transport_modules(transport: str) -> tuple[str, ...]:
    """What the chosen HTTP client imports when the first client is made (see import_sdk)."""
    return ("aiohttp",) if transport == "aiohttp" else ()


def http_client_options(sdk: ModuleType, transport: str) -> dict[str, object]:
    """The keyword arguments that give an SDK client (`openai`, `anthropic`, passed as the
    module) the chosen HTTP client; none for the SDK's default."""
    return {"http_client": sdk.DefaultAioHttpClient(verify=ssl_context())} if transport == "aiohttp" else {}


_SSL_CONTEXTS: dict[tuple[str | None, str | None], Any] = {}


def ssl_context() -> Any:
    """The verifying SSL context the aiohttp clients share: the SDKs' own default (httpx2's,
    from the system's CA files or SSL_CERT_FILE / SSL_CERT_DIR), made once a process instead of
    once per client: reading the CA files takes 25-100 ms, which a first call paid on the
    loop. The SDKs' background import makes it (`prefetch_sdk`, a batch worker's start-up)."""
    key = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    context = _SSL_CONTEXTS.get(key)
    if context is None:
        try:  # the SDKs' HTTP library, or httpx for an SDK release still on it
            http = importlib.import_module("httpx2")
        except ImportError:
            http = importlib.import_module("httpx")
        context = _SSL_CONTEXTS.setdefault(key, http.create_ssl_context(verify=True, trust_env=True))
    return context
