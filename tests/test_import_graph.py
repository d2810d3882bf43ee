"""The package's shape, read from its source with `ast`: layers only point down, and no two
modules import each other, directly or around a cycle (imports inside functions and under
`if TYPE_CHECKING:` count: a circle closed only by type hints is still a circle). Every folder
says what it holds in a one-line docstring and keeps at most 25 modules."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

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
    "plain_schema",
)
# lowest first; a module may import its own layer and the ones before it
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", BASE),
    ("providers", ("providers",)),
    ("tools", ("tools",)),
    ("manifest", ("manifest",)),
    ("runtime", ("runtime",)),
    ("api", ("api", "__init__", "batch", "serve", "testing", "evals")),
    ("cli", ("cli", "__main__")),
]
# providers and tools are one layer in the design: neither may import the other
SIBLINGS = {("providers", "tools"), ("tools", "providers")}


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
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > 25:
            problems.append(f"{rel}: {len(modules)} modules (at most 25: split it into rooms)")
    assert problems == [], "\n".join(problems)
