"""The file tools against real files in a tmp workspace, called the way the runtime calls them."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from flowrun.tools.base import ToolContext
from flowrun.tools.file_edit import edit_file
from flowrun.tools.file_search import glob, grep, list_directory
from flowrun.tools.file_stream import FileStreams, continue_stream_read, stream_read_file
from flowrun.tools.files import create_directory, delete_file, read_file, write_file
from flowrun.types import ToolResult


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    base = tmp_path / "workspace"
    base.mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("top secret\n")
    return base


def make_ctx(ws: Path, **config: object) -> ToolContext:
    return ToolContext(workspace=ws, base_dir=ws, cwd=ws, run_dir=ws.parent, config=dict(config))


def code(result: ToolResult) -> str | None:
    return result.error.code if result.error else None


# ---------------------------------------------------------------- read_file


async def test_read_file_numbers_lines_and_fills_context(ws: Path) -> None:
    (ws / "notes.md").write_text("alpha\nbeta\ngamma\n")
    result = await read_file(make_ctx(ws), path="notes.md", start_line=2)
    assert result.status == "success"
    assert "     2\tbeta\n     3\tgamma" in result.text
    assert result.data["content"] == "beta\ngamma"
    assert (result.data["start_line"], result.data["end_line"], result.data["total_lines"]) == (2, 3, 3)
    assert result.context["path_resolved"] == "notes.md"
    assert result.context["params_input"]["path"] == "notes.md"
    assert result.stats["time_ms"] >= 0


async def test_read_file_missing_is_not_found(ws: Path) -> None:
    result = await read_file(make_ctx(ws), path="nope.md")
    assert result.status == "error" and code(result) == "NOT_FOUND"
    assert "nope.md" in result.text


async def test_read_file_truncation_gives_the_next_range(ws: Path) -> None:
    (ws / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    ctx = make_ctx(ws, max_lines=4)
    first = await read_file(ctx, path="long.txt")
    assert first.status == "partial"
    assert first.data["truncated"] is True
    assert first.data["next_start_line"] == 5
    assert "start_line=5" in first.text
    assert first.data["content"].splitlines() == ["line 1", "line 2", "line 3", "line 4"]
    second = await read_file(ctx, path="long.txt", start_line=first.data["next_start_line"], end_line=6)
    assert second.status == "success"
    assert second.data["content"] == "line 5\nline 6"


async def test_read_file_byte_cap_and_long_lines(ws: Path) -> None:
    (ws / "wide.txt").write_text("a" * 300 + "\n" + "b" * 300 + "\n")
    result = await read_file(make_ctx(ws, max_bytes=400), path="wide.txt")
    assert result.status == "partial" and result.data["next_start_line"] == 2
    (ws / "one_line.json").write_text("x" * 5000)
    result = await read_file(make_ctx(ws, max_bytes=1000), path="one_line.json")
    assert result.status == "partial"
    assert len(result.data["content"]) == 1000
    assert "line 1 is longer than max_bytes" in result.text


async def test_read_file_refuses_binary_and_directories(ws: Path) -> None:
    (ws / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (ws / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    (ws / "folder").mkdir()
    ctx = make_ctx(ws)
    assert code(await read_file(ctx, path="image.png")) == "BINARY_FILE"
    assert code(await read_file(ctx, path="latin1.txt")) == "BINARY_FILE"
    assert code(await read_file(ctx, path="folder")) == "IS_DIRECTORY"


async def test_read_file_range_checks(ws: Path) -> None:
    (ws / "three.txt").write_text("1\n2\n3\n")
    (ws / "empty.txt").write_text("")
    ctx = make_ctx(ws)
    assert code(await read_file(ctx, path="three.txt", start_line=9)) == "INVALID_PARAM"
    assert code(await read_file(ctx, path="three.txt", start_line=3, end_line=2)) == "INVALID_PARAM"
    empty = await read_file(ctx, path="empty.txt")
    assert empty.status == "success" and empty.data["total_lines"] == 0


async def test_read_file_path_escapes_are_denied(ws: Path) -> None:
    (ws / "leak").symlink_to(ws.parent / "outside" / "secret.txt")
    ctx = make_ctx(ws)
    for path in ("../outside/secret.txt", str(ws.parent / "outside" / "secret.txt"), "leak"):
        result = await read_file(ctx, path=path)
        assert code(result) == "ACCESS_DENIED", path
        assert "secret" not in result.text.replace("secret.txt", "")


async def test_read_file_respects_paths_policy(ws: Path) -> None:
    (ws / "private").mkdir()
    (ws / "private" / "keys.txt").write_text("k")
    result = await read_file(make_ctx(ws, paths=["notes/**"]), path="private/keys.txt")
    assert code(result) == "PERMISSION_DENIED"


# ---------------------------------------------------------------- write_file


async def test_write_file_creates_parents_atomically(ws: Path) -> None:
    result = await write_file(make_ctx(ws), path="deep/er/report.md", content="# Report\nbody\n")
    assert result.status == "success" and result.data["applied"] is True
    assert (ws / "deep" / "er" / "report.md").read_text() == "# Report\nbody\n"
    assert result.context["path_resolved"] == "deep/er/report.md"
    assert [p.name for p in (ws / "deep" / "er").iterdir()] == ["report.md"]  # no temp file left
    assert (ws / "deep" / "er" / "report.md").stat().st_mode & 0o777 == 0o644


async def test_write_file_create_refuses_existing(ws: Path) -> None:
    (ws / "a.md").write_text("original")
    result = await write_file(make_ctx(ws), path="a.md", content="new")
    assert code(result) == "ALREADY_EXISTS"
    assert "overwrite" in result.text and "append" in result.text
    assert (ws / "a.md").read_text() == "original"


async def test_write_file_overwrite_and_append_keep_mode(ws: Path) -> None:
    target = ws / "log.txt"
    target.write_text("one\n")
    target.chmod(0o600)
    ctx = make_ctx(ws)
    assert (await write_file(ctx, path="log.txt", content="two\n", mode="append")).status == "success"
    assert target.read_text() == "one\ntwo\n"
    assert (await write_file(ctx, path="log.txt", content="fresh\n", mode="overwrite")).status == "success"
    assert target.read_text() == "fresh\n"
    assert target.stat().st_mode & 0o777 == 0o600
    assert code(await write_file(ctx, path="log.txt", content="x", mode="truncate")) == "INVALID_PARAM"


async def test_write_file_waits_for_the_disk_in_a_thread_only(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """create and overwrite run on the event loop but for the fsync (the one call that waits
    for the disk); append's read-modify-write stays whole in a worker thread."""
    loop_thread, seen = threading.get_ident(), []
    real_fsync, real_replace, real_link = os.fsync, os.replace, os.link

    def noted(name: str, real: Callable[..., None]) -> Callable[..., None]:
        def call(*args: object, **kwargs: object) -> None:
            seen.append((name, threading.get_ident() == loop_thread))
            real(*args, **kwargs)

        return call

    monkeypatch.setattr(os, "fsync", noted("fsync", real_fsync))
    monkeypatch.setattr(os, "replace", noted("replace", real_replace))
    monkeypatch.setattr(os, "link", noted("link", real_link))
    ctx = make_ctx(ws)
    assert (await write_file(ctx, path="a/new.md", content="one\n")).status == "success"
    assert seen == [("fsync", False), ("link", True)]
    seen.clear()
    assert (await write_file(ctx, path="a/new.md", content="two\n", mode="overwrite")).status == "success"
    assert seen == [("fsync", False), ("replace", True)]
    seen.clear()
    assert (await write_file(ctx, path="a/new.md", content="three\n", mode="append")).status == "success"
    assert seen == [("fsync", False), ("replace", False)]
    assert (ws / "a" / "new.md").read_text() == "two\nthree\n"


async def test_write_file_cancelled_while_syncing_leaves_the_file_as_it_was(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cancel (a run stopped) while the data goes to disk waits for the fsync, then removes the
    temp file: the old content stays, and no `.tmp` is left in the user's folder."""
    (ws / "keep.md").write_text("old\n")
    syncing, release = threading.Event(), threading.Event()
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        syncing.set()
        release.wait(30)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    task = asyncio.create_task(write_file(make_ctx(ws), path="keep.md", content="new\n", mode="overwrite"))
    assert await asyncio.to_thread(syncing.wait, 30)
    task.cancel()
    await asyncio.sleep(0)
    assert not task.done()  # the fsync is still under way: the cancel waits for it
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (ws / "keep.md").read_text() == "old\n"
    assert sorted(os.listdir(ws)) == ["keep.md"]


async def test_write_file_policy_denials(ws: Path) -> None:
    result = await write_file(make_ctx(ws, read_only=True), path="x.md", content="x")
    assert code(result) == "PERMISSION_DENIED" and not (ws / "x.md").exists()
    ctx = make_ctx(ws, write_paths=["out/**"])
    assert code(await write_file(ctx, path="elsewhere.md", content="x")) == "PERMISSION_DENIED"
    assert not (ws / "elsewhere.md").exists()
    assert (await write_file(ctx, path="out/ok.md", content="x")).status == "success"
    result = await write_file(make_ctx(ws), path="../escape.md", content="x")
    assert code(result) == "ACCESS_DENIED" and not (ws.parent / "escape.md").exists()
    assert (
        code(await write_file(make_ctx(ws, max_bytes=3), path="big.md", content="12345")) == "INVALID_PARAM"
    )


async def test_paths_nested_too_deep_are_refused_not_crashed(ws: Path) -> None:
    """A path of 2,000 levels (under the 4,096-character limit) used to overflow the stack making
    its folders; it is an INVALID_PARAM like any bad path. 200 levels are made."""
    ctx = make_ctx(ws)
    deep = "/".join(["d"] * 2000)
    for result in (
        await write_file(ctx, path=deep, content="x"),
        await create_directory(ctx, path=deep),
        await write_file(ctx, path=deep, content="x", mode="append"),
    ):
        assert code(result) == "INVALID_PARAM" and "2000 levels deep" in result.text
    assert not (ws / "d").exists()
    assert (await write_file(ctx, path="/".join(["d"] * 200), content="x")).status == "success"


async def test_fifos_are_refused_without_waiting(ws: Path) -> None:
    """A FIFO (made by a shell command, say) would hold a reading tool forever in its open(), and
    the run with it; every tool that reads a file refuses it at once."""
    os.mkfifo(ws / "pipe")
    ctx = make_ctx(ws)
    calls = (
        read_file(ctx, path="pipe"),
        read_file(ctx, path="pipe", encoding="latin-1"),
        stream_read_file(ctx, path="pipe"),
        edit_file(ctx, path="pipe", old_string="a", new_string="b"),
        write_file(ctx, path="pipe", content="x", mode="append"),
    )
    for result in await asyncio.wait_for(asyncio.gather(*calls), 120):  # (a hang, not a timing)
        assert code(result) == "INVALID_PARAM" and "pipe is a FIFO, not a regular file" in result.text
    found = await asyncio.wait_for(grep(ctx, pattern="x", path="."), 120)
    assert found.status == "success"  # a folder search passes it by


async def test_a_lone_surrogate_in_a_path_is_invalid_param(ws: Path) -> None:
    """JSON can carry "\\ud800", which no file name holds; every path tool says so."""
    ctx = make_ctx(ws)
    for result in (
        await delete_file(ctx, path="\ud800"),
        await write_file(ctx, path="a\ud800.md", content="x"),
        await read_file(ctx, path="\ud800"),
    ):
        assert code(result) == "INVALID_PARAM" and "no file name holds" in result.text
    assert (await write_file(ctx, path="b\udc80.md", content="x")).status == "success"  # an undecodable byte


async def test_edit_and_append_refuse_a_file_over_max_bytes(ws: Path) -> None:
    """edit_file and an append read the file whole (and write it anew): a file over the tool's
    max_bytes is refused before it is read, and left as it was."""
    (ws / "big.log").write_text("a\n" * 1000)  # 2,000 bytes
    small = make_ctx(ws, max_bytes=1000)
    edited = await edit_file(small, path="big.log", start_line=1, new_content="b")
    appended = await write_file(small, path="big.log", content="tail\n", mode="append")
    latin = await write_file(small, path="big.log", content="tail\n", mode="append", encoding="latin-1")
    assert (
        code(edited) == "INVALID_PARAM"
        and "big.log is 2.0 KB, over the 1000 B this tool reads" in edited.text
    )
    for result in (appended, latin):
        assert code(result) == "INVALID_PARAM" and "would be over this tool's max_bytes=1000" in result.text
    assert (ws / "big.log").read_text() == "a\n" * 1000
    roomy = make_ctx(ws, max_bytes=2005)
    assert code(await write_file(roomy, path="big.log", content="123456", mode="append")) == "INVALID_PARAM"
    assert (await write_file(roomy, path="big.log", content="12345", mode="append")).status == "success"
    assert (await edit_file(roomy, path="big.log", start_line=1, new_content="b")).status == "success"


async def test_grep_with_a_pattern_that_backtracks_times_out_and_the_loop_runs_meanwhile(ws: Path) -> None:
    """(x+x+)+y on a long line of x backtracks for hours; with `re` it held the interpreter lock all
    that time, so no other run of the process moved and the tool's timeout never fired. The search
    gives up at its share of timeout_s with a TIMEOUT saying why, and the event loop goes on."""
    (ws / "a.txt").write_text("ok\n" + "x" * 5000 + "\n")
    ctx = ToolContext(workspace=ws, base_dir=ws, cwd=ws, run_dir=ws.parent, limits={"timeout_s": 3})
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.create_task(tick())
    result = await asyncio.wait_for(grep(ctx, pattern="(x+x+)+y", path="."), 120)  # (a hang, not a timing)
    ticker.cancel()
    assert code(result) == "TIMEOUT" and "took over 2.7s (in a.txt)" in result.text and "(a+)+" in result.text
    assert ticks > 10  # the loop ran while the search did
    found = await grep(make_ctx(ws), pattern="o[k]", path=".")
    assert found.status == "success" and found.data["matches"][0]["line"] == 1


async def test_globs_a_regular_expression_would_backtrack_on_are_quick(ws: Path) -> None:
    """A glob made into a regular expression backtracked: `*a*a*...*b` against a long name of
    `a`s, or sixty `**`, took hours holding the interpreter lock. The matcher is linear in the
    pattern times the path; a negated class never matches the `/` between folders."""
    (ws / ("a" * 200)).write_text("x")
    (ws / "x" / "y").mkdir(parents=True)
    (ws / "x" / "y" / "f.txt").write_text("x")
    ctx = make_ctx(ws)
    calls = [
        glob(ctx, pattern="*a" * 40 + "*b"),
        glob(ctx, pattern="**/" * 60 + "z"),
        glob(ctx, pattern="x[!a]y"),
    ]
    slow, deep, negated = await asyncio.wait_for(asyncio.gather(*calls), 120)  # (a hang, not a timing)
    for result in (slow, deep, negated):
        assert result.status == "success" and result.text.startswith("No paths match")
    found = await glob(ctx, pattern="**/**/*.txt")
    assert found.text.startswith("1 paths match") and "x/y/f.txt" in found.text
    assert (await glob(ctx, pattern="*a" * 40 + "*")).text.startswith("1 paths match")
    assert (await grep(ctx, pattern="x", path=".", glob="**/" * 60 + "*.txt")).data["matches"][0][
        "file"
    ] == "x/y/f.txt"


async def test_replace_all_of_a_short_string_in_a_large_file(ws: Path) -> None:
    """replace_all of a letter in a 1 MB file (a million occurrences): their lines were counted
    from the top for each one (hours, holding the interpreter lock); an edit that would grow the
    file past max_bytes is refused before it is made; the result lists the first 200 lines."""
    (ws / "big.txt").write_text(("e" * 99 + "\n") * 10_000)
    ctx = make_ctx(ws, max_bytes=2_000_000)
    done = await asyncio.wait_for(
        edit_file(ctx, path="big.txt", old_string="e", new_string="f", replace_all=True), 120
    )  # (a hang, not a timing)
    assert done.status == "success" and done.data["replacements"] == 990_000
    assert done.data["lines"] == [1] * 99 + [2] * 99 + [3] * 2
    grown = await edit_file(ctx, path="big.txt", old_string="f", new_string="fff", replace_all=True)
    assert code(grown) == "INVALID_PARAM" and "over this tool's max_bytes=2000000" in grown.text
    assert (ws / "big.txt").read_text() == ("f" * 99 + "\n") * 10_000
    clash = await edit_file(ctx, path="big.txt", old_string="f", new_string="g")
    assert (
        code(clash) == "CONFLICT" and "occurs 990000 times in big.txt (at lines 1, 2, 3, 4, 5," in clash.text
    )
    assert len(clash.data["lines"]) == 200


async def test_grep_refuses_repeat_counts_that_would_take_minutes_to_compile(ws: Path) -> None:
    """(?:a{10000}){10000} is unrolled to a hundred million steps when it is compiled (minutes,
    gigabytes, on the event loop): refused, naming the product; ordinary counts still work."""
    (ws / "a.txt").write_text("2026-11-27\n")
    ctx = make_ctx(ws)
    huge = await asyncio.wait_for(grep(ctx, pattern="(?:a{10000}){10000}", path="."), 120)  # (a hang)
    assert code(huge) == "INVALID_PARAM" and "multiply to 100000000, over 1000000" in huge.text
    long_count = await grep(ctx, pattern="a{" + "9" * 5000 + "}", path=".")
    assert code(long_count) == "INVALID_PARAM"
    dates = await grep(ctx, pattern=r"\d{4}-\d{2}-\d{2}", path=".")
    assert dates.status == "success" and dates.data["matches"][0]["line"] == 1


async def test_write_file_into_a_directory(ws: Path) -> None:
    (ws / "dir").mkdir()
    assert code(await write_file(make_ctx(ws), path="dir", content="x", mode="overwrite")) == "IS_DIRECTORY"


# ---------------------------------------------------------------- edit_file


async def test_edit_file_replaces_a_unique_string(ws: Path) -> None:
    (ws / "code.py").write_text("def f():\n    return 1\n")
    result = await edit_file(make_ctx(ws), path="code.py", old_string="return 1", new_string="return 2")
    assert result.status == "success" and result.data["replacements"] == 1
    assert (ws / "code.py").read_text() == "def f():\n    return 2\n"
    assert "     2\t    return 2" in result.text


async def test_edit_file_ambiguous_match_is_a_conflict(ws: Path) -> None:
    original = "x = 1\ny = 2\nx = 1\n"
    (ws / "dup.py").write_text(original)
    result = await edit_file(make_ctx(ws), path="dup.py", old_string="x = 1", new_string="x = 3")
    assert code(result) == "CONFLICT"
    assert "2 times" in result.text and "lines 1, 3" in result.text
    assert result.data["lines"] == [1, 3]
    assert (ws / "dup.py").read_text() == original
    result = await edit_file(
        make_ctx(ws), path="dup.py", old_string="x = 1", new_string="x = 3", replace_all=True
    )
    assert result.status == "success" and result.data["replacements"] == 2
    assert (ws / "dup.py").read_text() == "x = 3\ny = 2\nx = 3\n"


async def test_edit_file_not_found_hints_at_near_misses(ws: Path) -> None:
    (ws / "code.py").write_text("if ok:\n        run()\n")
    result = await edit_file(make_ctx(ws), path="code.py", old_string="if ok:\n    run()", new_string="pass")
    assert code(result) == "NOT_FOUND"
    assert "line(s) 1" in result.text
    assert (
        code(await edit_file(make_ctx(ws), path="missing.py", old_string="a", new_string="b")) == "NOT_FOUND"
    )


async def test_edit_file_line_range_mode(ws: Path) -> None:
    (ws / "list.md").write_text("a\nb\nc\nd\n")
    ctx = make_ctx(ws)
    result = await edit_file(ctx, path="list.md", start_line=2, end_line=3, new_content="B\nC2\nC3")
    assert result.status == "success"
    assert (ws / "list.md").read_text() == "a\nB\nC2\nC3\nd\n"
    result = await edit_file(ctx, path="list.md", start_line=1, new_content="")
    assert (ws / "list.md").read_text() == "B\nC2\nC3\nd\n"
    assert (
        code(await edit_file(ctx, path="list.md", start_line=3, end_line=9, new_content="x"))
        == "INVALID_PARAM"
    )


async def test_edit_file_argument_checks(ws: Path) -> None:
    (ws / "f.txt").write_text("abc\n")
    ctx = make_ctx(ws)
    both = await edit_file(ctx, path="f.txt", old_string="a", new_string="b", start_line=1, new_content="x")
    assert code(both) == "INVALID_PARAM"
    assert code(await edit_file(ctx, path="f.txt")) == "INVALID_PARAM"
    assert code(await edit_file(ctx, path="f.txt", old_string="a")) == "INVALID_PARAM"
    assert code(await edit_file(ctx, path="f.txt", old_string="a", new_string="a")) == "INVALID_PARAM"
    assert (ws / "f.txt").read_text() == "abc\n"


async def test_edit_file_crlf_binary_and_read_only(ws: Path) -> None:
    (ws / "win.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = await edit_file(make_ctx(ws), path="win.txt", old_string="one\ntwo", new_string="1\n2")
    assert result.status == "success"
    assert (ws / "win.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"
    (ws / "blob.bin").write_bytes(b"\x00\x01abc")
    assert (
        code(await edit_file(make_ctx(ws), path="blob.bin", old_string="abc", new_string="x"))
        == "BINARY_FILE"
    )
    denied = await edit_file(make_ctx(ws, read_only=True), path="win.txt", old_string="1", new_string="one")
    assert code(denied) == "PERMISSION_DENIED"
    assert (ws / "win.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


# ---------------------------------------------------------------- list_directory / glob / grep


def build_tree(ws: Path) -> None:
    (ws / "notes" / "deep").mkdir(parents=True)
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("ref")
    (ws / "notes" / "a.md").write_text("alpha\nTODO first\n")
    (ws / "notes" / "deep" / "b.md").write_text("beta\ntodo second\nend\n")
    (ws / "main.py").write_text("print('TODO')\n")
    (ws / "blob.bin").write_bytes(b"TODO\x00\x00")


async def test_list_directory_entries_with_types_and_sizes(ws: Path) -> None:
    build_tree(ws)
    result = await list_directory(make_ctx(ws))
    assert result.status == "success"
    entries = {e["path"]: e for e in result.data["entries"]}
    assert entries["notes"]["type"] == "dir" and entries["notes"]["size"] is None
    assert entries["main.py"] == {"path": "main.py", "type": "file", "size": 14}
    assert ".git" in entries  # a flat listing shows everything
    deep = await list_directory(make_ctx(ws), path="notes", recursive=True)
    assert [e["path"] for e in deep.data["entries"]] == ["notes/a.md", "notes/deep", "notes/deep/b.md"]
    recursive = await list_directory(make_ctx(ws), recursive=True)
    assert not any(e["path"].startswith(".git") for e in recursive.data["entries"])


async def test_list_directory_truncates_and_filters(ws: Path) -> None:
    build_tree(ws)
    result = await list_directory(make_ctx(ws, max_entries=2), recursive=True)
    assert result.status == "partial" and result.data["truncated"] is True
    assert len(result.data["entries"]) == 2 and result.data["total"] > 2
    assert "showing 2 of" in result.text
    hidden = await list_directory(make_ctx(ws, paths=["notes"]))
    assert [e["path"] for e in hidden.data["entries"]] == ["notes"]
    assert code(await list_directory(make_ctx(ws), path="main.py")) == "INVALID_PARAM"
    assert code(await list_directory(make_ctx(ws), path="..")) == "ACCESS_DENIED"


async def test_glob_patterns(ws: Path) -> None:
    build_tree(ws)
    ctx = make_ctx(ws)
    result = await glob(ctx, pattern="**/*.md")
    assert result.data["paths"] == ["notes/a.md", "notes/deep/b.md"]
    top = await glob(ctx, pattern="*.md")
    assert top.data["paths"] == [] and "**/*.md" in top.text
    sub = await glob(ctx, pattern="*.md", path="notes")
    assert sub.data["paths"] == ["notes/a.md"]
    assert code(await glob(ctx, pattern="../*")) == "INVALID_PARAM"
    capped = await glob(make_ctx(ws, max_results=1), pattern="**/*")
    assert capped.status == "partial" and len(capped.data["paths"]) == 1


async def test_grep_matches_context_and_filters(ws: Path) -> None:
    build_tree(ws)
    ctx = make_ctx(ws)
    result = await grep(ctx, pattern="TODO")
    assert [(m["file"], m["line"]) for m in result.data["matches"]] == [("main.py", 1), ("notes/a.md", 2)]
    assert result.data["files_skipped"] == 1  # blob.bin
    folded = await grep(ctx, pattern="todo", ignore_case=True, glob="*.md")
    assert [m["file"] for m in folded.data["matches"]] == ["notes/a.md", "notes/deep/b.md"]
    ctx_lines = await grep(ctx, pattern="second", context_lines=1, path="notes")
    match = ctx_lines.data["matches"][0]
    assert match["before"] == ["beta"] and match["after"] == ["end"]
    assert "notes/deep/b.md-1-beta" in ctx_lines.text and "notes/deep/b.md:2:todo second" in ctx_lines.text
    one_file = await grep(ctx, pattern="alpha", path="notes/a.md")
    assert one_file.data["matches"] == [{"file": "notes/a.md", "line": 1, "text": "alpha"}]


async def test_grep_bad_regex_cap_and_escapes(ws: Path) -> None:
    build_tree(ws)
    (ws / "leak.txt").symlink_to(ws.parent / "outside" / "secret.txt")
    ctx = make_ctx(ws)
    assert code(await grep(ctx, pattern="(unclosed")) == "INVALID_PARAM"
    capped = await grep(ctx, pattern="TODO|todo", max_matches=2)
    assert capped.status == "partial" and capped.data["truncated"] is True
    assert len(capped.data["matches"]) == 2 and "stopped after 2 matches" in capped.text
    leak = await grep(ctx, pattern="secret")
    assert leak.data["matches"] == []
    assert code(await grep(ctx, pattern="x", path="../outside")) == "ACCESS_DENIED"


# ---------------------------------------------------------------- delete / create


async def test_delete_file_files_links_and_empty_dirs(ws: Path) -> None:
    ctx = make_ctx(ws)
    (ws / "gone.txt").write_text("x")
    assert (await delete_file(ctx, path="gone.txt")).status == "success"
    assert not (ws / "gone.txt").exists()
    (ws / "target.txt").write_text("keep")
    (ws / "link.txt").symlink_to(ws / "target.txt")
    assert (await delete_file(ctx, path="link.txt")).status == "success"
    assert not (ws / "link.txt").is_symlink() and (ws / "target.txt").read_text() == "keep"
    (ws / "outlink").symlink_to(ws.parent / "outside" / "secret.txt")
    assert (await delete_file(ctx, path="outlink")).status == "success"
    assert (ws.parent / "outside" / "secret.txt").exists()
    (ws / "full" / "x").mkdir(parents=True)
    assert code(await delete_file(ctx, path="full")) == "INVALID_PARAM"
    assert (await delete_file(ctx, path="full/x")).status == "success"
    assert code(await delete_file(ctx, path=".")) == "ACCESS_DENIED"
    assert code(await delete_file(ctx, path="missing")) == "NOT_FOUND"
    assert code(await delete_file(ctx, path="../outside/secret.txt")) == "ACCESS_DENIED"
    assert code(await delete_file(make_ctx(ws, read_only=True), path="target.txt")) == "PERMISSION_DENIED"
    assert (ws / "target.txt").exists()


async def test_create_directory(ws: Path) -> None:
    ctx = make_ctx(ws)
    made = await create_directory(ctx, path="a/b/c")
    assert made.status == "success" and made.data["created"] is True and (ws / "a" / "b" / "c").is_dir()
    again = await create_directory(ctx, path="a/b/c")
    assert again.status == "success" and again.data["created"] is False
    (ws / "file").write_text("x")
    assert code(await create_directory(ctx, path="file")) == "ALREADY_EXISTS"
    assert (
        code(await create_directory(make_ctx(ws, write_paths=["out"]), path="a/new")) == "PERMISSION_DENIED"
    )


# ---------------------------------------------------------------- streaming


async def test_stream_read_walks_the_file_in_chunks(ws: Path) -> None:
    (ws / "big.log").write_text("".join(f"row {i}\n" for i in range(1, 8)))
    ctx = make_ctx(ws)
    first = await stream_read_file(ctx, path="big.log", chunk_lines=3)
    assert first.data["content"] == "row 1\nrow 2\nrow 3" and first.data["done"] is False
    stream_id = first.data["stream_id"]
    assert stream_id in ctx.state.of(FileStreams).cursors and stream_id in first.text
    second = await continue_stream_read(ctx, stream_id=stream_id)
    assert (second.data["start_line"], second.data["end_line"]) == (4, 6)
    last = await continue_stream_read(ctx, stream_id=stream_id)
    assert last.data["content"] == "row 7" and last.data["done"] is True and last.data["stream_id"] is None
    assert "finished" in last.text
    gone = await continue_stream_read(ctx, stream_id=stream_id)
    assert code(gone) == "NOT_FOUND"


async def test_stream_read_notices_changes_and_binary(ws: Path) -> None:
    target = ws / "live.log"
    target.write_text("a\nb\nc\n")
    ctx = make_ctx(ws)
    first = await stream_read_file(ctx, path="live.log", chunk_lines=1)
    with target.open("a") as f:
        f.write("d\n")
    changed = await continue_stream_read(ctx, stream_id=first.data["stream_id"])
    assert code(changed) == "CONFLICT"
    (ws / "bin").write_bytes(os.urandom(64) + b"\x00")
    assert code(await stream_read_file(ctx, path="bin")) == "BINARY_FILE"
    assert code(await stream_read_file(ctx, path="../outside/secret.txt")) == "ACCESS_DENIED"
