"""An httpx transport whose TCP connections are opened only to addresses the address guard
allows (net_guard.NetPolicy.addresses), built on httpcore's public API. Imported only when a
page is fetched."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any

import httpcore
import httpx

# httpcore.AnyIOBackend itself: its package defines a stand-in when anyio is missing, which a
# type checker cannot tell from the real one
from httpcore._backends.anyio import AnyIOBackend

from flowrun.tools.net_guard import AddressRefused, NetPolicy


class GuardedBackend(httpcore.AsyncNetworkBackend):
    def __init__(self, policy: NetPolicy) -> None:
        self.policy = policy
        self.inner = AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's signature
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            addresses = await self.policy.addresses(host, port)
        except OSError as e:  # an unresolvable name: a connection error like any other
            raise httpcore.ConnectError(str(e)) from e
        error: Exception | None = None
        for address in addresses:  # every one of them was checked
            try:
                return await self.inner.connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as e:
                error = e
        raise error or httpcore.ConnectError(f"no address for {host}")

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 - httpcore's signature
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise AddressRefused("unix sockets are not fetched")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


def mapped(exc: Exception, request: httpx.Request) -> Exception:
    """httpcore's exception as the httpx exception of the same name."""
    kind = getattr(httpx, type(exc).__name__, None)
    if isinstance(kind, type) and issubclass(kind, httpx.TransportError):
        return kind(str(exc), request=request)
    return httpx.TransportError(str(exc), request=request)


TRANSPORT_ERRORS = (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError)


class Body(httpx.AsyncByteStream):
    def __init__(self, stream: Any, request: httpx.Request) -> None:
        self.stream, self.request = stream, request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for part in self.stream:
                yield part
        except TRANSPORT_ERRORS as e:
            raise mapped(e, self.request) from e

    async def aclose(self) -> None:
        await self.stream.aclose()


class GuardedTransport(httpx.AsyncBaseTransport):
    def __init__(self, policy: NetPolicy) -> None:
        self.pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(), network_backend=GuardedBackend(policy)
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        try:
            response = await self.pool.handle_async_request(core)
        except TRANSPORT_ERRORS as e:
            raise mapped(e, request) from e
        except httpcore.UnsupportedProtocol as e:
            raise httpx.UnsupportedProtocol(str(e), request=request) from e
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=Body(response.stream, request),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.pool.aclose()
