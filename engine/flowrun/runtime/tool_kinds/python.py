"""Python tools: `implementation: {python: "module:function"}`, an async function
`(ctx, **arguments) -> ToolResult`. Project modules are imported relative to the workflow's
folder (the path is added only while importing)."""

from __future__ import annotations

import importlib
import sys
import threading
from pathlib import Path

from flowrun.errors import ManifestError
from flowrun.manifest.project import Project
from flowrun.manifest.specs import PythonImplementation
from flowrun.runtime.loop.contracts import BindRequest, BoundTool, Invocation
from flowrun.runtime.tool_kinds.manifest_tool import declare, limits_of, merged_config
from flowrun.tools.base import ToolFunction, tool_properties
from flowrun.types import ToolResult, ToolSpec

_import_lock = threading.Lock()


def import_function(dotted: str, root: Path) -> ToolFunction:
    """The tool's function; a module that does not import or lacks the function is the
    manifest's problem (ManifestError, as `flowrun validate` reports it), not a flowrun bug."""
    module_name, _, func_name = dotted.partition(":")
    with _import_lock:
        added = str(root) not in sys.path
        if added:
            sys.path.insert(0, str(root))
        try:
            module = importlib.import_module(module_name)
        except Exception as e:
            raise ManifestError(
                f"python tool '{dotted}': the module fails to import ({type(e).__name__}: {e})",
                "run `flowrun validate` on the workflow's folder",
            ) from e
        finally:
            if added:
                sys.path.remove(str(root))
    func = getattr(module, func_name, None)
    if not callable(func):
        raise ManifestError(
            f"python tool '{dotted}': module '{module_name}' has no function '{func_name}'",
            "run `flowrun validate` on the workflow's folder",
        )
    return func  # type: ignore[no-any-return]


class PythonKind:
    name = "python"

    def claims(self, name: str, project: Project) -> bool:
        tool = project.tools.get(name)
        return tool is not None and isinstance(tool.spec.implementation, PythonImplementation)

    def bind(self, request: BindRequest) -> list[BoundTool]:
        loaded = request.project.tools[request.name]
        manifest = loaded.spec
        assert isinstance(manifest.implementation, PythonImplementation)
        config = merged_config(manifest, request)
        func = import_function(manifest.implementation.python, request.project.roots[0])
        own = tool_properties(func)  # what @tool declared on the function
        parameters = manifest.parameters
        if own.parameters is not None:  # e.g. use_skill lists the skills it can load
            parameters = own.parameters(request.project.roots, config) or parameters
        spec = ToolSpec(manifest.name, manifest.description.strip(), parameters)
        bound = BoundTool(manifest.name, spec, self, config, limits_of(manifest), target=func)
        # the manifest's keys win, then the function's (write_file: idempotent but in append
        # mode); else a python tool is taken to be safe to repeat, unless it starts processes
        # (`processes: true`: a skill's script, a command may do anything)
        return [declare(bound, manifest, own, idempotent=not manifest.processes)]

    async def invoke(self, bound: BoundTool, call: Invocation) -> ToolResult:
        func: ToolFunction = bound.target
        return await func(call.ctx, **call.arguments)


KIND = PythonKind()
