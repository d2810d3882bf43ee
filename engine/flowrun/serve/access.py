"""Who may reach a server of flowrun's (`serve mcp --http`, `serve http`): its listening socket,
whether an address is loopback, the Host names it answers (DNS-rebinding protection) and the
bearer token every request must carry when it has one (required off loopback: the agents behind
a served workflow may have a shell)."""

from __future__ import annotations

import hmac
import ipaddress
import socket
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING
from urllib.parse import parse_qs

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
MIN_TOKEN_CHARS = 16
MAKE_TOKEN = "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`"
NO_TOKEN = b"a valid token is required: send Authorization: Bearer TOKEN"


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: a free one; `getsockname()` tells which)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(256)
    return sock


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def accepted_hosts(host: str, extra: Iterable[str] = ()) -> list[str]:
    """The Host header values the server answers: loopback names, the address it listens on
    (for 0.0.0.0 or ::, this machine's name and addresses) and `extra`; each also with `:*`
    (any port)."""
    names = ["127.0.0.1", "localhost", "[::1]"]
    if host in ("0.0.0.0", "::", ""):
        machine = socket.gethostname()
        names += [machine, socket.getfqdn()]
        try:
            names += [str(info[4][0]) for info in socket.getaddrinfo(machine, None)]
        except OSError:
            pass
    else:
        names.append(host)
    names += list(extra)
    shown = [f"[{n}]" if ":" in n and not n.startswith("[") else n for n in names]
    return list(dict.fromkeys(v for n in shown for v in (n, f"{n}:*")))


def host_allowed(given: str, accepted: Iterable[str]) -> bool:
    """Whether a Host header (or an Origin's host) is one of `accepted` (`NAME:*`: any port)."""
    given = given.lower()
    name = given.rsplit(":", 1)[0] if given.count(":") == 1 or given.startswith("[") else given
    if given.startswith("[") and "]" in given:
        name = given[: given.index("]") + 1]
    for value in accepted:
        value = value.lower()
        if value == given or (value.endswith(":*") and value[:-2] == name):
            return True
    return False


async def _refuse(send: Send, status: int, body: bytes, bearer: bool = False) -> None:
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    if bearer:
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class BearerToken:
    """ASGI: every HTTP request must carry `Authorization: Bearer TOKEN` (401 otherwise);
    `query_token`: a GET may give it as `?token=` instead (a browser's EventSource and the
    first load of a page cannot send the header)."""

    def __init__(
        self, app: ASGIApp, token: str, query_token: bool = False, public: Callable[[str], bool] | None = None
    ) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()
        self.token = token.encode()
        self.query_token = query_token
        self.public = public  # paths served without the token (pages that hold no run data)

    def allowed(self, scope: Scope) -> bool:
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        if hmac.compare_digest(given, self.expected):
            return True
        if self.query_token and scope.get("method") == "GET":
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            for value in query.get("token", []):
                if hmac.compare_digest(value.encode("latin-1", "replace"), self.token):
                    return True
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        public = self.public is not None and self.public(str(scope.get("path", "")))
        if scope["type"] == "http" and not public and not self.allowed(scope):
            await _refuse(send, 401, NO_TOKEN, bearer=True)
            return
        if public:  # a public route may say whether the token sent is right (the web UI's session)
            scope.setdefault("state", {})["token_ok"] = self.allowed(scope)
        await self.app(scope, receive, send)


class NoFraming:
    """ASGI: no answer may be shown inside another site's page (a click there on a faded
    Allow would approve a call): `X-Frame-Options: DENY` and a Content-Security-Policy with
    `frame-ancestors 'none'` (added to the one an answer has, if any)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def framed(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = _unframeable(list(message.get("headers") or []))
            await send(message)

        await self.app(scope, receive, framed)


def _unframeable(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    out = [(k, v) for k, v in headers if k.lower() not in (b"x-frame-options", b"content-security-policy")]
    policy = next((v for k, v in headers if k.lower() == b"content-security-policy"), b"")
    if b"frame-ancestors" not in policy:
        policy = policy.rstrip(b"; ") + (b"; " if policy else b"") + b"frame-ancestors 'none'"
    return [*out, (b"x-frame-options", b"DENY"), (b"content-security-policy", policy)]


class HostCheck:
    """ASGI: a request whose Host is not one the server answers is 421, one sent by a page of
    another site (its Origin) is 403: a web page the user visits cannot reach a server on
    loopback, by a rebound DNS name or a cross-site request."""

    def __init__(self, app: ASGIApp, accepted: list[str]) -> None:
        self.app = app
        self.accepted = accepted

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            host = headers.get(b"host", b"").decode("latin-1")
            if not host_allowed(host, self.accepted):
                await _refuse(send, 421, f"this server does not answer to Host {host!r}".encode())
                return
            origin = headers.get(b"origin", b"").decode("latin-1")
            if origin and origin != "null" and not host_allowed(origin.split("://", 1)[-1], self.accepted):
                await _refuse(send, 403, f"requests from pages of {origin} are refused".encode())
                return
        await self.app(scope, receive, send)
