"""Function tools: `implementation: {function: "module:function", path: FOLDER}`, a plain Python
function (sync or async, no `ctx`) called with the tool's arguments as keywords, as other
frameworks' tools are written (an ADK tool function, a function a CrewAI crew names). What it
returns is the result: text as it is, anything else as JSON. A sync function runs in a thread,
so it does not hold up the other calls of the step; an exception is an error result.

It runs in flowrun's process, like a python tool (not in the sandbox). Its module is imported
from `path` (relative to the project folder; default the project folder), and `validate` imports
it in a child process to compare its signature with the manifest's `parameters`."""

from __future__ import annotations

import asyncio
import inspect
import json
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from flowrun.manifest.checks.python_tools import Report, import_problems, probe
from flowrun.manifest.checks.tools import config_problems, entry_key_problems, schema_problems
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.kinds import EntryRef
from flowrun.manifest.project import Loaded, Project
from flowrun.manifest.specs import ImplementationSpec, ToolManifest
from flowrun.runtime.loop.contracts import BindRequest, BoundTool, Invocation, ToolKind
from flowrun.runtime.tool_kinds.manifest_tool import declare, limits_of, merged_config
from flowrun.runtime.tool_kinds.python import import_function, takes_any_keyword
from flowrun.tools.base import ToolProperties
from flowrun.types import ToolResult, ToolSpec

WHERE = ("implementation", "function")


class FunctionImplementation(ImplementationSpec):
    kind: ClassVar[str] = "function"
    function: str = Field(
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$",
        description="`package.module:function`: a plain function (sync or async, no ctx) called with "
        "the arguments as keywords; it returns the result (text, or anything JSON can hold).",
    )
    path: str | None = Field(
        default=None,
        description="The folder its module is imported from, relative to the project folder "
        "(default: the project folder).",
    )


def import_folder(tool: Loaded[ToolManifest]) -> Path:
    impl = _implementation(tool.spec)
    return (tool.root / impl.path).resolve() if impl.path else tool.root


def _implementation(manifest: ToolManifest) -> FunctionImplementation:
    impl = manifest.implementation
    assert isinstance(impl, FunctionImplementation)  # claimed by its `function:` key
    return impl


class FunctionKind(ToolKind):
    name = "function"
    implementation = FunctionImplementation

    def check_tools(self, tools: list[Loaded[ToolManifest]], project: Project) -> list[Diagnostic]:
        """Import each folder's functions (in a child process) and compare their signatures with
        the manifests; a tool whose schemas are already broken is left out."""
        by_folder: dict[Path, list[Loaded[ToolManifest]]] = {}
        for tool in tools:
            if not schema_problems(tool):
                by_folder.setdefault(import_folder(tool), []).append(tool)
        out: list[Diagnostic] = []
        for folder, found in by_folder.items():
            if not folder.is_dir():
                for tool in found:
                    message = (
                        f"the folder {_implementation(tool.spec).path} of '{tool.spec.name}' does not exist"
                    )
                    out.append(
                        tool.source.diag((*WHERE[:1], "path"), message, "check `path`", "missing-module")
                    )
                continue
            reports, problem = probe(folder, sorted({_implementation(t.spec).function for t in found}))
            for tool in found:
                target = _implementation(tool.spec).function
                if problem is not None:
                    out.append(tool.source.diag(WHERE, problem, "", "import-failed"))
                else:
                    out += _check_one(tool, target, reports.get(target, {}))
        return out

    def check_entry(self, entry: EntryRef) -> list[Diagnostic]:
        return entry_key_problems(entry) + config_problems(entry, entry.project.tools[entry.name].spec.config)

    def imports(self, tool: Loaded[ToolManifest]) -> list[str]:
        return [_implementation(tool.spec).function.partition(":")[0]]

    def bind(self, request: BindRequest) -> list[BoundTool]:
        loaded = request.project.tools[request.name]
        manifest = loaded.spec
        func = import_function(_implementation(manifest).function, import_folder(loaded))
        spec = ToolSpec(manifest.name, manifest.description.strip(), manifest.parameters)
        config = merged_config(manifest, request)
        bound = BoundTool(manifest.name, spec, self, config, limits_of(manifest), target=func)
        bound.takes_undeclared = takes_any_keyword(func)
        # someone else's function: it may change things, so a resume does not call it again blindly
        return [declare(bound, manifest, ToolProperties(), idempotent=False)]

    async def invoke(self, bound: BoundTool, call: Invocation) -> ToolResult:
        func = bound.target
        try:
            if inspect.iscoroutinefunction(func):
                value = await func(**call.arguments)
            else:
                value = await asyncio.to_thread(func, **call.arguments)
        except Exception as e:  # the function's failure is the model's to see, not the run's
            return ToolResult.fail("TOOL_ERROR", f"{bound.name} raised {type(e).__name__}: {e}")
        return result_of(value)


def result_of(value: object) -> ToolResult:
    """A function's return value as a tool result: text as it is, anything else as JSON."""
    if isinstance(value, str):
        return ToolResult.ok(value)
    plain: object = json.loads(json.dumps(value, default=str, ensure_ascii=False))
    return ToolResult.ok(json.dumps(plain, ensure_ascii=False), result=plain)


def _check_one(tool: Loaded[ToolManifest], target: str, report: Report) -> list[Diagnostic]:
    hint = "check the dotted path and `path` (the folder the module is imported from)"
    found = import_problems(target, report, tool.source, WHERE, (hint, ""))
    if found is not None:
        return found
    from flowrun.manifest.checks.python_tools import argument_problems

    return argument_problems(tool.spec, target, report.get("params") or [], tool.source)


KIND = FunctionKind()
