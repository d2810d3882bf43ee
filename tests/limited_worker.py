"""Runs `flowrun` commands under resource limits, one forked child per command, so a property
test can throw hundreds of documents at `flowrun validate` and learn, for each one, its exit
code, its output and whether it hit the memory or CPU limit, without paying the interpreter's
start-up each time.

    python tests/limited_worker.py --extra-mb 200 --cpu-s 2
    stdin:  {"args": ["validate", "/tmp/x/doc.yaml"]}          one JSON object per line
    stdout: {"exit": 1, "signal": null, "out": "...", "err": "..."}

The worker imports flowrun (and the libraries validate loads lazily) once, then for each line
forks a child that sets RLIMIT_AS to the worker's current address space plus `--extra-mb` and
RLIMIT_CPU to `--cpu-s`, runs the command in-process and exits with its code. A child over its
memory limit fails to allocate (MemoryError, or SIGKILL/SIGSEGV in C code); over its CPU time it
gets SIGXCPU."""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
from pathlib import Path


def address_space_bytes() -> int:
    """This process's current virtual memory size."""
    pages = int(Path("/proc/self/statm").read_text().split()[0])
    return pages * os.sysconf("SC_PAGE_SIZE")


def child(args: list[str], extra_bytes: int, cpu_s: int, out: int, err: int) -> None:
    os.dup2(out, 1)
    os.dup2(err, 2)
    limit = address_space_bytes() + extra_bytes
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    code = 70
    try:
        from flowrun.cli import main

        main(args, prog_name="flowrun", standalone_mode=True)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # a traceback escaping the CLI: shown on stderr, exit 99
        import traceback

        traceback.print_exc()
        code = 99
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def run_one(args: list[str], extra_bytes: int, cpu_s: int) -> dict[str, object]:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:
            child(args, extra_bytes, cpu_s, out.fileno(), err.fileno())
        _, status = os.waitpid(pid, 0)
        out.seek(0)
        err.seek(0)
        return {
            "exit": os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else None,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "out": out.read().decode("utf-8", "replace"),
            "err": err.read().decode("utf-8", "replace"),
        }


def warm_up() -> None:
    """Import what `validate` loads lazily, so children spend their CPU budget on the file."""
    import jsonschema  # noqa: F401
    import pydantic  # noqa: F401

    import flowrun.cli  # noqa: F401
    from flowrun.manifest.checks.validate import validate_paths

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "wf.yaml").write_text("version: 1\nkind: workflow\nname: w\nentry: searcher\n")
        validate_paths([Path(tmp)])  # loads the built-ins and fills the schema caches here


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--extra-mb", type=int, default=200)
    parser.add_argument("--cpu-s", type=int, default=2)
    options = parser.parse_args()
    warm_up()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        result = run_one(request["args"], options.extra_mb << 20, options.cpu_s)
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
