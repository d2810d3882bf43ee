"""The hand-written docs against the code: every list a page shares with the code (the run
options, the exit codes, the event types, the environment variables, the manifest keys and the
limits' defaults) and every source file a page or a comment names. Each test fails when the
code gains what the page does not list, or the page keeps what the code lost.

(The generated reference pages, made from the code by docs/_hooks/reference.py, are checked in
tests/test_docs.py.)"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import importlib.util
import io
import json
import re
import subprocess
import tokenize
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.paths import REPO

DOCS = REPO / "docs"
ENGINE = REPO / "engine" / "flowrun"
CODE_SPAN = re.compile(r"`([^`]+)`")


# --- reading a page ---------------------------------------------------------------------------


@dataclasses.dataclass
class Table:
    heading: str  # the last heading above it
    line: int
    header: list[str]
    rows: list[list[str]]

    def column(self, name: str) -> list[str]:
        index = self.header.index(name)
        return [row[index] for row in self.rows]


def cells(line: str) -> list[str]:
    """A table row's cells (a `\\|` stays inside its cell)."""
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def tables(page: Path) -> list[Table]:
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Table] = []
    heading = ""
    in_fence = False
    index = 0
    while index < len(lines):
        line = lines[index]
        in_fence = in_fence != line.lstrip().startswith("```")
        if not in_fence and line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.startswith("|") and index + 1 < len(lines) and lines[index + 1].startswith("|---"):
            rows = []
            end = index + 2
            while end < len(lines) and lines[end].startswith("|"):
                rows.append(cells(lines[end]))
                end += 1
            found.append(Table(heading, index + 1, cells(line), rows))
            index = end
            continue
        index += 1
    return found


def table(page: Path, first_column: str, under: str = "") -> Table:
    """The one table of `page` whose first column is `first_column` (under a heading that
    contains `under`)."""
    (found,) = [t for t in tables(page) if t.header[0] == first_column and under in t.heading]
    return found


def names(cell: str) -> list[str]:
    """The code spans of a cell: `a`, `b` -> [a, b]."""
    return CODE_SPAN.findall(cell)


def unlisted(found: set[Any], documented: set[Any], what: str, page: Path) -> list[str]:
    """Where the page's list and the code's differ: what it leaves out, then what it adds."""
    where = page.relative_to(REPO)
    missing, extra = sorted(found - documented, key=str), sorted(documented - found, key=str)
    said = [f"{where} does not list the {what} {missing}"] if missing else []
    return said + ([f"{where} lists {what} the code does not have: {extra}"] if extra else [])


# --- run options ------------------------------------------------------------------------------

RUN_OPTIONS = DOCS / "reference" / "run-options.md"


def test_the_run_options_table_is_the_options_object() -> None:
    """Every RunOptions field, in order, with its default and its command-line flags."""
    from flowrun.cli.run_options import DECLARED
    from flowrun.runtime.options import RunOptions

    rows = table(RUN_OPTIONS, "field", "RunOptions")
    documented = [names(cell)[0] for cell in rows.column("field")]
    fields = dataclasses.fields(RunOptions)
    assert documented == [f.name for f in fields], f"{RUN_OPTIONS.name}: the fields of RunOptions, in order"
    params = [param for _, command, _ in _hook().all_commands() for param in command.params]
    every_flag = {flag for param in params for flag in (*param.opts, *param.secondary_opts)}
    for field, row in zip(fields, rows.rows, strict=True):
        default = field.default_factory() if callable(field.default_factory) else field.default
        assert _same_default(row[2], default), f"{field.name}: the table says {row[2]}, the code {default!r}"
        flags = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", row[1]))
        assert flags <= every_flag, f"{field.name}: {sorted(flags - every_flag)} is no run option's flag"
        declared = DECLARED.get(field.name)
        if declared is not None:
            first = declared[0][0].split("/")[0]
            assert first in flags, f"{field.name}: its flag {first} is not in the table"


def _hook() -> Any:
    """docs/_hooks/reference.py, which walks every command of the CLI."""
    spec = importlib.util.spec_from_file_location("reference", DOCS / "_hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _same_default(cell: str, default: object) -> bool:
    text = cell.strip("`")
    if default is None or isinstance(default, bool | int):
        return text == repr(default)
    if isinstance(default, str):
        return text == default
    return yaml.safe_load(text.replace("()", "[]")) == (
        list(default) if isinstance(default, tuple) else default
    )


def test_the_run_json_example_records_every_option() -> None:
    from flowrun.runtime.options import RunOptions

    page = RUN_OPTIONS.read_text(encoding="utf-8")
    example = page[page.index("## run.json") :]
    block = re.search(r"```json\n(.*?)```", example, re.S)
    assert block is not None
    assert list(json.loads(block.group(1))["options"]) == list(RunOptions().to_dict())


def test_what_a_resume_may_change_is_the_code_s() -> None:
    """The sentence on `flowrun.resume` names every option: those a resume may change, then
    those fixed by the recording."""
    from flowrun.api import RECORDED_FOR_GOOD
    from flowrun.runtime.options import FIELDS

    text = " ".join(RUN_OPTIONS.read_text(encoding="utf-8").split())
    sentence = re.search(r"`flowrun\.resume\(run_dir, \*\*fields\)`(.*?)are fixed by the recording", text)
    assert sentence is not None
    may_change, _, fixed = sentence.group(1).partition("which are then recorded;")
    assert set(names(fixed)) == set(RECORDED_FOR_GOOD)
    assert set(names(may_change)) == set(FIELDS) - set(RECORDED_FOR_GOOD)


# --- exit codes -------------------------------------------------------------------------------

RUN_FOLDER = DOCS / "reference" / "run-folder.md"


def exit_codes() -> set[int]:
    """Every exit status the code gives: a run's (by its status), an error's, and every number
    (or named number) the command line exits with."""
    from flowrun.cli.exit import PIPE_CLOSED
    from flowrun.errors import FlowrunError
    from flowrun.states import EXIT_CODES

    found = {*EXIT_CODES.values(), PIPE_CLOSED}
    errors = [FlowrunError]
    while errors:
        error = errors.pop()
        found.add(error.exit_code)
        errors += error.__subclasses__()
    for path in sorted((ENGINE / "cli").rglob("*.py")):
        module = ".".join(path.relative_to(ENGINE.parent).with_suffix("").parts).removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called not in ("exit", "fail", "leave"):
                continue
            for part in ast.walk(node.args[-1] if called == "fail" else node.args[0]):
                if isinstance(part, ast.Constant) and type(part.value) is int:
                    found.add(part.value)
                elif isinstance(part, ast.Name) and part.id.isupper():
                    value = getattr(importlib.import_module(module), part.id, None)
                    if type(value) is int:
                        found.add(value)
    return found


def test_the_exit_codes_table_is_every_exit_code() -> None:
    codes = table(RUN_FOLDER, "code", "Exit codes")
    differences = unlisted(exit_codes(), {int(row[0]) for row in codes.rows}, "exit codes", RUN_FOLDER)
    assert not differences, differences


# --- event types ------------------------------------------------------------------------------


def test_the_event_table_is_every_event_type() -> None:
    from flowrun.events import EVENT_TYPES

    events = table(RUN_FOLDER, "type")
    documented = {name for cell in events.column("type") for name in names(cell)}
    differences = unlisted(set(EVENT_TYPES), documented, "event types", RUN_FOLDER)
    assert not differences, differences


# --- environment variables --------------------------------------------------------------------

ENVIRONMENT = DOCS / "reference" / "environment.md"
VARIABLE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
# a name bound to a variable's name: HTTP_ENV, key_env, ENDPOINT_VARIABLES, DEFAULT_MODEL_ENV
NAMES_A_VARIABLE = re.compile(r"(?i)(?:^|_)(?:env|variables?|vars?)$")


def _texts(node: ast.AST | None) -> list[str]:
    found = (n.value for n in ast.walk(node) if isinstance(n, ast.Constant)) if node else ()
    return [text for text in found if isinstance(text, str) and VARIABLE.match(text)]


def _is_environ(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ"
    )


def _environ_keys(tree: ast.AST) -> Iterator[ast.AST]:
    """What `os.environ.get(X)`, `environ[X]`, `X in environ` and `os.getenv(X)` read."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            if node.func.attr == "getenv" or (
                node.func.attr in ("get", "pop") and _is_environ(node.func.value)
            ):
                yield node.args[0]
        elif isinstance(node, ast.Subscript) and _is_environ(node.value) and isinstance(node.ctx, ast.Load):
            yield node.slice
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            yield node.left


def _bindings(tree: ast.AST) -> dict[str, list[ast.AST]]:
    """Every name (or attribute, or keyword) with the values bound to it in a module."""
    bound: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in (n for t in targets for n in ast.walk(t)):
                name = getattr(target, "id", None) or getattr(target, "attr", None)
                if name and node.value is not None:
                    bound.setdefault(name, []).append(node.value)
        elif isinstance(node, ast.For | ast.comprehension):
            for target in ast.walk(node.target):
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(node.iter)
        elif isinstance(node, ast.keyword) and node.arg:
            bound.setdefault(node.arg, []).append(node.value)
    return bound


@functools.cache
def variables_read() -> frozenset[str]:
    """The environment variables flowrun reads: the names its code looks up in the environment
    (directly, through a name bound to them, or held by a name such as `HTTP_ENV`), and the
    presets' key variables; not those it only sets for the processes it starts."""
    from flowrun.providers.presets import PRESETS
    from flowrun.tools.process import BASE_ENV

    found: set[str] = set()
    for path in sorted(ENGINE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound = _bindings(tree)
        for key in _environ_keys(tree):
            found.update(_texts(key))
            if isinstance(key, ast.Name):
                found.update(text for value in bound.get(key.id, []) for text in _texts(value))
        for name, values in bound.items():
            if NAMES_A_VARIABLE.search(name):
                found.update(text for value in values for text in _texts(value))
    for preset in PRESETS.values():
        found.update(v for v in (preset.api_key_env, preset.key_alias) if v)
    return frozenset(found - set(BASE_ENV))


def test_the_environment_table_is_every_variable_flowrun_reads() -> None:
    variables = table(ENVIRONMENT, "variable")
    documented: set[str] = set()
    by_sdk: set[str] = set()  # read by an SDK, not by flowrun's own code
    for cell, reader, _ in variables.rows:
        # (a name without an underscore, HOME, is not looked for; npm_config_cache is NPM_CONFIG_CACHE)
        documented.update(name.upper() for name in names(cell) if VARIABLE.match(name.upper()))
        if "SDK" in reader:
            by_sdk.update(names(cell))
    differences = unlisted(variables_read() | by_sdk, documented, "environment variables", ENVIRONMENT)
    assert not differences, differences


def test_the_sandbox_environment_is_the_code_s() -> None:
    """The security model's row on a sandboxed process's environment names what tool_env passes."""
    from flowrun.tools.sandbox import ENV_ALLOWED, ENV_ALLOWED_PREFIXES

    page = DOCS / "explanation" / "security.md"
    (row,) = [row for row in table(page, "what").rows if row[0] == "the environment"]
    said = set(names(row[1].partition("the names the policy")[0]))
    passed = {*ENV_ALLOWED, *(prefix + "*" for prefix in ENV_ALLOWED_PREFIXES), "HOME", "TMPDIR=/tmp"}
    differences = unlisted(passed, said, "variables of a sandboxed process", page)
    assert not differences, differences


def test_the_scan_finds_variables_however_they_are_read() -> None:
    """The scan above sees each way the code reads a variable (so a new one cannot hide)."""
    found = variables_read()
    assert {"FLOWRUN_LOG", "FLOWRUN_HTTP", "RAY_ADDRESS"} <= found  # read directly, or by a constant
    assert {
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "ANTHROPIC_AUTH_TOKEN",
        "OPENAI_MODEL",
    } <= found  # a loop, a class, a map
    assert {"GLM_API_KEY", "DEEPSEEK_API_KEY"} <= found  # the presets
    assert "DEBIAN_FRONTEND" not in found  # set for the tools' processes, not read


# --- manifest keys and the limits' defaults ---------------------------------------------------

MANIFESTS = DOCS / "reference" / "manifests.md"
# (the heading a table is under, its position there) -> the kind and the key path it lists
KEY_TABLES = {
    ("`kind: workflow`", 0): ("workflow", ""),
    ("`kind: workflow`", 1): ("workflow", "limits"),
    ("`kind: agent`", 0): ("agent", ""),
    ("`kind: tool`", 0): ("tool", ""),
}


class Schema:
    def __init__(self, kind: str) -> None:
        import flowrun.runtime.kinds  # noqa: F401  (registers the kinds whose specs the schema holds)
        from flowrun.manifest.schema.export import kind_schema

        self.root = kind_schema(kind)

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            resolved: dict[str, Any] = self.root["$defs"][ref.rsplit("/", 1)[-1]]
            return resolved
        return schema

    def at(self, path: str) -> dict[str, Any]:
        """The object schema at a dotted key path ("" is the manifest)."""
        schema = self.root
        for key in filter(None, path.split(".")):
            schema = self.resolve(schema["properties"][key])
        return schema


def key_tables() -> Iterator[tuple[Table, str, str]]:
    positions: dict[str, int] = {}
    for found in tables(MANIFESTS):
        if found.header[0] != "key":
            continue
        position = positions[found.heading] = positions.get(found.heading, -1) + 1
        if (found.heading, position) in KEY_TABLES:
            yield found, *KEY_TABLES[found.heading, position]


def test_the_manifest_key_tables_list_every_key_with_its_default() -> None:
    seen = set()
    for found, kind, path in key_tables():
        seen.add((kind, path))
        section = Schema(kind).at(path)
        properties, required = section["properties"], set(section.get("required", []))
        documented = set()
        for row in found.rows:
            keys, default = names(row[0]), row[found.header.index("default")]
            for key in keys:
                first, _, rest = key.partition(".")
                assert first in properties, f"{MANIFESTS.name}:{found.line}: {kind} has no key {key}"
                documented.add(first)
                prop = Schema(kind).at(f"{path}.{first}".strip(".")) if rest else properties[first]
                if rest:
                    assert rest in prop["properties"], f"{MANIFESTS.name}:{found.line}: no key {key}"
                    continue
                assert _says_the_default(default, prop, key in required), (
                    f"{MANIFESTS.name}:{found.line}: {kind} {path}.{key}: the table says {default!r}, "
                    f"the schema {prop.get('default', '(no default)')!r}"
                )
        differences = unlisted(set(properties), documented, f"keys of {kind} {path}".strip(), MANIFESTS)
        assert not differences, differences
    assert seen == set(KEY_TABLES.values()), "a table of manifests.md moved: update KEY_TABLES"


def _says_the_default(cell: str, prop: dict[str, Any], required: bool) -> bool:
    """Whether a default cell agrees with the key's schema, where it states a plain value
    (`required`, `none`, a number, `true`/`false`, one code span); prose is not read."""
    if cell == "required":
        return required
    default = prop.get("default")
    if cell == "none":
        return default is None
    if re.fullmatch(r"-?\d+(\.\d+)?|true|false|`[^`\s]+`", cell):
        return yaml.safe_load(cell.strip("`")) == default
    return True


# --- the layers ---------------------------------------------------------------------------------


@pytest.mark.parametrize("page", ["CONTRIBUTING.md", "docs/reference/layout.md"])
def test_the_layer_rule_names_the_modules_of_each_layer(page: str) -> None:
    """The base and api layers, as the page names them, hold what tests/test_import_graph.py
    puts in them (private modules aside)."""
    from test_import_graph import LAYERS

    page_text = " ".join((REPO / page).read_text(encoding="utf-8").split())
    text = page_text[page_text.index("**base** (") : page_text.index("**cli**")]
    for layer, modules in LAYERS:
        said = re.search(rf"\*\*{layer}\*\* \(([^)]*)\)", text)
        if said is None or not names(said.group(1)):  # (a layer the page names no modules of)
            continue
        named = {name.removesuffix(".py").removesuffix("/") for name in names(said.group(1))}
        assert named == {m for m in modules if not m.startswith("_")}, f"{page}: the {layer} layer"
    assert "**api** (" in text


# --- files the docs and comments name ---------------------------------------------------------

# a path under one of these folders of the repository, with a file extension or a trailing slash
NAMED_PATH = re.compile(r"(?<![\w./-])((?:engine|tests|bench|docs|\.ci)/[\w./-]*[\w/])(?![\w/-])")


def _comments_and_docstrings(source: str) -> Iterator[tuple[int, str]]:
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body[0] if node.body else None
            if isinstance(body, ast.Expr) and isinstance(body.value, ast.Constant):
                if isinstance(body.value.value, str):
                    yield body.lineno, body.value.value


def _prose() -> Iterator[tuple[str, int, str]]:
    """(file, line, text) of every page and every comment and docstring of the code."""
    listed_files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True)
    for name in listed_files.stdout.split():
        path = REPO / name
        if name.endswith(".md") and not name.startswith("examples/"):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                yield name, number, line
        elif name.endswith(".py") and name.startswith(("engine/", "tests/", "bench/", "docs/")):
            source = path.read_text(encoding="utf-8")
            if NAMED_PATH.search(source):  # (most files name none: parsed only when one may)
                for number, text in _comments_and_docstrings(source):
                    yield name, number, text


def test_named_source_files_exist() -> None:
    """A page, comment or docstring that names a file of the repository (engine/..., tests/...)
    names one that exists (NAME and other capitals stand for any name; `*.flowrun.yaml` and
    `tests/cassettes/` are a project's own tests, as `flowrun test` lays them out)."""
    gone = [
        f"{name}:{line}: {path}"
        for name, line, text in _prose()
        for path in NAMED_PATH.findall(text)
        if not re.search(r"[A-Z]{3,}|\.flowrun\.yaml$|^tests/cassettes/", path) and not (REPO / path).exists()
    ]
    assert not gone, "these name files that do not exist:\n" + "\n".join(gone)
