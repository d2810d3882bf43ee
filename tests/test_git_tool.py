"""The git tool against real repositories in tmp folders."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from flowrun.tools.base import ToolContext
from flowrun.tools.git import git
from flowrun.types import ToolResult

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "HOME": "/nonexistent",
}


def run_git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def make_ctx(ws: Path, **config: object) -> ToolContext:
    return ToolContext(workspace=ws, base_dir=ws, cwd=ws, run_dir=ws.parent, config=dict(config))


def code(result: ToolResult) -> str | None:
    return result.error.code if result.error else None


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)
    ws = tmp_path / "ws"
    ws.mkdir()
    run_git(ws, "init", "-q", "-b", "main")
    (ws / "readme.md").write_text("hello\n")
    run_git(ws, "add", "readme.md")
    run_git(ws, "commit", "-q", "-m", "first commit")
    (ws / "readme.md").write_text("hello\nworld\n")
    return ws


async def test_read_only_subcommands_run(repo: Path) -> None:
    ctx = make_ctx(repo)
    log = await git(ctx, args=["log", "--oneline"])
    assert log.status == "success" and "first commit" in log.text
    assert log.data["argv"] == ["git", "log", "--oneline"]
    diff = await git(ctx, args="diff -- readme.md")
    assert "+world" in diff.data["stdout"]
    status = await git(ctx, args="git status --short")  # a repeated program name is tolerated
    assert status.data["stdout"].strip() == "M readme.md"
    assert status.context["params_input"] == {"args": "git status --short"}


async def test_failures_keep_git_output(repo: Path) -> None:
    result = await git(make_ctx(repo), args=["show", "no-such-ref"])
    assert code(result) == "COMMAND_FAILED" and result.data["exit_code"] == 128
    assert "no-such-ref" in result.text


async def test_subcommands_outside_the_allow_list_are_refused(repo: Path) -> None:
    result = await git(make_ctx(repo), args=["commit", "-am", "sneaky"])
    assert code(result) == "PERMISSION_DENIED" and "commit" in result.text
    assert run_git(repo, "rev-list", "--count", "HEAD").strip() == "1"
    ctx = make_ctx(repo, allow_subcommands=["add", "commit", "log"])
    assert (await git(ctx, args=["commit", "-am", "allowed"])).status == "success"
    assert run_git(repo, "rev-list", "--count", "HEAD").strip() == "2"
    assert code(await git(ctx, args=["status"])) == "PERMISSION_DENIED"


@pytest.mark.parametrize(
    "args",
    [
        ["-c", "core.pager=touch pwned", "log"],
        ["--git-dir=/tmp", "status"],
        ["--exec-path=/tmp", "status"],
        ["-C", "/", "status"],
        ["diff", "--output=pwned"],
        ["diff", "--output", "pwned"],
        ["diff", "--no-index", "/etc/hostname", "readme.md"],
        ["diff", "--ext-diff"],
        ["grep", "-O", "touch pwned", "hello"],
        ["grep", "-nOtouch", "hello"],
    ],
)
async def test_escape_options_are_refused(repo: Path, args: list[str]) -> None:
    result = await git(make_ctx(repo), args=args)
    assert code(result) == "PERMISSION_DENIED", args
    assert not (repo / "pwned").exists()


async def test_bad_args(repo: Path) -> None:
    assert code(await git(make_ctx(repo), args="")) == "INVALID_PARAM"
    assert code(await git(make_ctx(repo), args="log 'unclosed")) == "INVALID_PARAM"


async def test_repository_config_cannot_run_programs(repo: Path) -> None:
    marker = repo.parent / "fsmonitor_ran"
    hook = repo.parent / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    run_git(repo, "config", "core.fsmonitor", str(hook))
    run_git(repo, "status")  # plain git runs the hook: the test can fail
    assert marker.exists()
    marker.unlink()
    result = await git(make_ctx(repo), args=["status"])
    assert result.status == "success"
    assert not marker.exists()


async def test_discovery_stops_at_the_base_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)
    outer = tmp_path / "outer"
    (outer / "ws").mkdir(parents=True)
    run_git(outer, "init", "-q")
    assert run_git(outer / "ws", "rev-parse", "--show-toplevel").strip() == str(outer)
    result = await git(make_ctx(outer / "ws"), args=["status"])
    assert code(result) == "COMMAND_FAILED"
    assert "not a git repository" in result.text


# ---------------------------------------------------------------- escapes (issue 10's attacks)

WRITING = ["init", "add", "commit", "log", "status", "blame", "show", "diff", "grep", "clone", "worktree"]


@pytest.mark.parametrize(
    "args",
    [
        ["init", "../escaped"],
        ["init", "{outside}/escaped"],
        ["init", "--separate-git-dir", "{outside}/gitdir"],
        ["init", "--separate-git-dir={outside}/gitdir", "sub"],
        ["init", "--sep={outside}/gitdir", "sub"],  # git's abbreviation of --separate-git-dir
        ["init", "--bare", "~/escaped"],
        ["init", "--template={outside}", "sub"],
        ["clone", ".", "../escaped"],
        ["worktree", "add", "../escaped"],
        ["status", "--work-tree={outside}"],
        ["log", "--git-dir=.git"],
    ],
)
async def test_nothing_is_created_outside_the_workdir(repo: Path, args: list[str]) -> None:
    outside = repo.parent
    before = sorted(p.name for p in outside.iterdir())
    ctx = make_ctx(repo, allow_subcommands=WRITING)
    result = await git(ctx, args=[a.format(outside=outside) for a in args])
    assert code(result) == "PERMISSION_DENIED", result.text
    assert sorted(p.name for p in outside.iterdir()) == before


@pytest.mark.parametrize(
    "args",
    [
        ["blame", "--contents", "/etc/passwd", "readme.md"],
        ["blame", "--contents=/etc/passwd", "readme.md"],
        ["blame", "--cont", "/etc/passwd", "readme.md"],  # abbreviated
        ["blame", "--contents", ".git/COMMIT_EDITMSG", "readme.md"],  # inside, still refused
        ["commit", "-F", "/proc/self/environ"],
        ["commit", "-F/proc/self/environ"],
        ["commit", "-aF", "/proc/self/environ"],  # clustered short options
        ["commit", "--file=/proc/self/environ"],
        ["commit", "--file", "msg.txt"],
        ["commit", "--fi=/proc/self/environ"],
        ["diff", "/etc/passwd", "readme.md"],  # outside the repo git would imply --no-index
        ["log", "--", "../outside.txt"],
        ["show", "HEAD", "--", "/etc/passwd"],
        ["grep", "-f", "/etc/passwd"],
        ["grep", "-nf/etc/passwd"],
        ["blame", "outside-link"],
        ["archive", "-o../escaped.tar", "HEAD"],
    ],
)
async def test_files_outside_cannot_be_read(repo: Path, args: list[str]) -> None:
    (repo / "msg.txt").write_text("a message\n")
    (repo.parent / "outside.txt").write_text("secret\n")
    (repo / "outside-link").symlink_to(repo.parent / "outside.txt")
    ctx = make_ctx(repo, allow_subcommands=[*WRITING, "archive"])
    result = await git(ctx, args=args)
    assert code(result) == "PERMISSION_DENIED", (args, result.text)
    assert "root:" not in result.text and "secret" not in result.text
    assert run_git(repo, "rev-list", "--count", "HEAD").strip() == "1"


async def test_ordinary_use_still_works(repo: Path) -> None:
    ctx = make_ctx(repo, allow_subcommands=WRITING)
    assert (await git(ctx, args=["init", "-q", "sub"])).status == "success"
    assert (repo / "sub" / ".git").is_dir()
    assert (await git(ctx, args=["grep", "-F", "hello"])).status == "success"
    assert (await git(ctx, args=["log", "--format=%H/%s", "HEAD~0", "--", "readme.md"])).status == "success"
    commit = await git(ctx, args=["commit", "-am", "second"])
    assert commit.status == "success", commit.text
    shown = await git(ctx, args=["show", "--stat", "HEAD"])
    assert "second" in shown.text and "readme.md" in shown.text


async def test_git_sees_no_key_and_nothing_outside(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An alias planted in the repository's config runs a program: inside the sandbox, with
    git's allowlisted environment."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-openai-0123456789abcdef")
    (repo.parent / "outside.txt").write_text("secret\n")
    run_git(repo, "config", "alias.envdump", "!env; cat ../outside.txt /etc/shadow")
    result = await git(make_ctx(repo, allow_subcommands=["envdump"]), args=["envdump"])
    assert "sk-fake" not in result.text and "OPENAI" not in result.text
    assert "secret" not in result.text and "Permission denied" in result.text
    # HOME is the run folder's .home/ (make_ctx's run_dir is the parent), never in the workspace
    assert f"HOME={repo.parent}/.home" in result.text and "GIT_AUTHOR_NAME=Test" in result.text
