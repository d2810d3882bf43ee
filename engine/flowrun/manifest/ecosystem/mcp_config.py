"""MCP server declarations: a workflow's `mcp_servers:` and a `.mcp.json` next to it (Claude
Code's file, read as it is), the rules across their keys, `${VAR}` expansion, and the sandbox
a stdio server runs in. How agents name them is in mcp_refs.py."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.specs import McpConfigFile, McpServerSpec, WorkflowManifest, sandbox_spec
from flowrun.manifest.yaml_source import PathKey, Source, load_source
from flowrun.redaction import is_secret_name
from flowrun.tools.sandbox import Mode, SandboxPolicy

MCP_FILE = ".mcp.json"
VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def server_problems(src: Source, parts: PathKey, raw: object) -> list[Diagnostic]:
    """Rules across the keys of one declaration (checked before its schema passes)."""
    if not isinstance(raw, dict) or src.lost(parts, "command", "url", "type"):
        return []
    kind = raw.get("type")
    has_command, has_url = "command" in raw, "url" in raw
    if has_command == has_url:
        message = "an MCP server needs exactly one of `command` (stdio) or `url` (http, sse)"
        return [src.diag(parts, message, "e.g. command: npx, or url: https://host/mcp", "invalid")]
    if has_url and kind == "stdio":
        return [src.diag((*parts, "type"), "type stdio needs `command`, not `url`", "", "invalid")]
    if has_command and kind in ("http", "streamable-http", "sse"):
        return [src.diag((*parts, "type"), f"type {kind} needs `url`, not `command`", "", "invalid")]
    stdio_only = [k for k in ("args", "env", "cwd", "sandbox") if k in raw] if has_url else []
    http_only = [k for k in ("headers", "auth") if k in raw] if has_command else []
    return [
        src.diag(
            (*parts, key), f"`{key}` applies to {'stdio' if has_url else 'http'} servers only", "", "invalid"
        )
        for key in (*stdio_only, *http_only)
    ] + _oauth_problems(src, (*parts, "auth"), raw.get("auth"))


def _oauth_problems(src: Source, parts: PathKey, auth: object) -> list[Diagnostic]:
    """private_key_jwt signs a client_credentials assertion: it needs the client and its key."""
    if not isinstance(auth, dict):
        return []
    if auth.get("token_auth") == "private_key_jwt":
        missing = [k for k in ("client_id", "private_key") if not auth.get(k)]
        if auth.get("grant") != "client_credentials":
            message = "token_auth private_key_jwt is for grant: client_credentials"
            return [src.diag((*parts, "token_auth"), message, "add grant: client_credentials", "invalid")]
        if missing:
            message = f"token_auth private_key_jwt needs {' and '.join(missing)}"
            hint = "e.g. private_key: ${NOTES_CLIENT_KEY} (the PEM, from the environment)"
            return [src.diag((*parts, "token_auth"), message, hint, "invalid")]
    elif "private_key" in auth:
        message = "`private_key` is for token_auth: private_key_jwt"
        return [src.diag((*parts, "private_key"), message, "add token_auth: private_key_jwt", "invalid")]
    return []


def load_mcp_file(path: Path, display: str) -> tuple[dict[str, McpServerSpec], Source, list[Diagnostic]]:
    """The servers of a `.mcp.json` (JSON is read by the YAML reader, so every problem has its line)."""
    from flowrun.manifest.schema.typed import check_model

    src, diags = load_source(path, display)
    if src.data is None:
        return {}, src, diags
    if not isinstance(src.data, dict):
        return (
            {},
            src,
            [*diags, src.diag((), 'a .mcp.json holds an object {"mcpServers": {...}}', "", "schema")],
        )
    servers = src.data.get("mcpServers")
    rules: list[Diagnostic] = []
    if isinstance(servers, dict):
        for name, raw in servers.items():
            rules += server_problems(src, ("mcpServers", name), raw)
    spec, problems = check_model(src, McpConfigFile, src.data)
    diags += rules + problems
    if spec is None or rules:
        return {}, src, diags
    assert isinstance(spec, McpConfigFile)
    return dict(spec.mcp_servers), src, diags


def expand(text: str, environ: Mapping[str, str] | None = None) -> str:
    """`${VAR}` and `${VAR:-default}` from the environment; KeyError names an unset variable."""
    env = os.environ if environ is None else environ

    def value(found: re.Match[str]) -> str:
        name, default = found.group(1), found.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        raise KeyError(name)

    return VARIABLE.sub(value, text)


def variables(spec: McpServerSpec) -> list[str]:
    """Every variable a declaration reads."""
    texts = [spec.command or "", spec.url or "", *spec.args, *spec.env.values(), *spec.headers.values()]
    if (auth := spec.oauth) is not None:
        texts += [auth.client_id or "", auth.client_secret or "", auth.scope or "", auth.private_key or ""]
    return sorted({m.group(1) for text in texts for m in VARIABLE.finditer(text)})


def server_policy(
    workflow: WorkflowManifest | None, spec: McpServerSpec, base: Path, override: Mode | None = None
) -> SandboxPolicy:
    """A stdio server's sandbox: the workflow's `sandbox:` with the server's over it, key by key
    (binds and env add up); `--sandbox MODE` overrides the mode."""
    layers = [
        s for s in (sandbox_spec(workflow.sandbox if workflow else None), sandbox_spec(spec.sandbox)) if s
    ]
    policy = SandboxPolicy()
    mode, network = policy.mode, policy.network
    for layer in layers:
        mode = layer.mode if layer.mode is not None else mode
        network = layer.network if layer.network is not None else network

    def paths(key: str) -> tuple[str, ...]:
        found = (p for layer in layers for p in getattr(layer, key))
        return tuple(dict.fromkeys(str((base / Path(p).expanduser()).resolve()) for p in found))

    return SandboxPolicy(
        mode=override if override is not None else mode,
        network=network,
        ro_binds=paths("ro_binds"),
        rw_binds=paths("rw_binds"),
        env=tuple(dict.fromkeys(n for layer in layers for n in layer.env if not is_secret_name(n))),
    )
