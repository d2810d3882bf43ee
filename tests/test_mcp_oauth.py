"""OAuth for HTTP MCP servers: the `auth:` declaration as `validate` checks it, and the token
file (per server URL, outside the run folder, mode 0600). The sign-in flows themselves run
against the conformance suite's authorization servers (tests/test_mcp_conformance.py)."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest
from support.cli import flowrun_cmd
from support.env import clean_env
from support.project import write_files

from flowrun.tools.remote.mcp_oauth import FileTokenStorage, token_file

WORKFLOW = """version: 1
kind: workflow
name: flow
models: {{m: {{provider: test, model: t}}}}
default_model: m
entry: caller
task: Call it.
mcp_servers:
  notes: {server}
"""
CALLER = "version: 1\nkind: agent\nname: caller\nprompt: Call it.\ntools: [notes]\n"


def validate(tmp_path: Path, server: str) -> subprocess.CompletedProcess[str]:
    write_files(tmp_path, {"agents.d/caller.yaml": CALLER, "flow.yaml": WORKFLOW.format(server=server)})
    env = clean_env()
    return subprocess.run(
        [*flowrun_cmd(), "validate", "flow.yaml"], cwd=tmp_path, env=env, capture_output=True, text=True
    )


@pytest.mark.parametrize(
    "server",
    [
        '{url: "https://notes.example.com/mcp", auth: oauth}',
        '{url: "https://notes.example.com/mcp", auth: {type: oauth, grant: client_credentials, '
        'client_id: "${NOTES_ID}", client_secret: "${NOTES_SECRET}", scope: "read"}}',
        '{url: "https://notes.example.com/mcp", auth: {type: oauth, grant: client_credentials, '
        'client_id: "${NOTES_ID}", token_auth: private_key_jwt, private_key: "${NOTES_KEY}", '
        "signing_algorithm: ES256}}",
    ],
)
def test_an_http_server_may_sign_in_with_oauth(tmp_path: Path, server: str) -> None:
    done = validate(tmp_path, server)
    assert done.returncode == 0, done.stdout + done.stderr


def test_oauth_mistakes_are_one_line_each(tmp_path: Path) -> None:
    stdio = validate(tmp_path, "{command: python3, auth: oauth}")
    assert stdio.returncode != 0 and "flow.yaml:9:" in stdio.stdout + stdio.stderr
    assert "`auth` applies to http servers only" in stdio.stdout + stdio.stderr
    grant = validate(tmp_path, '{url: "https://x.example/mcp", auth: {type: oauth, grant: password}}')
    assert grant.returncode != 0 and "grant" in grant.stdout + grant.stderr
    assert "Traceback" not in grant.stdout + grant.stderr + stdio.stdout + stdio.stderr
    jwt = '{url: "https://x.example/mcp", auth: {type: oauth, grant: client_credentials, client_id: c, '
    keyless = validate(tmp_path, jwt + "token_auth: private_key_jwt}}")
    assert keyless.returncode != 0 and "flow.yaml:9:" in keyless.stdout
    assert "token_auth private_key_jwt needs private_key" in keyless.stdout
    stray = validate(tmp_path, jwt + 'client_secret: s, private_key: "${K}"}}')
    assert stray.returncode != 0 and "`private_key` is for token_auth: private_key_jwt" in stray.stdout


def test_tokens_are_kept_per_server_readable_by_their_owner_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcp.shared.auth import OAuthToken

    monkeypatch.setenv("FLOWRUN_OAUTH_DIR", str(tmp_path / "oauth"))
    notes, other = "https://notes.example.com/mcp", "https://other.example.com/mcp"

    async def main() -> tuple[OAuthToken | None, OAuthToken | None]:
        await FileTokenStorage(notes).set_tokens(OAuthToken(access_token="secret-access", refresh_token="r"))
        return await FileTokenStorage(notes).get_tokens(), await FileTokenStorage(other).get_tokens()

    mine, theirs = asyncio.run(main())
    assert mine is not None and mine.access_token == "secret-access" and theirs is None
    path = token_file(notes)
    assert path.parent == tmp_path / "oauth" and path.name.startswith("notes.example.com-")
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700
    assert token_file(other) != path
