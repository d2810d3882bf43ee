"""edit_file's insert mode, the file tools' `encoding`, and `context.cwd` on every result: on
real files, and through the CLI with a scripted model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli
from support.project import write_files

from flowrun.tools.base import ToolContext
from flowrun.tools.file_edit import edit_file
from flowrun.tools.files import read_file, write_file


def ctx_for(root: Path) -> ToolContext:
    return ToolContext(workspace=root, base_dir=root, cwd=root, run_dir=root)


@pytest.mark.parametrize(
    "line, position, expected",
    [
        (0, "after", "new\na\nb\nc\n"),
        (1, "after", "a\nnew\nb\nc\n"),
        (3, "after", "a\nb\nc\nnew\n"),
        (1, "before", "new\na\nb\nc\n"),
        (3, "before", "a\nb\nnew\nc\n"),
    ],
)
async def test_insert_before_or_after_a_line(tmp_path: Path, line: int, position: str, expected: str) -> None:
    (tmp_path / "f.txt").write_text("a\nb\nc\n")
    result = await edit_file(
        ctx_for(tmp_path), path="f.txt", insert_line=line, position=position, new_content="new"
    )
    assert result.status == "success", result.text
    assert (tmp_path / "f.txt").read_text() == expected
    assert result.data["operation"] == "insert" and result.data["lines_added"] == 1


async def test_insert_keeps_crlf_and_a_missing_final_newline(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_bytes(b"a\r\nb")
    result = await edit_file(ctx_for(tmp_path), path="f.txt", insert_line=2, new_content="c\nd")
    assert result.status == "success"
    assert (tmp_path / "f.txt").read_bytes() == b"a\r\nb\r\nc\nd\r\n"


@pytest.mark.parametrize(
    "args, words",
    [
        ({"insert_line": 9, "new_content": "x"}, "has 3 lines"),
        ({"insert_line": 0, "position": "before", "new_content": "x"}, "insert_line must be 1..3"),
        ({"insert_line": 1}, "insert mode needs new_content"),
        ({"insert_line": 1, "new_content": "x", "start_line": 1}, "goes with new_content only"),
        ({"insert_line": 1, "new_content": "x", "position": "middle"}, "before or after"),
    ],
)
async def test_insert_mistakes(tmp_path: Path, args: dict, words: str) -> None:
    (tmp_path / "f.txt").write_text("a\nb\nc\n")
    result = await edit_file(ctx_for(tmp_path), path="f.txt", **args)
    assert result.status == "error" and result.error is not None and result.error.code == "INVALID_PARAM"
    assert words in result.text
    assert (tmp_path / "f.txt").read_text() == "a\nb\nc\n"


@pytest.mark.parametrize("encoding", ["latin-1", "utf-16", "gbk", "cp1252"])
async def test_encodings_round_trip(tmp_path: Path, encoding: str) -> None:
    ctx = ctx_for(tmp_path)
    text = (
        "caf\u00e9 na\u00efve\nzweite Zeile\n" if encoding != "gbk" else "\u4e2d\u6587\n\u7b2c\u4e8c\u884c\n"
    )
    written = await write_file(ctx, path="t.txt", content=text, encoding=encoding)
    assert written.status == "success", written.text
    assert (tmp_path / "t.txt").read_bytes() == text.encode(encoding)
    appended = await write_file(ctx, path="t.txt", content="end\n", mode="append", encoding=encoding)
    assert appended.status == "success"
    assert (tmp_path / "t.txt").read_bytes() == (text + "end\n").encode(encoding)  # one BOM at most
    read = await read_file(ctx, path="t.txt", encoding=encoding)
    assert read.status == "success" and read.data["content"] == (text + "end").rstrip("\n")
    assert read.data["total_lines"] == 3
    edited = await edit_file(ctx, path="t.txt", old_string="end", new_string="fin", encoding=encoding)
    assert edited.status == "success"
    assert (tmp_path / "t.txt").read_bytes().decode(encoding).endswith("fin\n")


async def test_encoding_mistakes(tmp_path: Path) -> None:
    ctx = ctx_for(tmp_path)
    (tmp_path / "l1.txt").write_bytes("caf\u00e9\n".encode("latin-1"))
    as_utf8 = await read_file(ctx, path="l1.txt")
    assert as_utf8.error is not None and as_utf8.error.code == "BINARY_FILE"
    unknown = await read_file(ctx, path="l1.txt", encoding="klingon")
    assert (
        unknown.error is not None
        and unknown.error.code == "INVALID_PARAM"
        and "unknown encoding" in unknown.text
    )
    cannot = await write_file(ctx, path="x.txt", content="\u4e2d", encoding="latin-1")
    assert (
        cannot.error is not None
        and cannot.error.code == "INVALID_PARAM"
        and "cannot be written" in cannot.text
    )
    assert not (tmp_path / "x.txt").exists()
    wrong = await read_file(ctx, path="l1.txt", encoding="utf-16")  # odd byte count: not utf-16
    assert wrong.status == "error"
    for hostile in ("utf\x00-8", "rot13", "base64", "x" * 5000):
        for result in (
            await read_file(ctx, path="l1.txt", encoding=hostile),
            await write_file(ctx, path="h.txt", content="x", encoding=hostile),
            await edit_file(ctx, path="l1.txt", insert_line=0, new_content="x", encoding=hostile),
        ):
            assert result.error is not None and result.error.code == "INVALID_PARAM", result.text
            assert len(result.text) < 300


SCRIPT = """\
version: 1
kind: script
agents:
  worker:
    - tool_calls:
        - {name: write_file, arguments: {path: notes.txt, content: "caf\\u00e9\\n", encoding: latin-1}}
        - name: edit_file
          arguments: {path: notes.txt, insert_line: 0, new_content: "# title", encoding: latin-1}
    - tool_calls: [{name: read_file, arguments: {path: notes.txt, encoding: latin-1}}]
    - text: done
"""


def test_through_the_cli_with_context_cwd(tmp_path: Path) -> None:
    files = {
        "wf.yaml": (
            "version: 1\nkind: workflow\nname: w\n"
            "models: {s: {provider: scripted, model: script, script: worker.script.yaml}}\n"
            "default_model: s\nsteps:\n  - {agent: worker, workdir: sub}\n"
        ),
        "worker.script.yaml": SCRIPT,
        "agents.d/worker.yaml": (
            "version: 1\nname: worker\nprompt: p\ntools: [write_file, edit_file, read_file]\n"
        ),
    }
    write_files(tmp_path, files)
    proc = run_cli(["wf.yaml", "--run-id", "r", "-q"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    run_dir = tmp_path / "runs" / "r"
    assert (run_dir / "sub" / "notes.txt").read_bytes() == "# title\ncaf\u00e9\n".encode("latin-1")
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    results = [e["result"] for e in events if e["type"] == "tool_result"]
    assert [r["status"] for r in results] == ["success"] * 3
    assert all(r["context"]["cwd"] == "sub" for r in results)
    assert results[2]["data"]["content"] == "# title\ncaf\u00e9"
