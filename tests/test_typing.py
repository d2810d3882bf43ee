"""The typing budget of issue 20: `Any` in the engine's annotations stays under 300 (counted by
bench/count_any.py with `ast`), and the counter counts what it says it counts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from support.paths import REPO

LIMIT = 300


def _counter() -> ModuleType:
    spec = importlib.util.spec_from_file_location("count_any", REPO / "bench" / "count_any.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["count_any"] = module
    spec.loader.exec_module(module)
    return module


def test_any_in_annotations_stays_under_the_budget() -> None:
    count = _counter().count_file
    per_file = {p: count(p) for p in (REPO / "engine" / "flowrun").rglob("*.py")}
    total = sum(per_file.values())
    worst = sorted(per_file.items(), key=lambda item: -item[1])[:5]
    assert total < LIMIT, (
        f"{total} Any in annotations (the budget is under {LIMIT}); the most: "
        + ", ".join(f"{p.name} {n}" for p, n in worst)
        + ". Give them precise types: see CONTRIBUTING.md, Style"
    )


def test_the_counter_counts_annotations_only(tmp_path: Path) -> None:
    source = tmp_path / "sample.py"
    source.write_text(
        "from typing import Any, TypeAlias, cast\n"
        "Alias: TypeAlias = dict[str, Any]\n"  # 1
        "Plain = list[Any]\n"  # 1
        "def f(a: Any, *args: Any, b: 'dict[str, Any]' = {}, **kw: Any) -> Any:\n"  # 5
        "    x: list[Any] = []\n"  # 1
        "    y = cast(Any, a)\n"  # not an annotation
        "    return 'Any'\n"  # a string that is not a type
        "class C:\n"
        "    field: Any = None\n",  # 1
        encoding="utf-8",
    )
    assert _counter().count_file(source) == 9
