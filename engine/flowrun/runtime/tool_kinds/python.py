"""Python tools: `implementation: {python: "module:function"}`, an async function
`(ctx, **arguments) -> ToolResult`. Project modules are imported relative to the workflow's
folder (the path is added only while importing)."""

from __future__ import annotations

import importlib
import inspect
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from flowrun.errors import ManifestError
from flowrun.manifest.checks.python_tools import check_python_tools
from flowrun.manifest.checks.tools import config_problems, entry_key_problems, schema_problems
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.ecosystem.skill_refs import check_skill_entry
from flowrun.manifest.kinds import EntryRef, SandboxQuery
from flowrun.manifest.project import Loaded, Project
from flowrun.manifest.sandboxing import entry_policy
from flowrun.manifest.specs import ENTRY_KEYS, ImplementationSpec, ToolManifest
from flowrun.manifest.yaml_source import Source
from flowrun.runtime.loop.contracts import BindRequest, BoundTool, Invocation, ToolKind
from flowrun.runtime.tool_kinds.manifest_tool import declare, limits_of, merged_config
from flowrun.tools.base import ToolFunction, tool_properties
from flowrun.tools.sandbox import SandboxPolicy
from flowrun.types import ToolResult, ToolSpec


class PythonImplementation(ImplementationSpec):
    kind: ClassVar[str] = "python"
    python: str = Field(
        pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$",
        description="`package.module:function`, an async function (ctx, **arguments) -> ToolResult.",
    )


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


class PythonKind(ToolKind):
    name = "python"
    implementation = PythonImplementation

    def check_tools(self, tools: list[Loaded[ToolManifest]], project: Project) -> list[Diagnostic]:
        """Import each folder's Python tools (in a child process) and compare their signatures
        with the manifests; a tool whose schemas are already broken is left out."""
        by_root: dict[Path, list[tuple[str, ToolManifest, Source]]] = {}
        for tool in tools:
            if not schema_problems(tool):
                by_root.setdefault(tool.root, []).append((_target(tool.spec), tool.spec, tool.source))
        out: list[Diagnostic] = []
        for root, found in by_root.items():
            out += check_python_tools(found, root)
        return out

    def check_entry(self, entry: EntryRef) -> list[Diagnostic]:
        tool = entry.project.tools[entry.name]
        found = config_problems(entry, tool.spec.config)
        out = entry_key_problems(entry) + found
        if not found:  # a skill tool's entry names skills that must exist
            own = {k: v for k, v in entry.config.items() if k not in ENTRY_KEYS}
            out += check_skill_entry(
                entry.src, entry.index, entry.name, own, entry.project, _target(tool.spec)
            )
        return out

    def process_policy(
        self, name: str, config: Mapping[str, object], where: SandboxQuery
    ) -> SandboxPolicy | None:
        # a python tool runs in flowrun's process; one that starts processes says so
        return entry_policy(name, config, where) if where.project.tools[name].spec.processes else None

    def imports(self, tool: Loaded[ToolManifest]) -> list[str]:
        return [_target(tool.spec).partition(":")[0]]

    def bind(self, request: BindRequest) -> list[BoundTool]:
        loaded = request.project.tools[request.name]
        manifest = loaded.spec
        config = merged_config(manifest, request)
        func = import_function(_target(manifest), request.project.roots[0])
        own = tool_properties(func)  # what @tool declared on the function
        parameters = manifest.parameters
        if own.parameters is not None:  # e.g. use_skill lists the skills it can load
            parameters = own.parameters(request.project.roots, config) or parameters
        spec = ToolSpec(manifest.name, manifest.description.strip(), parameters)
        bound = BoundTool(manifest.name, spec, self, config, limits_of(manifest), target=func)
        bound.takes_undeclared = takes_any_keyword(func)
        # the manifest's keys win, then the function's (write_file: idempotent but in append
        # mode); else a python tool is taken to be safe to repeat, unless it starts processes
        # (`processes: true`: a skill's script, a command may do anything)
        return [declare(bound, manifest, own, idempotent=not manifest.processes)]

    async def invoke(self, bound: BoundTool, call: Invocation) -> ToolResult:
        func: ToolFunction = bound.target
        return await func(call.ctx, **call.arguments)


def takes_any_keyword(func: ToolFunction) -> bool:
    """Whether the function takes keyword arguments it does not name (`**kwargs`)."""
    try:
        parameters = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _target(manifest: ToolManifest) -> str:
    """`module:function` of a manifest this kind claimed."""
    impl = manifest.implementation
    assert isinstance(impl, PythonImplementation)  # claimed by its `python:` key
    return impl.python


KIND = PythonKind()
