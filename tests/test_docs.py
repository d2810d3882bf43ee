"""The documentation is tested like code: README.md and every page under docs/.

Every fenced ```yaml block is checked by something (CONTRIBUTING.md states the convention):

- a block whose first line is `# fragment: KIND` is a piece of a KIND manifest: it is merged
  into the smallest valid manifest of that kind and checked against the kind's JSON Schema
  (`flowrun.manifest.schema.export.kind_schema`);
- a block that names a file, by `title="PATH"` on the fence or a first-line comment `# PATH`
  (`# agents.d/searcher.yaml`, `# my-project/agents.d/x.yaml: what it is`), is that file;
- a block that is a flowrun manifest (it has `kind:`, or its file is in agents.d/, tools.d/ or
  models.d/) is written into a project made of a copy of examples/ and the page's other named
  files (a manifest without a file goes to agents.d/NAME.yaml, tools.d/NAME.yaml, ... by its
  kind) and the whole project must pass `flowrun validate` (warnings allowed). A `kind: test`
  block names a recorded run, so it is checked against its schema instead;
- any other named file (a GitHub Actions job, a pre-commit config) must parse;
- a block that is none of these fails the test: mark it.

```json blocks must parse, and ```python blocks must compile.

A ```bash block right after a line `<!-- runnable -->` is run: each of its commands (a line, or
lines joined by a trailing backslash; `#` comments skipped) must start with `flowrun` and exit
0, in order, in a folder of the page's own holding a copy of examples/ (as `examples/`) and the
page's named files. Run there: dry runs and validate, show, runs commands (no key, no network).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cli import run_cli
from support.paths import REPO

PAGES = sorted([REPO / "README.md", *(p for p in (REPO / "docs").rglob("*.md") if "_hooks" not in p.parts)])
FENCE = re.compile(
    r"^(?P<indent> *)```(?P<lang>[\w-]*)(?P<attrs>[^\n]*)\n(?P<body>.*?)^(?P=indent)```", re.S | re.M
)
FILE_COMMENT = re.compile(r"^#\s+([\w.][\w./-]*\.(?:ya?ml|json))(?=$|[:,\s])")
FRAGMENT = re.compile(r"^#\s*fragment:\s*(\w+)\s*$")
RUNNABLE = "<!-- runnable -->"
MANIFEST_FOLDERS = {"agents.d": "agent", "tools.d": "tool", "models.d": "models"}
# the smallest valid manifest of each kind, which a fragment is merged into
BASES: dict[str, dict[str, Any]] = {
    "workflow": {"version": 1, "kind": "workflow", "name": "doc", "entry": "doc"},
    "agent": {"version": 1, "kind": "agent", "name": "doc"},
    "tool": {
        "version": 1,
        "kind": "tool",
        "name": "doc",
        "description": "A tool.",
        "parameters": {"type": "object"},
        "implementation": {"command": ["true"]},
    },
    "models": {"version": 1, "kind": "models", "models": {"doc": {"provider": "test", "model": "doc"}}},
    "script": {"version": 1, "kind": "script", "agents": {}},
    "test": {"version": 1, "kind": "test", "name": "doc", "workflow": "w.yaml", "cassette": "c"},
    "evalset": {"version": 1, "kind": "evalset", "name": "doc", "workflow": "w.yaml", "cases": [{"id": "a"}]},
}


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    attrs: str
    body: str
    runnable: bool

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"

    @property
    def first_line(self) -> str:
        return self.body.split("\n", 1)[0].strip()

    @property
    def file(self) -> str | None:
        title = re.search(r'title="([^"]+)"', self.attrs)
        if title:
            return title.group(1)
        named = FILE_COMMENT.match(self.first_line)
        return named.group(1) if named else None

    @property
    def fragment_kind(self) -> str | None:
        match = FRAGMENT.match(self.first_line)
        return match.group(1) if match else None


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        indent = match.group("indent")
        body = "\n".join(line.removeprefix(indent) for line in match.group("body").split("\n"))
        found.append(
            Block(
                page=page,
                line=text.count("\n", 0, match.start()) + 1,
                lang=match.group("lang"),
                attrs=match.group("attrs"),
                body=body,
                runnable=before == RUNNABLE,
            )
        )
    return found


def page_id(page: Path) -> str:
    return str(page.relative_to(REPO))


def kind_schema(kind: str) -> dict[str, Any]:
    from flowrun.manifest.schema.export import kind_schema as schema_of

    return schema_of(kind)


def manifest_kind(block: Block, data: Any) -> str | None:
    """The manifest kind a YAML block holds, or None when it is not a flowrun manifest."""
    if isinstance(data, dict) and isinstance(data.get("kind"), str):
        return str(data["kind"])
    path = block.file
    if path is not None:
        folder = Path(path).parent.name
        if folder in MANIFEST_FOLDERS:
            return MANIFEST_FOLDERS[folder]
    return None


def target_path(block: Block, data: dict[str, Any], kind: str, index: int) -> str:
    """Where a manifest block goes in the page's project: its file, else the folder its kind
    is found in."""
    if block.file is not None:
        return block.file
    name = data.get("name", f"doc{index}")
    folder = {"agent": "agents.d", "tool": "tools.d", "models": "models.d"}.get(kind)
    return f"{folder}/{name}.yaml" if folder else f"doc_{kind}_{index}.yaml"


def copy_examples(target: Path) -> None:
    """examples/ without what no page's block needs (the corpus ships with flowrun anyway)."""
    skipped = shutil.ignore_patterns("corpus", "claude_code", "ci")
    shutil.copytree(REPO / "examples", target, ignore=skipped, dirs_exist_ok=True)


def write_named_files(page_blocks: list[Block], root: Path, skip: tuple[str, ...] = ()) -> dict[str, Block]:
    """The page's named files, written under root (but manifests of the kinds in `skip`);
    every flowrun manifest among them."""
    written: dict[str, Block] = {}
    manifests: dict[str, Block] = {}
    for index, block in enumerate(page_blocks):
        if block.lang not in ("yaml", "yml", "json") or block.fragment_kind is not None:
            continue
        data = yaml.safe_load(block.body) if block.lang != "json" else json.loads(block.body)
        kind = manifest_kind(block, data) if block.lang != "json" else None
        if kind in skip:
            continue
        if kind is not None and isinstance(data, dict):
            path = target_path(block, data, kind, index)
        elif block.file is not None:
            path = block.file
        else:
            continue
        assert path not in written, f"{block.where}: {path} is written by {written[path].where} too"
        written[path] = block
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(block.body, encoding="utf-8")
        if kind is not None:
            manifests[path] = block
    return manifests


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_block_is_checked(page: Path, tmp_path: Path) -> None:
    from jsonschema import Draft202012Validator

    page_blocks = blocks(page)
    for block in page_blocks:
        if block.lang == "json":
            json.loads(block.body)
        elif block.lang == "python":
            compile(block.body, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        elif block.lang in ("yaml", "yml"):
            data = yaml.safe_load(block.body)
            kind = block.fragment_kind
            if kind is not None:
                assert kind in BASES, f"{block.where}: unknown fragment kind {kind!r}"
                assert isinstance(data, dict | None), f"{block.where}: a fragment is a mapping of keys"
                manifest = {**BASES[kind], **(data or {})}
                errors = [e.message for e in Draft202012Validator(kind_schema(kind)).iter_errors(manifest)]
                assert not errors, f"{block.where}: fragment of a {kind} manifest: {errors}"
                continue
            found = manifest_kind(block, data)
            if found == "test":
                errors = [e.message for e in Draft202012Validator(kind_schema("test")).iter_errors(data)]
                assert not errors, f"{block.where}: {errors}"
            assert found is not None or block.file is not None, (
                f"{block.where}: a YAML block must be a manifest (kind:), a named file "
                '(title="PATH" or a first line `# PATH`) or a fragment (a first line `# fragment: KIND`)'
            )
    copy_examples(tmp_path / "project")
    # over the examples' own files; a test file names a recorded run: its schema was checked above
    checked = write_named_files(page_blocks, tmp_path / "project", skip=("test",))
    if not checked:
        return
    proc = run_cli(["validate", "."], cwd=tmp_path / "project")
    blocks_at = ", ".join(f"{path} ({block.where})" for path, block in checked.items())
    problems = "\n".join(line for line in proc.stdout.splitlines() if "error[" in line)
    assert proc.returncode == 0, f"the manifests of {blocks_at} do not validate:\n{problems}{proc.stderr}"


def commands(block: Block) -> list[list[str]]:
    joined = block.body.replace("\\\n", " ")
    found = []
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        argv = shlex.split(line, comments=True)
        assert argv[0] == "flowrun", f"{block.where}: a runnable block holds flowrun commands only: {line}"
        found.append(argv[1:])
    return found


RUNNABLE_PAGES = [p for p in PAGES if any(b.runnable for b in blocks(p))]


@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=page_id)
def test_runnable_commands(page: Path, tmp_path: Path) -> None:
    page_blocks = blocks(page)
    copy_examples(tmp_path / "examples")
    write_named_files(page_blocks, tmp_path)
    for block in page_blocks:
        if not block.runnable:
            continue
        assert block.lang in ("bash", "console", "sh"), f"{block.where}: runnable blocks are ```bash"
        for argv in commands(block):
            proc = run_cli(argv, cwd=tmp_path)
            assert proc.returncode == 0, (
                f"{block.where}: `flowrun {shlex.join(argv)}` exited {proc.returncode}:\n"
                f"{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
            )


def test_runnable_pages_exist() -> None:
    """The marker is spelled right somewhere: the tutorial's commands are run."""
    assert REPO / "docs" / "tutorial" / "first-team.md" in RUNNABLE_PAGES


# --- the README as a front page ---------------------------------------------------------------


def test_readme_is_a_front_page() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; move detail into docs/"


def test_ci_the_readme_and_contributing_run_one_script() -> None:
    """.ci/run calls scripts/check, which the README's quickstart and CONTRIBUTING.md show; it
    sets the virtualenv up itself and builds the docs with their warnings shown (`-q` hides
    them from --strict's count: the build passed with 4 warnings)."""
    ci = [
        line
        for line in (REPO / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.startswith(("#", "set ", "cd "))
    ]
    assert ci == ["exec scripts/check"]
    for page in ("README.md", "CONTRIBUTING.md"):
        shown = [line.strip() for b in blocks(REPO / page) if b.lang == "bash" for line in b.body.split("\n")]
        assert "scripts/check" in shown, f"{page} does not show scripts/check"
    script = REPO / "scripts" / "check"
    assert os.access(script, os.X_OK)
    lines = script.read_text().splitlines()
    assert "python3 -m venv .venv" in lines and ".venv/bin/pip install -q -e '.[dev,docs]'" in lines
    (docs,) = [shlex.split(line) for line in lines if "mkdocs build" in line]
    assert "--strict" in docs and not {"-q", "--quiet"} & set(docs), docs
    assert ".venv/bin/pytest -q" in lines


def test_readme_links_resolve() -> None:
    """Relative links of the README (to docs/*.md and their sections) work on GitHub too."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    relative = [link for link in links if not re.match(r"[a-z]+://|#|mailto:", link)]
    assert any(link.startswith("docs/") for link in relative)
    for link in relative:
        path, _, anchor = link.partition("#")
        assert (REPO / path).exists(), f"README.md links to {link}, which does not exist"
        if anchor and path.endswith(".md"):
            headings = re.findall(r"^#+ (.+?)(?: \{#([\w-]+)\})?$", (REPO / path).read_text(), re.M)
            slugs = {explicit or _slug(title) for title, explicit in headings}
            assert anchor in slugs, f"README.md links to {link}: no such section"


def _slug(title: str) -> str:
    """mkdocs' default heading id (toc's slugify)."""
    text = re.sub(r"[^\w\s-]", "", title.replace("`", "")).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


# --- the generated reference pages ------------------------------------------------------------


@pytest.fixture(scope="module")
def hook() -> Any:
    sys.path.insert(0, str(REPO / "docs" / "_hooks"))
    try:
        import reference

        return reference
    finally:
        sys.path.remove(str(REPO / "docs" / "_hooks"))


def test_manifest_reference_has_every_key(hook: Any) -> None:
    text = hook.generate("manifest-keys")
    for kind in hook.manifest_kinds():
        assert f"## `kind: {kind}`" in text
        for key in kind_schema(kind)["properties"]:
            assert f"| `{key}` |" in text, (kind, key)
    nested = ("limits.max_cost_usd", "models.NAME.fallback", "steps[].foreach.collect", "context.compact_at")
    nested += ("guardrails.output", "guardrails.input[].forbid", "guardrails.tools[].check")
    for key in nested:
        assert f"| `{key}` |" in text, key
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert all(not row.endswith("|  |") for row in rows), "a key without an example value"


def test_cli_reference_has_every_command_and_option(hook: Any) -> None:
    text = hook.generate("cli")
    for path, command, _ in hook.all_commands():
        assert f"## `{path}`" in text, path
        for param in command.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("-"):
                    assert f"`{opt}" in text or f", {opt}" in text, (path, opt)
    assert "## `flowrun serve mcp`" in text and "## `flowrun export otel`" in text


def test_python_api_reference_has_every_public_name(hook: Any) -> None:
    import flowrun

    text = hook.generate("python-api")
    for name in flowrun.__all__:
        if not name.startswith("__"):
            assert re.search(rf"^::: flowrun\.[\w.]+\.{name}$", text, re.M), name


def test_layout_lists_every_module(hook: Any) -> None:
    text = hook.generate("layout")
    engine = REPO / "engine" / "flowrun"
    for module in engine.rglob("*.py"):
        if module.name != "__init__.py":
            assert f"| `{module.name}` |" in text, module
    for package in {p.parent for p in engine.rglob("__init__.py")}:
        assert f"`{package.relative_to(REPO / 'engine')}/`" in text, package
