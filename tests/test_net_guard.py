"""The address guard of visit_url and web_search against real loopback servers: loopback,
private, metadata and mapped addresses are refused before any request is sent, also when a
name resolves to them and when a redirect leads to them; the config loosens it."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from flowrun.tools.base import ToolContext
from flowrun.tools.net_guard import AddressRefused, NetPolicy, blocked
from flowrun.tools.visit_url import visit_url
from flowrun.tools.web_search import web_search

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


class Recorder(BaseHTTPRequestHandler):
    requests: list[str]
    redirect_to: str | None = None

    def do_GET(self) -> None:
        self.requests.append(self.path)
        if self.redirect_to:
            self.send_response(302)
            self.send_header("Location", self.redirect_to)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = b"<html><body><main><p>internal page</p></main></body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def serve(host: str, redirect_to: str | None = None) -> tuple[ThreadingHTTPServer, type[Recorder]]:
    handler: type[Recorder] = type("R", (Recorder,), {"requests": [], "redirect_to": redirect_to})
    httpd = ThreadingHTTPServer((host, 0), handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return httpd, handler


@pytest.fixture
def internal() -> Iterator[tuple[int, type[Recorder]]]:
    """A server on 127.0.0.2: loopback, and not the address the tests allow."""
    httpd, handler = serve("127.0.0.2")
    yield httpd.server_address[1], handler
    httpd.shutdown()
    httpd.server_close()


def make_ctx(tmp_path: Path, **config: Any) -> ToolContext:
    return ToolContext(
        workspace=tmp_path,
        base_dir=tmp_path,
        cwd=tmp_path,
        run_dir=tmp_path,
        config={"timeout_s": 10, "cache_dir": str(tmp_path / "cache"), **config},
        search_path=[EXAMPLES],
    )


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "::1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",  # cloud metadata
        "fd00:ec2::254",  # AWS metadata over IPv6
        "100.64.0.1",  # carrier-grade NAT
        "100.100.100.200",  # a metadata service inside CGNAT space
        "224.0.0.1",
        "0.0.0.0",
        "::",
        "fe80::1",
        "::ffff:127.0.0.1",
        "::ffff:169.254.169.254",
        "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
        "2002:7f00:1::1",  # 6to4 of 127.0.0.1
        "192.0.2.1",  # documentation range
    ],
)
def test_non_public_addresses_are_blocked(address: str) -> None:
    assert blocked(ipaddress.ip_address(address)) is not None


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8"])
def test_public_addresses_pass(address: str) -> None:
    assert blocked(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.2:{port}/page",
        "http://localhost:{port}/page",  # a name that resolves to loopback
        "http://[::ffff:127.0.0.2]:{port}/page",
        "http://2130706434:{port}/page",  # 127.0.0.2 as one decimal number
    ],
)
async def test_loopback_is_refused_before_any_request(
    tmp_path: Path, internal: tuple[int, type[Recorder]], url: str
) -> None:
    port, handler = internal
    result = await visit_url(make_ctx(tmp_path), url=url.format(port=port))
    assert result.error is not None and result.error.code == "ACCESS_DENIED", result.text
    assert "allow_private" in result.text
    assert handler.requests == []


@pytest.mark.parametrize(
    "url", ["http://10.0.0.1/", "http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/"]
)
async def test_private_and_metadata_addresses_are_refused(tmp_path: Path, url: str) -> None:
    result = await visit_url(make_ctx(tmp_path, timeout_s=2), url=url)
    assert result.error is not None and result.error.code == "ACCESS_DENIED", result.text


async def test_a_redirect_to_loopback_is_refused(
    tmp_path: Path, internal: tuple[int, type[Recorder]]
) -> None:
    port, handler = internal
    front, front_handler = serve("127.0.0.1", redirect_to=f"http://127.0.0.2:{port}/secret")
    try:
        ctx = make_ctx(tmp_path, allow_hosts=["127.0.0.1"])  # the first hop is allowed, the next is not
        result = await visit_url(ctx, url=f"http://127.0.0.1:{front.server_address[1]}/start")
    finally:
        front.shutdown()
        front.server_close()
    assert front_handler.requests == ["/start"]
    assert result.error is not None and result.error.code == "ACCESS_DENIED", result.text
    assert handler.requests == []


async def test_the_config_loosens_the_guard(tmp_path: Path, internal: tuple[int, type[Recorder]]) -> None:
    port, handler = internal
    url = f"http://127.0.0.2:{port}/page"
    for config in ({"allow_private": True}, {"allow_hosts": ["127.0.0.0/8"]}, {"allow_hosts": ["127.0.0.2"]}):
        result = await visit_url(make_ctx(tmp_path, **config), url=url)
        assert result.status == "success" and "internal page" in result.text, (config, result.text)
    assert handler.requests == ["/page"] * 3
    front, front_handler = serve("127.0.0.1")
    try:
        named = await visit_url(
            make_ctx(tmp_path, allow_hosts=["localhost"]), url=f"http://localhost:{front.server_address[1]}/x"
        )
    finally:
        front.shutdown()
        front.server_close()
    assert named.status == "success" and front_handler.requests == ["/x"]


async def test_a_name_with_a_private_address_among_public_ones_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DNS answers cannot be made here: the resolver is replaced for one made-up name."""
    loop = asyncio.get_running_loop()
    real = loop.getaddrinfo

    async def fake(host: str, port: int, **kw: Any) -> list[Any]:
        if host == "mixed.example":
            return [
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port)),
                (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.7", port)),
            ]
        return await real(host, port, **kw)

    monkeypatch.setattr(loop, "getaddrinfo", fake)
    with pytest.raises(AddressRefused, match=r"mixed\.example \(10\.0\.0\.7\) is a private address"):
        await NetPolicy().addresses("mixed.example", 80)


async def test_web_search_endpoint_is_guarded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test-key")
    httpd, handler = serve("127.0.0.1")
    try:
        ctx = make_ctx(tmp_path, api_base_url=f"http://127.0.0.1:{httpd.server_address[1]}")
        result = await web_search(ctx, query="anything")
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert result.error is not None and result.error.code == "ACCESS_DENIED", result.text
    assert handler.requests == []


async def test_file_urls_stay_inside_the_workspace_and_corpus(tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside.md"
    outside.write_text("# outside\n")
    try:
        refused = await visit_url(make_ctx(tmp_path), url=outside.as_uri())
    finally:
        outside.unlink()
    assert refused.error is not None and refused.error.code == "ACCESS_DENIED"
    page = next((EXAMPLES / "corpus").rglob("*.md"))
    assert (await visit_url(make_ctx(tmp_path), url=page.as_uri())).status in ("success", "partial")
