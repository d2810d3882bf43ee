"""A throw-away Postgres cluster for the tests of the Postgres queue: Debian's `postgresql`
package (its initdb and pg_ctl), a cluster made in a temporary folder owned by the `postgres`
user when the tests run as root (postgres refuses to run as root), listening on 127.0.0.1 at a
free port; one per test session (the tests that use it share an xdist group), stopped and
removed at the end. Each test gets a database of its own (`fresh_database`). Without the
package the tests skip, but never under CI or `scripts/check` (which installs it and sets
FLOWRUN_REQUIRE_POSTGRES)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.env import under_ci, yes

INSTALL_HINT = "apt-get install -y postgresql (Debian's package; scripts/check installs it)"


def binaries() -> Path | None:
    """The newest installed Postgres's bin folder."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    return found[-1].parent if found else None


def _as_postgres(argv: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def cluster() -> Iterator[str]:
    """A running cluster; the URL of its `postgres` database."""
    bin_dir = binaries()
    if bin_dir is None:
        if under_ci() or yes(os.environ.get("FLOWRUN_REQUIRE_POSTGRES")):  # as scripts/check (CI's) does
            pytest.fail(f"the Postgres queue tests cannot run in CI: no postgresql ({INSTALL_HINT})")
        pytest.skip(f"no postgresql installed: {INSTALL_HINT}")
    folder = Path(tempfile.mkdtemp(prefix="flowrun-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    data, port = folder / "data", _free_port()
    quiet = {"check": True, "capture_output": True, "text": True}
    subprocess.run(
        _as_postgres(
            [str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"]
        ),
        **quiet,  # type: ignore[call-overload]
    )
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300"
    pg_ctl = [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-w"]
    subprocess.run(_as_postgres([*pg_ctl, "-o", options, "start"]), **quiet)  # type: ignore[call-overload]
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(_as_postgres([*pg_ctl, "-m", "immediate", "stop"]), capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def fresh_database(url: str) -> str:
    """A new, empty database on the cluster of `url`; its URL."""
    import psycopg

    name = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return url.rsplit("/", 1)[0] + "/" + name
