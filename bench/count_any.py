"""Count `Any` in the engine's type annotations, so the figure of issue 20 is reproducible.

What counts: every `Any` (or `typing.Any`) inside a parameter's or a return annotation, a
variable's or a field's annotation, a string annotation, and the right-hand side of a type
alias (`X: TypeAlias = ...` or a module- or class-level `X = <type expression>`
that mentions `Any`). Imports, `cast(Any, ...)` and other run-time uses are not annotations.

    .venv/bin/python bench/count_any.py            # the total
    .venv/bin/python bench/count_any.py --files    # per file, most first
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "engine" / "flowrun"


def _any_in(node: ast.AST | None) -> int:
    """How many `Any` a type expression holds, string annotations parsed too."""
    if node is None:
        return 0
    found = 0
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id == "Any":
            found += 1
        elif isinstance(sub, ast.Attribute) and sub.attr == "Any":
            found += 1
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            try:
                found += _any_in(ast.parse(sub.value, mode="eval"))
            except SyntaxError:
                pass  # a plain string (a docstring or a Literal value), not an annotation
    return found


def _is_alias(node: ast.Assign) -> bool:
    """A module- or class-level `X = dict[str, Any]`: a subscripted type on the right."""
    return isinstance(node.value, ast.Subscript | ast.BinOp) and all(
        isinstance(t, ast.Name) for t in node.targets
    )


def count_file(path: Path) -> int:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    total = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
            every += [a for a in (args.vararg, args.kwarg) if a is not None]
            total += sum(_any_in(a.annotation) for a in every)
            total += _any_in(node.returns)
        elif isinstance(node, ast.AnnAssign):
            total += _any_in(node.annotation)
            if "TypeAlias" in ast.unparse(node.annotation):
                total += _any_in(node.value)
    for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef))]:
        for stmt in scope.body:
            if isinstance(stmt, ast.Assign) and _is_alias(stmt):
                total += _any_in(stmt.value)
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", action="store_true", help="print the count of each file")
    parser.add_argument("root", nargs="?", type=Path, default=ROOT)
    options = parser.parse_args(argv)
    counts = Counter({p: count_file(p) for p in sorted(options.root.rglob("*.py"))})
    if options.files:
        for path, n in counts.most_common():
            if n:
                print(f"{n:5d}  {path.relative_to(options.root)}")
    print(f"Any in annotations: {sum(counts.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
