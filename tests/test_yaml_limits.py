"""Manifest loading with limits (issue 11, item 6): alias bombs, deep nesting, recursive aliases,
oversized and non-regular files, undecodable bytes and odd scalars each end in a `file:line`
diagnostic, never a traceback; and a property test throws generated documents at
`flowrun validate` in children limited to 200 MB more memory and 2 s of CPU each."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import run_cli
from support.paths import REPO, TESTS

BOMB = b"""\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def block_nesting(depth: int) -> bytes:
    lines = ["version: 1", "kind: agent", "name: deep", "vars:"]
    lines += [" " * (i + 1) + f"k{i}:" for i in range(depth)]
    lines[-1] += " x"
    return ("\n".join(lines) + "\n").encode()


class Worker:
    """tests/limited_worker.py: each command in a forked child with memory and CPU limits."""

    def __init__(self, extra_mb: int = 200, cpu_s: int = 2) -> None:
        args = [
            sys.executable,
            str(TESTS / "limited_worker.py"),
            f"--extra-mb={extra_mb}",
            f"--cpu-s={cpu_s}",
        ]
        self.proc = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO, env=os.environ.copy()
        )
        assert self.proc.stdout is not None and self.proc.stdin is not None
        assert json.loads(self.proc.stdout.readline()) == {"ready": True}

    def run(self, *args: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"args": list(args)}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, "the worker died"
        result: dict[str, Any] = json.loads(line)
        return result

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=120)
        self.proc.stdout.close()


@pytest.fixture(scope="module")
def worker() -> Iterator[Worker]:
    w = Worker()
    yield w
    w.close()


def assert_clean(result: dict[str, Any], what: str) -> None:
    """Exit 0 or 1 (or 2: no manifest there at all), no signal (SIGXCPU: over 2 s of CPU;
    SIGKILL/SIGSEGV), no traceback, no MemoryError (over the memory limit)."""
    output = result["out"] + result["err"]
    assert result["signal"] is None, f"{what}: killed by signal {result['signal']}\n{output[-2000:]}"
    usage = result["exit"] == 2 and "no manifests found" in result["err"]
    assert result["exit"] in (0, 1) or usage, f"{what}: exit {result['exit']}\n{output[-2000:]}"
    assert "Traceback" not in output and "MemoryError" not in output, f"{what}:\n{output[-2000:]}"


# ---------------------------------------------------------------- the cases, through the CLI


@pytest.mark.parametrize(
    ("name", "content", "expect"),
    [
        ("bomb", b"version: 1\nkind: agent\nname: bomb\nvars:\n" + BOMB, "once aliases are expanded"),
        ("recursive", b"version: 1\nkind: agent\nname: r\nvars: &a [1, *a]\n", "alias *a refers to a node"),
        ("undefined", b"version: 1\nkind: agent\nname: u\nvars: *nothing\n", "alias *nothing has no anchor"),
        ("deep-block", block_nesting(1000), "nesting deeper than 50 levels"),
        ("deep-flow-1000", b"kind: agent\nx: " + b"[" * 1000 + b"]" * 1000 + b"\n", "nesting"),
        ("deep-flow-100000", b"kind: agent\nx: " + b"[" * 100_000 + b"]" * 100_000 + b"\n", "nesting"),
        ("big", b"kind: agent\nprompt: '" + b"x" * 1_100_000 + b"'\n", "manifests may be at most"),
        ("latin1", b"version: 1\nkind: agent\nname: l\nprompt: caf\xe9\n", "not UTF-8 text: byte 0xe9"),
        ("nul", b"version: 1\nkind: agent\nname: n\nprompt: a\x00b\n", "YAML error"),
        ("bad-int", b"version: 1\nkind: agent\nname: i\nmax_steps: !!int abc\n", "cannot read the value"),
        ("bad-date", b"version: 1\nkind: agent\nname: d\nvars: {x: 2024-13-45}\n", "cannot read the value"),
        (
            "python-tag",
            b"version: 1\nkind: agent\nname: p\nvars: !!python/object:os.system {}\n",
            "not supported",
        ),
    ],
)
def test_hostile_manifests_get_one_line_diagnostics(
    tmp_path: Path, worker: Worker, name: str, content: bytes, expect: str
) -> None:
    (tmp_path / "agents.d").mkdir()
    path = tmp_path / "agents.d" / f"{name}.yaml"
    path.write_bytes(content)
    result = worker.run("validate", str(tmp_path))
    assert_clean(result, name)
    assert result["exit"] == 1
    assert expect in result["out"], result["out"]
    assert f"{name}.yaml:" in result["out"]  # file:line:col


def test_front_matter_has_the_same_limits(tmp_path: Path, worker: Worker) -> None:
    (tmp_path / "agents.d").mkdir()
    (tmp_path / "agents.d" / "bomb.md").write_bytes(b"---\nname: bomb\n" + BOMB + b"---\nThe body.\n")
    result = worker.run("validate", str(tmp_path))
    assert_clean(result, "bomb.md")
    assert result["exit"] == 1
    assert "bomb.md:" in result["out"] and "once aliases are expanded" in result["out"], result["out"]


def test_alias_bomb_in_a_workflow_stops_the_run_with_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "wf.yaml").write_bytes(
        b"version: 1\nkind: workflow\nname: w\nentry: searcher\ndescription: x\nx-data:\n"
        + b"".join(b"  " + line + b"\n" for line in BOMB.splitlines())
    )
    proc = run_cli(["wf.yaml", "--dry-run", "--run-id", "r"], cwd=tmp_path, timeout=60)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "wf.yaml:" in proc.stderr and "once aliases are expanded" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "runs").exists()


def test_fifo_and_devices_are_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(tmp_path / "sock.yaml"))
    proc = run_cli(
        ["validate", str(fifo), str(tmp_path / "zero.yaml"), str(tmp_path / "sock.yaml")], timeout=120
    )
    listening.close()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "sock.yaml:1:1: error[not-a-file]: not a regular file (a socket)" in proc.stdout
    assert "fifo.yaml:1:1: error[not-a-file]: not a regular file (a FIFO)" in proc.stdout
    assert "zero.yaml:1:1: error[not-a-file]: not a regular file (a character device)" in proc.stdout
    proc = run_cli(["run", str(fifo), "--dry-run"], timeout=120)
    assert proc.returncode == 2 and "is not a regular file" in proc.stderr
    assert "Traceback" not in proc.stderr
    # inside a folder they are skipped (never opened), like any file that is not a manifest,
    # so a folder holding nothing else has no manifests (a usage error, exit 2)
    proc = run_cli(["validate", str(tmp_path)], timeout=120)
    assert proc.returncode == 2 and "no manifests found" in proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr


def test_the_limits_are_cheap_under_a_memory_and_cpu_limit(worker: Worker, tmp_path: Path) -> None:
    """The 489-byte bomb took minutes and gigabytes before; now each of these finishes inside
    200 MB more than the worker's size and 2 s of CPU (the child is killed otherwise)."""
    cases = {
        "bomb.yaml": b"kind: agent\n" + BOMB,
        "wide.yaml": b"kind: agent\nvars:\n" + b"".join(b"  k%d: v\n" % i for i in range(40_000)),
        "flow.yaml": b"kind: agent\nx: " + b"[" * 100_000 + b"]" * 100_000 + b"\n",
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        result = worker.run("validate", str(tmp_path / name))
        assert_clean(result, name)
        assert result["exit"] == 1, result["out"]


# ---------------------------------------------------------------- the property test

KINDS = ["agent", "tool", "workflow", "models", "script"]
ODD_SCALARS = [
    "~",
    "null",
    ".nan",
    "-.inf",
    "0x1F",
    "0o17",
    "1_000",
    "1e400",
    "!!int abc",
    "!!float x",
    "!!bool maybe",
    "!!binary '###'",
    "!!timestamp 2024-02-30",
    "2024-13-45",
    "2001-12-14t21:59:43.10-05:00",
    "!!str",
    "!custom tag",
    "!!python/name:os.system",
    "!!set {a, b}",
    "!!omap [a: 1]",
    "'\\t'",
    '"\\x00\\uffff"',
    '"\\ud800"',
    "<<",
    "? complex",
    "&anchor value",
    "*undefined",
    "|\n  block\n\ttab",
    ">-\n  folded",
    "'" + "x" * 300 + "'",
    "yes",
    "On",
    "=",
    "@reserved",
    "`reserved",
    "%directive",
    "---",
    "...",
]

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), text, st.sampled_from(["\t", "a\tb"])
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.one_of(text, st.integers()), inner, max_size=4)
    ),
    max_leaves=25,
)


@st.composite
def manifests(draw: st.DrawFn) -> bytes:
    """A mapping that looks like a manifest (so the schema and cross-reference checks run),
    dumped in block or flow style."""
    data: dict[Any, Any] = {
        "version": draw(st.sampled_from([1, 2, "1"])),
        "kind": draw(st.sampled_from(KINDS)),
    }
    data["name"] = draw(st.one_of(st.sampled_from(["a", "searcher", "wf", "Bad Name"]), text))
    data.update(draw(st.dictionaries(st.sampled_from(MANIFEST_KEYS), values, max_size=6)))
    flow = draw(st.booleans())
    return yaml.safe_dump(data, default_flow_style=flow, allow_unicode=draw(st.booleans())).encode()


MANIFEST_KEYS = [
    "prompt",
    "tools",
    "model",
    "max_steps",
    "entry",
    "steps",
    "models",
    "inputs",
    "limits",
    "parameters",
    "implementation",
    "agents",
    "extends",
    "context",
    "sandbox",
    "workspace",
    "default_model",
    "stop",
    "vars",
]


@st.composite
def nestings(draw: st.DrawFn) -> bytes:
    depth = draw(st.integers(1, 3000))
    if draw(st.booleans()):
        open_, close = draw(st.sampled_from([("[", "]"), ("{a: ", "}")]))
        return b"kind: agent\nname: n\nvars: " + (open_ * depth + close * depth).encode() + b"\n"
    return block_nesting(depth)


@st.composite
def alias_documents(draw: st.DrawFn) -> bytes:
    levels = draw(st.integers(1, 12))
    fanout = draw(st.integers(1, 12))
    lines = ["version: 1", "kind: agent", "name: a", "vars:", "  l0: &l0 " + json.dumps(["x"] * fanout)]
    for level in range(1, levels):
        refs = ", ".join([f"*l{level - 1}"] * fanout)
        style = draw(st.sampled_from(["[{refs}]", "{{m: [{refs}]}}", "{{<<: *l{prev}, k: [{refs}]}}"]))
        lines.append(f"  l{level}: &l{level} " + style.format(refs=refs, prev=level - 1))
    if draw(st.booleans()):
        lines.append(f"  loop: &loop [{draw(st.sampled_from(['*loop', '*l0', '*nope']))}]")
    return ("\n".join(lines) + "\n").encode()


@st.composite
def odd_documents(draw: st.DrawFn) -> bytes:
    picks = draw(st.lists(st.sampled_from(ODD_SCALARS), min_size=1, max_size=6))
    kind = draw(st.sampled_from(KINDS))
    lines = ["version: 1", f"kind: {kind}", "name: odd"]
    for i, scalar in enumerate(picks):
        key = draw(st.sampled_from([*MANIFEST_KEYS, f"x{i}", scalar.split()[0]]))
        lines.append(f"{key}: {scalar}")
    return ("\n".join(lines) + "\n").encode()


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A real manifest with bytes replaced, inserted (tabs, NUL, high bytes) or cut."""
    source = draw(st.sampled_from(EXAMPLES))
    data = bytearray(source.read_bytes())
    for _ in range(draw(st.integers(1, 8))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["insert", "replace", "cut"]))
        chunk = draw(
            st.sampled_from([b"\t", b"\x00", b"\xff\xfe", b": ", b"- ", b"&a ", b"*a", b"{", b"]", b"\n  "])
        )
        if op == "insert":
            data[at:at] = chunk
        elif op == "replace":
            data[at : at + len(chunk)] = chunk
        else:
            del data[at : at + draw(st.integers(1, 40))]
    return bytes(data)


EXAMPLES = sorted((REPO / "examples").glob("*.yaml")) + sorted((REPO / "agents.d").glob("*.yaml"))[:2]
documents = st.one_of(
    manifests(), nestings(), alias_documents(), odd_documents(), mutated(), st.binary(max_size=300)
)


@settings(
    max_examples=int(os.environ.get("FLOWRUN_PROPERTY_EXAMPLES", "120")),
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)
@given(
    document=documents,
    place=st.sampled_from(
        ["wf.yaml", "agents.d/x.yaml", "tools.d/x.yaml", "agents.d/x.md", ".claude/skills/x/SKILL.md"]
    ),
)
def test_validate_survives_any_document(worker: Worker, document: bytes, place: str) -> None:
    if place.endswith(".md"):  # a Claude Code agent or a skill: the document is the front matter
        document = b"---\n" + document + b"\n---\nThe body.\n"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / place
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(document)
        # a top-level file is named on the command line; the others are found in their folder
        result = worker.run("validate", str(path) if place == "wf.yaml" else tmp)
    assert_clean(result, repr(document[:300]))
