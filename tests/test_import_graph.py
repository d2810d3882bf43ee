"""The package's shape, read from its source with `ast`: layers only point down, and no two
modules import each other, directly or around a cycle (imports inside functions and under
`if TYPE_CHECKING:` count: a circle closed only by type hints is still a circle). Every folder
says what it holds in a one-line docstring and keeps at most 25 modules (its `__init__.py`
included); no function is over 60 lines but the few listed, and `Run` stays under 200."""

from __future__ import annotations

import ast
from pathlib import Path

from support.paths import REPO

PACKAGE = REPO / "engine" / "flowrun"

BASE = (
    "_version",
    "types",
    "records",
    "events",
    "errors",
    "paths",
    "redaction",
    "yaml_limits",
    "yaml_scan",
    "collector",
    "settle",
    "pinned",
    "atomic_files",
    "open_files",
    "environ",
    "surrogates",
    "regexes",
    "states",
    "foreign_text",
    "plain_schema",
)
# lowest first; a module may import its own layer and the ones before it
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", BASE),
    ("providers", ("providers",)),
    ("tools", ("tools",)),
    ("manifest", ("manifest",)),
    ("runtime", ("runtime",)),
    ("api", ("api", "__init__", "batch", "serve", "testing", "evals", "queue")),
    ("cli", ("cli", "__main__")),
]
# providers and tools are one layer in the design: neither may import the other
SIBLINGS = {("providers", "tools"), ("tools", "providers")}
MAX_MODULES = 25  # in one folder, its __init__.py included
MAX_FUNCTION_LINES = 60  # from `def` to the function's last line
# the functions allowed over MAX_FUNCTION_LINES (at most 3), by file and qualified name, each with
# why it is one function; one that shrinks below it leaves the list
LONG_FUNCTIONS: set[tuple[str, str]] = set()
MAX_RUN_LINES = 200  # the class Run (runtime/run.py): a kind keeps its own state, not a method here


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def layer_of(module: str) -> int:
    head = module.split(".")[1] if "." in module else "__init__"
    for index, (_, heads) in enumerate(LAYERS):
        if head in heads:
            return index
    raise AssertionError(f"{module} is in no layer: add it to LAYERS in {Path(__file__).name}")


def imports_of(path: Path, module: str) -> set[str]:
    """flowrun modules `path` imports, at any depth (`if TYPE_CHECKING:` blocks included)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("flowrun"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], base]
                ).strip(".")
            if base.startswith("flowrun"):
                for alias in node.names:
                    candidate = f"{base}.{alias.name}"
                    found.add(candidate if candidate in MODULES else base)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in found if m in MODULES and m != module}


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}
GRAPH = {name: imports_of(path, name) for name, path in MODULES.items()}


def test_every_module_is_in_a_layer() -> None:
    layers = {module: layer_of(module) for module in MODULES}  # layer_of names a module in none
    assert len(layers) == len(MODULES) and all(0 <= index < len(LAYERS) for index in layers.values())


def test_imports_point_down_the_layers() -> None:
    upward = []
    for module, imported in GRAPH.items():
        for target in imported:
            here, there = layer_of(module), layer_of(target)
            names = (LAYERS[here][0], LAYERS[there][0])
            if there > here or names in SIBLINGS:
                upward.append(f"{module} ({names[0]}) imports {target} ({names[1]})")
    assert upward == [], "\n".join(sorted(upward))


def test_no_import_cycles() -> None:
    state: dict[str, int] = {}
    cycles: list[str] = []

    def visit(module: str, stack: list[str]) -> None:
        state[module] = 1
        for target in sorted(GRAPH[module]):
            if state.get(target) == 1:
                cycles.append(" -> ".join([*stack[stack.index(target) :], target]))
            elif target not in state:
                visit(target, [*stack, target])
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])
    assert cycles == [], "\n".join(cycles)


def test_the_checker_sees_function_level_and_type_only_imports(tmp_path: Path) -> None:
    """A guard on the guard: an import inside a function is an edge, and so is one under
    TYPE_CHECKING."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from flowrun.api import Workflow\n"
        "def f():\n    from flowrun.cli import main\n"
    )
    assert imports_of(sample, "flowrun.types") == {"flowrun.cli", "flowrun.api"}


def test_every_folder_says_what_it_holds_and_stays_small() -> None:
    problems = []
    for folder in sorted(p for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__"):
        init = folder / "__init__.py"
        rel = folder.relative_to(PACKAGE.parent)
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) if init.exists() else None
        if not doc:
            problems.append(f"{rel}: no docstring in __init__.py saying what the folder holds")
        modules = list(folder.glob("*.py"))
        if len(modules) > MAX_MODULES:
            problems.append(f"{rel}: {len(modules)} modules (at most {MAX_MODULES}: split it into rooms)")
    assert problems == [], "\n".join(problems)


def long_functions(path: Path) -> dict[str, int]:
    """The functions (methods and nested ones too, by qualified name) of `path` over
    MAX_FUNCTION_LINES lines, with their length."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                length = (child.end_lineno or child.lineno) - child.lineno + 1
                if not isinstance(child, ast.ClassDef) and length > MAX_FUNCTION_LINES:
                    found[name] = length
                name += "."
            visit(child, name)

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return found


def test_no_function_is_over_60_lines_but_the_listed_ones() -> None:
    assert len(LONG_FUNCTIONS) <= 3, "at most 3 functions may be over the limit: shorten one instead"
    long = {
        (path.relative_to(PACKAGE).as_posix(), name): length
        for path in PACKAGE.rglob("*.py")
        for name, length in long_functions(path).items()
    }
    unlisted = [
        f"{file} {name}: {n} lines"
        for (file, name), n in sorted(long.items())
        if (file, name) not in LONG_FUNCTIONS
    ]
    assert unlisted == [], f"over {MAX_FUNCTION_LINES} lines (split them by what they do):\n" + "\n".join(
        unlisted
    )
    shrunk = sorted(LONG_FUNCTIONS - set(long))
    assert shrunk == [], f"no longer over {MAX_FUNCTION_LINES} lines: take them off LONG_FUNCTIONS: {shrunk}"


def test_run_stays_under_200_lines() -> None:
    tree = ast.parse((PACKAGE / "runtime" / "run.py").read_text(encoding="utf-8"))
    run = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "Run")
    lines = (run.end_lineno or run.lineno) - run.lineno + 1
    assert lines <= MAX_RUN_LINES, (
        f"class Run is {lines} lines (at most {MAX_RUN_LINES}): what a kind records or does lives in the "
        "kind's module (run.recorded(...) reaches its resume state), a part of the run in a module of its own"
    )


def test_the_length_checks_measure_from_def_to_the_last_line(tmp_path: Path) -> None:
    """A guard on the guard: a method and a nested function over the limit are found by their
    qualified names, a function of exactly 60 lines is not."""
    body = "".join(f"    x{i} = {i}\n" for i in range(59))
    sample = tmp_path / "sample.py"
    sample.write_text(
        f"def fits():\n{body}"
        f"class C:\n    def long(self):\n{body.replace('    ', '        ')}        y = 0\n"
        f"def outer():\n    def inner():\n{body.replace('    ', '        ')}        y = 0\n    return inner\n"
    )
    assert long_functions(sample) == {"C.long": 61, "outer": 63, "outer.inner": 61}
