"""OAuth for HTTP MCP servers, as the MCP specification describes it, through the `mcp` SDK's
`OAuthClientProvider` (an httpx auth flow: discovery of the protected resource's and the
authorization server's metadata, dynamic or pre-registered clients, PKCE, refresh).

Two grants: `authorization_code` (a person signs in once: flowrun prints the authorization URL
and opens a browser, and a loopback listener at http://127.0.0.1:PORT/callback takes the
redirect) and `client_credentials` (a machine client, no person: id and secret, or id and a
private key signing a JWT assertion, `private_key_jwt`). The tokens and
the registered client are kept per server URL in a file of their own outside every run folder
(`token_dir()`, mode 0600), so that a run reuses them and refreshes them; they never reach an
event, a log or a result."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import parse_qs, urlsplit

if TYPE_CHECKING:
    import httpx2
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken

TOKEN_DIR_ENV = "FLOWRUN_OAUTH_DIR"
CALLBACK_PATH = "/callback"
SIGNED_IN = (
    b"<!doctype html><title>flowrun</title><p>Signed in: you can close this page and go back to flowrun."
)


@dataclass(frozen=True, slots=True)
class OAuthSettings:
    """An `auth: {type: oauth, ...}` declaration, its `${VAR}`s expanded."""

    grant: Literal["authorization_code", "client_credentials"] = "authorization_code"
    client_id: str | None = None  # none: the client registers itself (dynamic registration)
    client_secret: str | None = None
    scope: str | None = None
    issuer: str | None = None  # the authorization server the client's credentials belong to
    token_auth: Literal["client_secret_basic", "client_secret_post", "private_key_jwt"] = (
        "client_secret_basic"
    )
    redirect_port: int = 0  # 0: a free port (dynamic registration); a pre-registered client's
    client_name: str = "flowrun"
    private_key: str | None = None  # private_key_jwt: the PEM signing the client's assertions
    signing_algorithm: str = "RS256"


def token_dir() -> Path:
    """Where tokens are kept: $FLOWRUN_OAUTH_DIR, else $XDG_CONFIG_HOME/flowrun/mcp-oauth (by
    default ~/.config/flowrun/mcp-oauth)."""
    given = os.environ.get(TOKEN_DIR_ENV)
    if given:
        return Path(given).expanduser()
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "flowrun" / "mcp-oauth"


def token_file(url: str) -> Path:
    """The file of one server's tokens: named by its URL (its host for a person reading the
    folder, a hash for uniqueness)."""
    host = (urlsplit(url).hostname or "server").replace(":", "_")
    return token_dir() / f"{host}-{hashlib.sha256(url.encode()).hexdigest()[:16]}.json"


class FileTokenStorage:
    """The SDK's TokenStorage in one JSON file per server, written 0600 in a 0700 folder."""

    def __init__(self, url: str, fixed_client: OAuthClientInformationFull | None = None) -> None:
        self.url = url
        self.path = token_file(url)
        self.fixed_client = fixed_client  # a pre-registered client wins over a stored one

    def _read(self) -> dict[str, object]:
        try:
            found = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return {}
        return found if isinstance(found, dict) and found.get("url") == self.url else {}

    def _write(self, key: str, value: object) -> None:
        data = self._read() | {"url": self.url, key: value}
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = self.path.with_suffix(".partial")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.chmod(partial, 0o600)
        os.replace(partial, self.path)

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        found = self._read().get("tokens")
        return OAuthToken.model_validate(found) if isinstance(found, dict) else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._write("tokens", tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        if self.fixed_client is not None:
            return self.fixed_client
        found = self._read().get("client")
        return OAuthClientInformationFull.model_validate(found) if isinstance(found, dict) else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self.fixed_client is None:
            self._write("client", client_info.model_dump(mode="json", exclude_none=True))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LoopbackCallback:
    """The redirect of the authorization code grant: the URL is shown on stderr and opened in
    the user's browser ($BROWSER is honoured), the code comes back to a listener on loopback."""

    def __init__(self, server: str, port: int) -> None:
        self.server = server
        self.port = port or free_port()
        self.redirect_uri = f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"
        self._result: asyncio.Future[dict[str, list[str]]] | None = None
        self._listener: asyncio.Server | None = None

    async def redirect(self, url: str) -> None:
        self._result = asyncio.get_running_loop().create_future()
        self._listener = await asyncio.start_server(self._answer, "127.0.0.1", self.port)
        print(f"MCP server '{self.server}' wants you to sign in: open {url}", file=sys.stderr, flush=True)
        import webbrowser

        await asyncio.to_thread(webbrowser.open, url)

    async def callback(self) -> AuthorizationCodeResult:
        from mcp.client.auth import OAuthFlowError
        from mcp.shared.auth import AuthorizationCodeResult

        assert self._result is not None
        try:
            query = await self._result
        finally:
            if self._listener is not None:
                self._listener.close()
        if "error" in query:
            why = query.get("error_description", query["error"])[0]
            raise OAuthFlowError(f"the authorization server refused: {why}")
        if "code" not in query:
            raise OAuthFlowError("the redirect carried no authorization code")
        return AuthorizationCodeResult(
            code=query["code"][0], state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]
        )

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = (await reader.readline()).decode("latin-1").split()
            while (await reader.readline()).strip():  # the headers
                pass
            target = urlsplit(request[1]) if len(request) > 1 else urlsplit("/")
            found = target.path == CALLBACK_PATH
            status = b"200 OK" if found else b"404 Not Found"
            body = SIGNED_IN if found else b"not found"
            writer.write(
                b"HTTP/1.1 " + status + b"\r\ncontent-type: text/html; charset=utf-8\r\n"
                b"content-length: " + str(len(body)).encode() + b"\r\nconnection: close\r\n\r\n" + body
            )
            await writer.drain()
            if found and self._result is not None and not self._result.done():
                self._result.set_result(parse_qs(target.query))
        finally:
            writer.close()


def oauth_auth(server: str, url: str, settings: OAuthSettings) -> httpx2.Auth:
    """The httpx auth flow that gets, stores and refreshes the server's tokens."""
    if settings.grant == "client_credentials":
        return _client_credentials(url, settings)
    return _authorization_code(server, url, settings)


def _client_credentials(url: str, settings: OAuthSettings) -> httpx2.Auth:
    """A machine's own tokens: a client secret, or a JWT signed with its private key."""
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )
    from mcp.shared.exceptions import MCPDeprecationWarning

    with warnings.catch_warnings():  # without `issuer`, the SDK takes what discovery finds
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        if settings.token_auth == "private_key_jwt":
            client = settings.client_id or ""
            signed = SignedJWTParameters(
                issuer=client,
                subject=client,
                signing_key=settings.private_key or "",
                signing_algorithm=settings.signing_algorithm,
            )
            return PrivateKeyJWTOAuthProvider(
                server_url=url,
                storage=FileTokenStorage(url),
                client_id=client,
                assertion_provider=signed.create_assertion_provider(),
                scope=settings.scope,
                issuer=settings.issuer,
            )
        return ClientCredentialsOAuthProvider(
            server_url=url,
            storage=FileTokenStorage(url),
            client_id=settings.client_id or "",
            client_secret=settings.client_secret or "",
            token_endpoint_auth_method="client_secret_post"
            if settings.token_auth == "client_secret_post"
            else "client_secret_basic",
            scope=settings.scope,
            issuer=settings.issuer,
        )


def _authorization_code(server: str, url: str, settings: OAuthSettings) -> httpx2.Auth:
    """A person's tokens: the browser signs in and the server redirects to a loopback port."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata

    loopback = LoopbackCallback(server, settings.redirect_port)
    method = settings.token_auth if settings.client_secret else "none"
    metadata = OAuthClientMetadata.model_validate(
        {
            "client_name": settings.client_name,
            "redirect_uris": [loopback.redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "scope": settings.scope,
        }
    )
    fixed = None
    if settings.client_id:
        fixed = OAuthClientInformationFull.model_validate(
            metadata.model_dump(mode="json", exclude_none=True)
            | {"client_id": settings.client_id, "client_secret": settings.client_secret}
        )
    return OAuthClientProvider(
        server_url=url,
        client_metadata=metadata,
        storage=FileTokenStorage(url, fixed),
        redirect_handler=loopback.redirect,
        callback_handler=loopback.callback,
    )
