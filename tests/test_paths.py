"""Path safety: confinement to the base folder (after symlinks) and the per-agent path policy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowrun.tools.base import ToolContext
from flowrun.tools.paths import PathDenied, display_path, glob_matches, path_allowed, resolve_path


def make_ctx(base: Path, cwd: Path | None = None, **config: object) -> ToolContext:
    return ToolContext(
        workspace=base, base_dir=base, cwd=cwd or base, run_dir=base.parent, config=dict(config)
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """ws/ with files, a subfolder and symlinks pointing inside and outside; outside/ next to it."""
    base = tmp_path / "ws"
    (base / "sub").mkdir(parents=True)
    (base / "notes").mkdir()
    (base / "src").mkdir()
    (base / "a.txt").write_text("a")
    (base / "src" / "code.py").write_text("x = 1")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (base / "link_out").symlink_to(outside)
    (base / "file_link_out").symlink_to(outside / "secret.txt")
    (base / "dangling_out").symlink_to(outside / "missing.txt")
    (base / "link_in").symlink_to(base / "sub")
    (base / "notes" / "alias.py").symlink_to(base / "src" / "code.py")
    return base


def denied_code(ctx: ToolContext, path: str, **kw: bool) -> str:
    with pytest.raises(PathDenied) as info:
        resolve_path(ctx, path, **kw)
    return info.value.code


def test_relative_paths_resolve_inside(tree: Path) -> None:
    ctx = make_ctx(tree)
    assert resolve_path(ctx, "a.txt") == (tree / "a.txt").resolve()
    assert resolve_path(ctx, "sub/../a.txt") == (tree / "a.txt").resolve()
    assert resolve_path(ctx, "new/file.md", write=True) == (tree / "new" / "file.md").resolve()
    assert resolve_path(ctx, "link_in") == (tree / "sub").resolve()
    assert resolve_path(ctx, ".") == tree.resolve()


def test_dotdot_traversal_is_denied(tree: Path) -> None:
    ctx = make_ctx(tree)
    assert denied_code(ctx, "../outside/secret.txt") == "ACCESS_DENIED"
    assert denied_code(ctx, "sub/../../outside") == "ACCESS_DENIED"
    assert denied_code(ctx, "..") == "ACCESS_DENIED"


def test_absolute_and_odd_paths_are_denied(tree: Path) -> None:
    ctx = make_ctx(tree)
    assert denied_code(ctx, str(tree / "a.txt")) == "ACCESS_DENIED"  # absolute, even inside
    assert denied_code(ctx, "/etc/passwd") == "ACCESS_DENIED"
    assert denied_code(ctx, "\\etc\\passwd") == "ACCESS_DENIED"
    assert denied_code(ctx, "C:\\Windows") == "ACCESS_DENIED"
    assert denied_code(ctx, "a.txt\x00.png") == "ACCESS_DENIED"
    assert denied_code(ctx, "") == "INVALID_PARAM"


def test_symlinks_pointing_outside_are_denied(tree: Path) -> None:
    ctx = make_ctx(tree)
    assert denied_code(ctx, "link_out/secret.txt") == "ACCESS_DENIED"
    assert denied_code(ctx, "file_link_out") == "ACCESS_DENIED"
    assert denied_code(ctx, "dangling_out", write=True) == "ACCESS_DENIED"


def test_follow_symlinks_false_names_the_link_itself(tree: Path) -> None:
    ctx = make_ctx(tree)
    assert resolve_path(ctx, "file_link_out", follow_symlinks=False) == tree.resolve() / "file_link_out"
    assert denied_code(ctx, "link_out/secret.txt", follow_symlinks=False) == "ACCESS_DENIED"


def test_relative_paths_start_at_cwd(tree: Path) -> None:
    ctx = make_ctx(tree, cwd=tree / "sub")
    assert resolve_path(ctx, "x.md", write=True) == (tree / "sub" / "x.md").resolve()
    assert resolve_path(ctx, "../a.txt") == (tree / "a.txt").resolve()
    assert denied_code(ctx, "../../outside") == "ACCESS_DENIED"
    assert display_path(ctx, tree / "a.txt") == "../a.txt"


def test_cwd_outside_base_falls_back_to_base(tree: Path) -> None:
    ctx = make_ctx(tree, cwd=tree.parent / "outside")
    assert resolve_path(ctx, "a.txt") == (tree / "a.txt").resolve()
    assert resolve_path(ctx, "secret.txt") == (tree / "secret.txt").resolve()  # never the outside file


def test_engine_files_are_protected(tree: Path) -> None:
    (tree / "events.jsonl").write_text("{}")
    (tree / "sub" / "log_alias").symlink_to(tree / "events.jsonl")
    ctx = make_ctx(tree)
    ctx.protected = frozenset({"events.jsonl"})
    assert denied_code(ctx, "events.jsonl") == "PERMISSION_DENIED"
    assert denied_code(ctx, "sub/log_alias", write=True) == "PERMISSION_DENIED"
    assert not path_allowed(ctx, tree.resolve() / "events.jsonl")
    assert resolve_path(ctx, "sub/events.jsonl", write=True) == (tree / "sub" / "events.jsonl").resolve()


def test_read_only_denies_writes_not_reads(tree: Path) -> None:
    ctx = make_ctx(tree, read_only=True)
    assert resolve_path(ctx, "a.txt") == (tree / "a.txt").resolve()
    assert denied_code(ctx, "a.txt", write=True) == "PERMISSION_DENIED"
    assert denied_code(ctx, "new.txt", write=True) == "PERMISSION_DENIED"


def test_paths_policy_checks_the_resolved_path(tree: Path) -> None:
    ctx = make_ctx(tree, paths=["notes/**", "*.txt"])
    assert resolve_path(ctx, "notes/new.md", write=True) == (tree / "notes" / "new.md").resolve()
    assert resolve_path(ctx, "a.txt") == (tree / "a.txt").resolve()
    assert denied_code(ctx, "src/code.py") == "PERMISSION_DENIED"
    # the name is under notes/, but the link leads to src/: denied
    assert denied_code(ctx, "notes/alias.py") == "PERMISSION_DENIED"
    # the folder walkers' root skips the glob check but not confinement
    assert resolve_path(ctx, ".", enforce_paths=False) == tree.resolve()
    assert denied_code(ctx, "..", enforce_paths=False) == "ACCESS_DENIED"


def test_write_paths_limit_writes_only(tree: Path) -> None:
    ctx = make_ctx(tree, write_paths=["out"])
    assert (
        resolve_path(ctx, "out/deep/report.md", write=True) == (tree / "out" / "deep" / "report.md").resolve()
    )
    assert resolve_path(ctx, "src/code.py") == (tree / "src" / "code.py").resolve()
    assert denied_code(ctx, "src/code.py", write=True) == "PERMISSION_DENIED"
    assert denied_code(ctx, "outside.md", write=True) == "PERMISSION_DENIED"


def test_path_allowed_filters(tree: Path) -> None:
    ctx = make_ctx(tree, paths=["notes"], write_paths=["notes/drafts/**"])
    base = tree.resolve()
    assert path_allowed(ctx, base / "notes" / "x.md")
    assert not path_allowed(ctx, base / "src" / "code.py")
    assert not path_allowed(ctx, tree.parent.resolve() / "outside")
    assert path_allowed(ctx, base / "notes" / "drafts" / "d.md", write=True)
    assert not path_allowed(ctx, base / "notes" / "x.md", write=True)


@pytest.mark.parametrize(
    ("rel", "pattern", "expected"),
    [
        ("a.md", "*.md", True),
        ("d/a.md", "*.md", False),
        ("d/e/a.md", "**/*.md", True),
        ("a.md", "**/*.md", True),
        ("notes", "notes/**", True),
        ("notes/x/y", "notes/**", True),
        ("notesx", "notes/**", False),
        ("a/b", "a/**/b", True),
        ("a/x/y/b", "a/**/b", True),
        ("a/b/c", "a/*", False),
        ("ab/c", "a?/c", True),
        ("c.py", "[!ab].py", True),
        ("a.py", "[!ab].py", False),
        ("", "**", True),
        ("x/y", "x[!a]y", False),  # a negated class never matches the `/` between folders
        ("a", "a/**/**", True),  # as `a/**`
        ("a/b", "a/**/**/**/b", True),
        ("a" * 200, "*a" * 40 + "*b", False),  # (a regular expression backtracked for hours)
        ("a" * 200, "*a" * 40 + "*", True),
        ("x/" * 100 + "y", "**/" * 60 + "z", False),
        ("[a]", "[[]a]", True),  # `[` in a class is literal
        ("a&b", "a[&]b", True),
    ],
)
def test_glob_matches(rel: str, pattern: str, expected: bool) -> None:
    assert glob_matches(rel, pattern) is expected


# ---------------------------------------------------------------- property test


@pytest.fixture(scope="module")
def hostile_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("prop")
    base = root / "base"
    (base / "sub" / "deeper").mkdir(parents=True)
    (root / "outside").mkdir()
    (base / "link_out").symlink_to(root / "outside")
    (base / "sub" / "up2").symlink_to(Path("..") / "..")
    (base / "abs_root").symlink_to("/")
    (base / "loop").symlink_to(base / "loop")
    (base / "link_in").symlink_to(base / "sub")
    (base / "é").mkdir()
    return base


SEGMENTS = st.sampled_from(
    [
        "..",
        ".",
        "",
        "sub",
        "deeper",
        "link_out",
        "up2",
        "abs_root",
        "loop",
        "link_in",
        "~",
        "é",
        "\\",
        "..\\..",
        "\x00",
    ]
)
PATHS = st.one_of(
    st.lists(st.one_of(SEGMENTS, st.text(max_size=4)), max_size=8).map("/".join),
    st.lists(SEGMENTS, max_size=8).map(lambda parts: "/" + "/".join(parts)),
    st.text(max_size=20),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=PATHS, write=st.booleans(), from_sub=st.booleans())
def test_nothing_resolves_outside_the_base(
    hostile_tree: Path, path: str, write: bool, from_sub: bool
) -> None:
    base = hostile_tree.resolve()
    ctx = make_ctx(hostile_tree, cwd=hostile_tree / "sub" if from_sub else None)
    try:
        resolved = resolve_path(ctx, path, write=write)
    except PathDenied as e:
        assert e.code in {"ACCESS_DENIED", "PERMISSION_DENIED", "INVALID_PARAM"}
        return
    assert resolved == base or base in resolved.parents
    real = Path(os.path.realpath(resolved))
    assert real == base or base in real.parents
