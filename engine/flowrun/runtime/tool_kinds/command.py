"""Declarative command tools: `implementation: {command: [...], cwd, env}`, run without a shell
(see tools/command.py). Each argv item is a Jinja2 template over the call's arguments; the
processes run in the sandbox."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from pydantic import Field

from flowrun.manifest.checks.tools import config_problems, entry_key_problems
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.kinds import EntryRef, SandboxQuery
from flowrun.manifest.project import Loaded, Project
from flowrun.manifest.sandboxing import entry_policy
from flowrun.manifest.schema.check import did_you_mean
from flowrun.manifest.specs import ImplementationSpec, ToolManifest
from flowrun.manifest.templates import analyse
from flowrun.runtime.loop.contracts import BindRequest, BoundTool, Invocation, ToolKind
from flowrun.runtime.tool_kinds.manifest_tool import declare, limits_of, merged_config
from flowrun.tools.base import ToolProperties
from flowrun.tools.command import run_command
from flowrun.tools.sandbox import SandboxPolicy
from flowrun.types import ToolResult, ToolSpec


class CommandImplementation(ImplementationSpec):
    kind: ClassVar[str] = "command"
    command: list[str] = Field(
        min_length=1,
        description="argv list run without a shell; each item a Jinja2 template over the arguments.",
    )
    cwd: str | None = Field(
        default=None, description="Working folder, relative to the workspace (default: the agent's)."
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Extra environment variables (not secrets)."
    )


# the per-agent config of a command tool whose manifest declares none
CONFIG_SCHEMA: dict[str, object] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "allow": {"type": "array", "items": {"type": "string"}, "description": "Command patterns allowed."},
        "deny": {"type": "array", "items": {"type": "string"}, "description": "Command patterns refused."},
        "timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "Seconds before the call is killed.",
        },
        "max_output_bytes": {"type": "integer", "minimum": 256},
        "env": {"type": "object", "additionalProperties": {"type": "string"}},
        "base_dir": {"type": "string", "description": "Folder under the workspace the tool is confined to."},
    },
}


class CommandKind(ToolKind):
    name = "command"
    implementation = CommandImplementation

    def check_tools(self, tools: list[Loaded[ToolManifest]], project: Project) -> list[Diagnostic]:
        """Each argv item is a template that uses only declared parameters."""
        out: list[Diagnostic] = []
        for tool in tools:
            spec, src = tool.spec, tool.source
            props = spec.parameters.get("properties")  # not a mapping: reported as a bad schema
            params = set(props) if isinstance(props, dict) else set()
            for i, item in enumerate(_impl(spec).command):
                where = ("implementation", "command", i)
                info = analyse(item)
                if info.error:
                    out.append(src.diag(where, f"Jinja2 syntax error: {info.error}", "", "template-syntax"))
                for var in info.variables:
                    if var not in params:
                        hint = did_you_mean(var, params) or f"declare '{var}' under parameters.properties"
                        message = f"command uses '{var}', not a parameter"
                        out.append(src.diag(where, message, hint, "undefined-variable"))
        return out

    def check_entry(self, entry: EntryRef) -> list[Diagnostic]:
        declared = entry.project.tools[entry.name].spec.config
        return entry_key_problems(entry) + config_problems(
            entry, CONFIG_SCHEMA if declared is None else declared
        )

    def process_policy(
        self, name: str, config: Mapping[str, object], where: SandboxQuery
    ) -> SandboxPolicy | None:
        return entry_policy(name, config, where)  # a command always starts a process

    def bind(self, request: BindRequest) -> list[BoundTool]:
        manifest = request.project.tools[request.name].spec
        config = merged_config(manifest, request)
        spec = ToolSpec(manifest.name, manifest.description.strip(), manifest.parameters)
        bound = BoundTool(manifest.name, spec, self, config, limits_of(manifest), target=_impl(manifest))
        # everything from the manifest; a command may do anything: not idempotent unless declared
        return [declare(bound, manifest, ToolProperties(), idempotent=False)]

    async def invoke(self, bound: BoundTool, call: Invocation) -> ToolResult:
        impl: CommandImplementation = bound.target
        return await run_command(
            call.ctx, argv=impl.command, arguments=call.arguments, cwd=impl.cwd, env=dict(impl.env)
        )


def _impl(manifest: ToolManifest) -> CommandImplementation:
    impl = manifest.implementation
    assert isinstance(impl, CommandImplementation)  # claimed by its `command:` key
    return impl


KIND = CommandKind()
