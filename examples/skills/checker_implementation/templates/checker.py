"""Score an implementation against JSON samples and write result.json.

    python3 checker.py --samples samples --target module:function --out result.json

Each sample: {"id", "rule", "input": {kwargs}, "expected" | "expected_error", "tolerance"?}.
Exit code 0 when the checker ran (whatever the score), 2 when it could not run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
from pathlib import Path
from typing import Any

DEFAULT_TOLERANCE = 1e-6


def compare(expected: Any, actual: Any, tolerance: float) -> str | None:
    """None when actual matches expected, else the reason it does not."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return None if expected is actual else f"expected {expected!r}, got {actual!r}"
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        if math.isclose(expected, actual, rel_tol=0.0, abs_tol=tolerance):
            return None
        return f"expected {expected!r}, got {actual!r} (tolerance {tolerance})"
    return None if expected == actual else f"expected {expected!r}, got {actual!r}"


def run_sample(func: Any, sample: dict[str, Any]) -> dict[str, Any]:
    outcome: dict[str, Any] = {
        "id": sample.get("id"),
        "rule": sample.get("rule"),
        "input": sample.get("input"),
        "expected": sample.get("expected", sample.get("expected_error")),
        "actual": None,
        "error": None,
        "reason": None,
    }
    try:
        actual = func(**(sample.get("input") or {}))
    except Exception as e:  # the implementation's errors are results, not checker crashes
        outcome["error"] = f"{type(e).__name__}: {e}"
        wanted = sample.get("expected_error")
        if wanted != type(e).__name__:
            outcome["reason"] = f"raised {type(e).__name__}: {e}" + (f", expected {wanted}" if wanted else "")
        return outcome
    outcome["actual"] = actual
    if "expected_error" in sample:
        outcome["reason"] = f"expected {sample['expected_error']}, got {actual!r}"
    else:
        tolerance = float(sample.get("tolerance", DEFAULT_TOLERANCE))
        outcome["reason"] = compare(sample.get("expected"), actual, tolerance)
    return outcome


def load_target(target: str) -> Any:
    module_name, _, func_name = target.partition(":")
    sys.path.insert(0, str(Path.cwd()))
    return getattr(importlib.import_module(module_name), func_name)


def score(outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    failures = [o for o in outcomes if o["reason"] is not None]
    by_rule: dict[str, dict[str, int]] = {}
    for o in outcomes:
        entry = by_rule.setdefault(str(o["rule"]), {"passed": 0, "total": 0})
        entry["total"] += 1
        entry["passed"] += o["reason"] is None
    total = len(outcomes)
    passed = total - len(failures)
    return {
        "total": total,
        "passed": passed,
        "failed": len(failures),
        "success_rate": round(passed / total, 4) if total else 0.0,
        "by_rule": by_rule,
        "failures": failures,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=Path, default=Path("samples"))
    parser.add_argument("--target", required=True, help="module:function")
    parser.add_argument("--out", type=Path, default=Path("result.json"))
    args = parser.parse_args()
    files = sorted(args.samples.glob("*.json")) if args.samples.is_dir() else []
    if not files:
        print(f"checker: no samples in {args.samples}/", file=sys.stderr)
        return 2
    try:
        func = load_target(args.target)
        samples = [json.loads(f.read_text(encoding="utf-8")) for f in files]
    except (ImportError, AttributeError, ValueError, SyntaxError) as e:
        print(f"checker: cannot start: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    result = score([run_sample(func, s) for s in samples])
    args.out.write_text(json.dumps(result, indent=2, default=repr) + "\n", encoding="utf-8")
    print(f"{result['passed']}/{result['total']} passed, success_rate {result['success_rate']}")
    for failure in result["failures"]:
        print(f"FAIL {failure['id']} ({failure['rule']}): {failure['reason']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
