"""A throw-away tool kind: `implementation: {echo: {prefix: ...}}` answers a call with the
prefix and the call's arguments. Everything the kind is lives here: its `implementation:`
model, its manifest check, and how its tools are bound and run."""

from __future__ import annotations

import json
from typing import ClassVar

from pydantic import Field

from flowrun.manifest.checks.tools import config_problems, entry_key_problems
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.kinds import EntryRef
from flowrun.manifest.project import Loaded, Project
from flowrun.manifest.specs import ImplementationSpec, ToolManifest
from flowrun.runtime.loop.contracts import BindRequest, BoundTool, Invocation, ToolKind
from flowrun.types import ToolResult, ToolSpec


class EchoImplementation(ImplementationSpec):
    kind: ClassVar[str] = "echo"
    echo: str = Field(description="The prefix of every answer.")


class EchoKind(ToolKind):
    name = "echo"
    implementation = EchoImplementation

    def check_tools(self, tools: list[Loaded[ToolManifest]], project: Project) -> list[Diagnostic]:
        out = []
        for tool in tools:
            impl = tool.spec.implementation
            assert isinstance(impl, EchoImplementation)
            if not impl.echo.strip():
                hint = "give it some text, e.g. `echo: '>> '`"
                out.append(
                    tool.source.diag(("implementation", "echo"), "an empty echo prefix", hint, "empty-echo")
                )
        return out

    def check_entry(self, entry: EntryRef) -> list[Diagnostic]:
        return entry_key_problems(entry) + config_problems(entry, entry.project.tools[entry.name].spec.config)

    def bind(self, request: BindRequest) -> list[BoundTool]:
        manifest = request.project.tools[request.name].spec
        impl = manifest.implementation
        assert isinstance(impl, EchoImplementation)
        spec = ToolSpec(manifest.name, manifest.description.strip(), manifest.parameters)
        return [BoundTool(manifest.name, spec, self, target=impl.echo)]

    async def invoke(self, bound: BoundTool, call: Invocation) -> ToolResult:
        return ToolResult.ok(bound.target + json.dumps(call.arguments, sort_keys=True))


KIND = EchoKind()
