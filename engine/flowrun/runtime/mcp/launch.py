"""How an MCP server is started: the expanded declaration, and for a stdio server its command
as the sandbox runs it. The server sees the run folder (read-write, the engine's files
read-only), the folder of the file that declares it (read-only, so relative paths in
`.mcp.json` work), the project's skills, what its `sandbox:` binds, and the install folders
of its program (programs.py: its venv and base Python, its pyenv version, its node install,
npm's cache for npx); its environment is the sandbox's allowlist plus the declaration's own
`env` (its configuration, secrets included). A program the sandbox cannot show is refused
with the `sandbox:` line that shows it."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from flowrun.manifest.ecosystem.mcp_config import expand, server_policy
from flowrun.manifest.project import Loaded
from flowrun.manifest.specs import McpOAuthSpec, McpServerSpec, WorkflowManifest, sandbox_spec
from flowrun.runtime.durable.run_folder import PROTECTED
from flowrun.runtime.mcp.programs import Needs, ProgramNotShown, Where, node_package, program_needs
from flowrun.tools import sandbox
from flowrun.tools.remote.mcp_client import McpServerDown, ServerLaunch
from flowrun.tools.remote.mcp_oauth import OAuthSettings
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
                oauth=_oauth(spec.oauth),
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
    launch = ServerLaunch(
        server, "stdio", cwd=cwd, timeout_s=spec.timeout_s, startup_timeout_s=spec.startup_timeout_s
    )
    launch.argv, launch.env, launch.hint = _confined(argv, env, cwd, base, policy, place, loaded)
    return launch


def _oauth(auth: McpOAuthSpec | None) -> OAuthSettings | None:
    if auth is None:
        return None
    return OAuthSettings(
        grant=auth.grant,
        client_id=expand(auth.client_id) if auth.client_id else None,
        client_secret=expand(auth.client_secret) if auth.client_secret else None,
        scope=expand(auth.scope) if auth.scope else None,
        issuer=auth.issuer,
        token_auth=auth.token_auth,
        redirect_port=auth.redirect_port,
        private_key=expand(auth.private_key) if auth.private_key else None,
        signing_algorithm=auth.signing_algorithm,
    )


def _confined(
    argv: list[str],
    env: dict[str, str],
    cwd: Path,
    base: Path,
    policy: SandboxPolicy,
    place: Placement,
    loaded: Loaded[McpServerSpec],
) -> tuple[list[str], dict[str, str], str]:
    """(the command as the sandbox runs it, its environment, what to try when it does not
    start). The declared env passes (it is the server's own configuration, secrets included);
    nothing else secret does."""
    if policy.mode == "off":
        return argv, sandbox.tool_env(policy, home=None, confined=False) | env, ""
    found = sandbox.probe()
    if not found.ok:
        if policy.mode == "required":
            raise McpServerDown(f"the sandbox cannot start: {found.reason}; {sandbox.WAY_OUT}")
        return argv, sandbox.tool_env(policy, home=None, confined=False) | env, ""
    assert found.binary is not None
    binary = found.binary
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

    def shown(path: Path) -> bool:
        return sandbox.system_path(path) or sandbox.visible(path, policy, layout)

    where = Where(
        cwd,
        full_env.get("PATH", sandbox.DEFAULT_PATH),
        shown,
        policy.network == "allow",
        {**os.environ, **env},
        lambda: sandbox.overlay_supported(binary),
    )
    try:
        needs = program_needs(argv, where)
    except ProgramNotShown as e:
        raise McpServerDown(e.message + _add_line(e.add, loaded)) from None
    policy = replace(policy, ro_binds=tuple(dict.fromkeys((*policy.ro_binds, *needs.ro_binds))))
    layout.overlays = tuple(Path(p) for p in needs.overlays)
    full_env = sandbox.tool_env(policy, home=str(home)) | needs.env | env
    hint = needs.hint or _unseen_arguments(needs, where, loaded)
    return sandbox.bwrap_argv(binary, needs.argv, policy, layout, full_env), {}, hint


def _unseen_arguments(needs: Needs, where: Where, loaded: Loaded[McpServerSpec]) -> str:
    """Absolute paths among the arguments that the sandbox does not show, and the node package
    of a script it runs when the sandbox does not show it whole (node then misses the package's
    dependencies): the usual reasons a server that starts unconfined does not start in it."""
    folders: dict[Path, None] = {}
    packages: dict[Path, Path] = {}  # package folder -> the script in it
    for i, arg in enumerate(needs.argv):
        path = Path(os.path.expanduser(arg))
        if not path.is_absolute() or not path.exists():
            continue
        package = node_package(path, where.home) if path.is_file() else None
        if package is not None:
            if not _shown(package, where, needs):
                packages.setdefault(package, path)
        elif i > 0 and not _shown(path, where, needs):
            folders[path if path.is_dir() else path.parent] = None
    said = [f"its arguments name {', '.join(str(f) for f in folders)}"] if folders else []
    said += [f"{script} is part of the node package {package}" for package, script in packages.items()]
    if not said:
        return ""
    why = " whole (node finds a package's dependencies in it)" if packages else ""
    binds = [str(f) for f in [*folders, *packages]]
    return f"{'; '.join(said)}, which the sandbox does not show{why}" + _add_line({"ro_binds": binds}, loaded)


def _shown(path: Path, where: Where, needs: Needs) -> bool:
    return where.shown(path) or any(path.is_relative_to(b) for b in needs.ro_binds)


def _add_line(add: dict[str, Any] | None, loaded: Loaded[McpServerSpec]) -> str:
    """`; add `sandbox: {ro_binds: [FOLDER]}` to the server's declaration (FILE) ...`: the
    server's `sandbox:` as it would be with `add` (binds added to the ones it has), in the
    declaring file's own syntax."""
    if not add:
        return ""
    current = sandbox_spec(loaded.spec.sandbox)
    setting: dict[str, Any] = current.model_dump(exclude_defaults=True) if current else {}
    for key, value in add.items():
        if isinstance(value, list):  # (a bind inside a folder added is dropped: the folder shows it)
            kept = [v for v in setting.get(key, []) if not any(_inside(v, new) for new in value)]
            value = [*kept, *value]
        setting[key] = value
    if loaded.source.path.suffix == ".json":
        line, off = '"sandbox": ' + json.dumps(setting), '"sandbox": "off"'
    else:
        line, off = "sandbox: " + _flow(setting), "sandbox: off"
    return f"; add `{line}` to its declaration, or `{off}` to run it unconfined"


def _inside(path: str, folder: str) -> bool:
    return Path(folder).is_absolute() and Path(path).is_relative_to(folder)


def _flow(value: object) -> str:
    """A value in YAML's flow style, as short as it can be written."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    text = str(value)
    plain = text and not any(c in text for c in ":#,[]{}&*!|>'\"%@`") and text.strip() == text
    return text if plain else json.dumps(text)
