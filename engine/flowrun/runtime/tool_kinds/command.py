"""Declarative command tools: `implementation: {command: [...], cwd, env}`, run without a shell
(see tools/command.py)."""

from __future__ import annotations

from flowrun.manifest.project import Project
from flowrun.manifest.specs import CommandImplementation
from flowrun.runtime.loop.contracts import BindRequest, BoundTool, Invocation
from flowrun.runtime.tool_kinds.manifest_tool import declare, limits_of, merged_config
from flowrun.tools.base import ToolProperties
from flowrun.tools.command import run_command
from flowrun.types import ToolResult, ToolSpec


class CommandKind:
    name = "command"

    def claims(self, name: str, project: Project) -> bool:
        tool = project.tools.get(name)
        return tool is not None and isinstance(tool.spec.implementation, CommandImplementation)

    def bind(self, request: BindRequest) -> list[BoundTool]:
        manifest = request.project.tools[request.name].spec
        config = merged_config(manifest, request)
        spec = ToolSpec(manifest.name, manifest.description.strip(), manifest.parameters)
        impl = manifest.implementation
        bound = BoundTool(manifest.name, spec, self, config, limits_of(manifest), target=impl)
        # everything from the manifest; a command may do anything: not idempotent unless declared
        return [declare(bound, manifest, ToolProperties(), idempotent=False)]

    async def invoke(self, bound: BoundTool, call: Invocation) -> ToolResult:
        impl: CommandImplementation = bound.target
        return await run_command(
            call.ctx, argv=impl.command, arguments=call.arguments, cwd=impl.cwd, env=dict(impl.env)
        )


KIND = CommandKind()
