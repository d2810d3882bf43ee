"""Checks of Python tools (`implementation: {python: "module:function"}`) for `validate`: the
module imports, the function exists and is async, and its signature accepts what the manifest's
`parameters` declare (and needs nothing the manifest leaves out).

The module is user code, so it is imported in a child Python process with a timeout: a module
that hangs, exits, prints or changes global state at import time cannot harm flowrun. One child
per project folder checks all of its Python tools at once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.schema.check import did_you_mean
from flowrun.manifest.specs import ToolManifest
from flowrun.manifest.yaml_source import PathKey, Source

IMPORT_TIMEOUT_S = 20.0

# runs in the child: {"root", "targets": ["module:function", ...]} on stdin, one report per target out
_PROBE = r"""
import contextlib, importlib, inspect, io, json, sys
request = json.load(sys.stdin)
sys.path.insert(0, request["root"])
out = {}
for target in request["targets"]:
    module_name, _, func_name = target.partition(":")
    report = {}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        report["error"] = "missing-module" if e.name and module_name.startswith(e.name) else "import-failed"
        report["detail"] = f"{type(e).__name__}: {e}"
    except BaseException as e:
        report["error"], report["detail"] = "import-failed", f"{type(e).__name__}: {e}"
    else:
        func = getattr(module, func_name, None)
        if func is None:
            report["error"] = "missing-function"
            report["names"] = [n for n, v in vars(module).items() if callable(v) and not n.startswith("_")]
        elif not callable(func):
            report["error"], report["detail"] = "not-callable", type(func).__name__
        else:
            report["is_async"] = inspect.iscoroutinefunction(func)
            try:
                params = list(inspect.signature(func).parameters.values())
            except (TypeError, ValueError):
                params = None
            if params is not None:
                report["params"] = [
                    {"name": p.name, "kind": p.kind.name, "default": p.default is not inspect.Parameter.empty}
                    for p in params
                ]
    out[target] = report
sys.stdout.write("\n" + json.dumps(out))
"""

# what the probe process printed about one target (JSON: each reader checks what it reads)
Report = dict[str, Any]


def check_python_tools(tools: list[tuple[str, ToolManifest, Source]], root: Path) -> list[Diagnostic]:
    """Diagnostics for the Python tools of one project folder; `tools` are (`module:function`,
    the manifest, its `Source` for file:line:column)."""
    targets = sorted({target for target, _, _ in tools})
    if not targets:
        return []
    reports, problem = _probe(root, targets)
    out: list[Diagnostic] = []
    for target, manifest, src in tools:
        if problem is not None:
            out.append(src.diag(("implementation", "python"), problem, "", "import-failed"))
            continue
        out += _check_one(manifest, target, reports.get(target, {}), src)
    return out


def probe(root: Path, targets: list[str]) -> tuple[Report, str | None]:
    """What importing each `module:function` from `root` finds, in a child process (a report
    per target: its error, or whether it is async and its parameters), or why none could be made."""
    return _probe(root, targets)


def _probe(root: Path, targets: list[str]) -> tuple[Report, str | None]:
    """(report per target, None) or ({}, why the child could not report)."""
    request = json.dumps({"root": str(root), "targets": targets})
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _PROBE],
            input=request,
            capture_output=True,
            text=True,
            timeout=IMPORT_TIMEOUT_S,
            cwd=root,
        )
    except subprocess.TimeoutExpired:
        return {}, f"importing {', '.join(targets)} took longer than {IMPORT_TIMEOUT_S:.0f} s"
    except OSError as e:
        return {}, f"cannot start Python to import the tool modules: {e}"
    last = proc.stdout.rstrip().rsplit("\n", 1)[-1] if proc.stdout.strip() else ""
    try:
        reports: dict[str, object] = json.loads(last)
    except json.JSONDecodeError:
        detail = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        return {}, f"importing the tool modules stopped Python: {detail[:300]}"
    return reports, None


def import_problems(
    target: str, report: Report, src: Source, where: PathKey, hints: tuple[str, str]
) -> list[Diagnostic] | None:
    """What the probe found wrong in importing `target` (module:function), at `where`; None when
    the function is there. `hints`: for a module not found, and for a name that is no function."""
    module, _, func = target.partition(":")
    error = report.get("error")
    if error == "missing-module":
        return [src.diag(where, f"python module '{module}' not found", hints[0], "missing-module")]
    if error == "import-failed":
        message = f"python module '{module}' fails to import: {str(report.get('detail', ''))[:300]}"
        return [src.diag(where, message, "fix the module (its import must not fail)", "import-failed")]
    if error == "missing-function":
        names = set(report.get("names") or [])
        hint = did_you_mean(func, names) or ("it defines: " + ", ".join(sorted(names)[:10]) or "")
        return [src.diag(where, f"module '{module}' has no function '{func}'", hint, "missing-function")]
    if error == "not-callable":
        message = f"'{target}' is a {report.get('detail')}, not a function"
        return [src.diag(where, message, hints[1], "missing-function")]
    return None


def _check_one(manifest: ToolManifest, target: str, report: Report, src: Source) -> list[Diagnostic]:
    where = ("implementation", "python")
    func = target.partition(":")[2]
    missing = "check the dotted path; project modules are found relative to the workflow folder"
    found = import_problems(target, report, src, where, (missing, "point at an async function"))
    if found is not None:
        return found
    out: list[Diagnostic] = []
    if report.get("is_async") is False:
        hint = "define it as `async def " + func + "(ctx, **arguments) -> ToolResult`"
        out.append(src.diag(where, f"'{target}' is not an async function", hint, "bad-signature"))
    if report.get("params") is not None:
        out += _signature_problems(manifest, target, report["params"], src)
    return out


def _signature_problems(
    manifest: ToolManifest, target: str, params: list[Report], src: Source
) -> list[Diagnostic]:
    """The function is called as `func(ctx, **arguments)` with the arguments the manifest's
    `parameters` allow: each declared property must be a keyword it accepts, and each argument
    it needs must be a required property."""
    where = ("implementation", "python")
    if not params or params[0]["kind"] in ("KEYWORD_ONLY", "VAR_KEYWORD"):
        message = f"'{target}' takes no `ctx` as its first argument"
        return [src.diag(where, message, "its signature must be (ctx, **arguments)", "bad-signature")]
    rest = params[1:] if params[0]["kind"] != "VAR_POSITIONAL" else params
    return argument_problems(manifest, target, rest, src)


def argument_problems(
    manifest: ToolManifest, target: str, params: list[Report], src: Source
) -> list[Diagnostic]:
    """The function is called with `**arguments` (after `ctx` for a python tool): each declared
    property must be a keyword it accepts, and each argument it needs a required property (or
    one with a default the runtime fills in). A `function` tool's check uses it too."""
    takes_any = any(p["kind"] == "VAR_KEYWORD" for p in params)
    by_name = {p["name"]: p for p in params if p["kind"] in ("POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY")}
    properties = manifest.parameters.get("properties") or {}
    required = manifest.parameters.get("required") or []
    if not isinstance(properties, dict) or not isinstance(required, list):
        return []  # not a JSON Schema of an object: reported as a bad schema
    required = set(required)
    out: list[Diagnostic] = []
    for name in properties:
        if name not in by_name and not takes_any:
            hint = did_you_mean(name, set(by_name)) or "it takes: " + (", ".join(by_name) or "nothing")
            message = f"parameter '{name}' is not an argument of {target}"
            out.append(src.diag(("parameters", "properties", name), message, hint, "bad-signature", key=True))
    for name, param in by_name.items():
        if param["default"]:
            continue
        if name not in properties:
            hint = did_you_mean(name, set(properties)) or f"declare '{name}' under parameters.properties"
            message = f"{target} needs the argument '{name}', which `parameters` does not declare"
            out.append(src.diag(("parameters",), message, hint, "bad-signature"))
        elif name not in required and not _has_default(properties[name]):
            hint = f"add '{name}' to parameters.required, or give it a default (function or manifest)"
            message = f"{target} needs '{name}', but the manifest lets the model leave it out"
            out.append(src.diag(("parameters", "properties", name), message, hint, "bad-signature", key=True))
    return out


def _has_default(schema: object) -> bool:
    """A property with a `default` in the manifest is always passed: the runtime fills it in."""
    return isinstance(schema, dict) and "default" in schema
