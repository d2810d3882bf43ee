"""How an MCP server is started: the expanded declaration, and for a stdio server its command
as the sandbox runs it. The server sees the run folder (read-write, the engine's files
read-only), the folder of the file that declares it (read-only, so relative paths in
`.mcp.json` work), the project's skills, and what its `sandbox:` binds; its environment is the
sandbox's allowlist plus the declaration's own `env` (its configuration, secrets included)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from flowrun.manifest.ecosystem.mcp_config import expand, server_policy
from flowrun.manifest.project import Loaded
from flowrun.manifest.specs import McpServerSpec, WorkflowManifest
from flowrun.runtime.durable.run_folder import PROTECTED
from flowrun.tools import sandbox
from flowrun.tools.mcp_client import McpServerDown, ServerLaunch
from flowrun.tools.sandbox import Layout, Mode, SandboxPolicy


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a server starts: the workflow (its `sandbox:`), `--sandbox`, the run folder, the
    project's search path."""

    workflow: WorkflowManifest | None
    override: Mode | None
    workspace: Path
    roots: list[Path]


def server_launch(server: str, loaded: Loaded[McpServerSpec], place: Placement) -> ServerLaunch:
    spec = loaded.spec
    try:
        if spec.transport != "stdio":
            url = expand(spec.url or "")
            headers = {k: expand(v) for k, v in spec.headers.items()}
            return ServerLaunch(
                server,
                spec.transport,
                url=url,
                headers=headers,
                timeout_s=spec.timeout_s,
                startup_timeout_s=spec.startup_timeout_s,
            )
        argv = [expand(spec.command or ""), *(expand(a) for a in spec.args)]
        env = {k: expand(v) for k, v in spec.env.items()}
    except KeyError as e:
        raise McpServerDown(f"${{{e.args[0]}}} is not set in the environment") from None
    base = loaded.source.path.parent.resolve()
    cwd = (base / spec.cwd).resolve() if spec.cwd else base
    policy = server_policy(place.workflow, spec, base, place.override)
    argv, full_env = _confined(argv, env, cwd, base, policy, place)
    return ServerLaunch(
        server,
        "stdio",
        argv=argv,
        env=full_env,
        cwd=cwd,
        timeout_s=spec.timeout_s,
        startup_timeout_s=spec.startup_timeout_s,
    )


def _confined(
    argv: list[str], env: dict[str, str], cwd: Path, base: Path, policy: SandboxPolicy, place: Placement
) -> tuple[list[str], dict[str, str]]:
    """The command as the sandbox runs it: the declared env passes (it is the server's own
    configuration, secrets included); nothing else secret does."""
    if policy.mode == "off":
        return argv, sandbox.tool_env(policy, home=None, confined=False) | env
    found = sandbox.probe()
    if not found.ok:
        if policy.mode == "required":
            raise McpServerDown(f"the sandbox cannot start: {found.reason}; {sandbox.WAY_OUT}")
        return argv, sandbox.tool_env(policy, home=None, confined=False) | env
    root = place.workspace.resolve()
    if not base.is_relative_to(root):  # bound before the run folder, so that stays writable
        policy = replace(policy, ro_binds=tuple(dict.fromkeys((str(base), *policy.ro_binds))))
    read_only = [
        folder
        for entry in place.roots
        if (folder := (entry / "skills").resolve()).is_dir() and not folder.is_relative_to(root)
    ]
    paths = (root / name.rstrip("/") for name in sorted(PROTECTED))
    protected = tuple(path for path in paths if path.exists() and not path.is_symlink())
    layout = Layout(root=root, cwd=cwd, protected=protected, read_only=tuple(dict.fromkeys(read_only)))
    if not sandbox.visible(cwd, policy, layout):
        raise McpServerDown(f"its working folder {cwd} is outside the sandbox")
    home = root / sandbox.HOME_DIR
    home.mkdir(exist_ok=True)
    full_env = sandbox.tool_env(policy, home=str(home)) | env
    assert found.binary is not None
    return sandbox.bwrap_argv(found.binary, argv, policy, layout, full_env), {}
