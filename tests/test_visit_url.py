"""visit_url against a loopback server (html, text, json, too large, wrong type, slow, 404,
redirects) and file:// URLs inside and outside the corpus and the workspace."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from support.procs import wait_for

from flowrun.tools.base import ToolContext
from flowrun.tools.visit_url import html_to_markdown, visit_url

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"

PAGE = """<!DOCTYPE html><html><head><title>Zebra  Guide</title><meta charset="utf-8">
<script>window.tracking = "SHOULD-NOT-APPEAR";</script><style>body{color:red}</style></head>
<body><nav><a href="/">Home</a> | <a href="/about">NAV-LINK</a></nav>
<main><h1>Zebras</h1><p>Zebras have <b>black</b> and white <a href="/stripes">stripes</a>.</p>
<ul><li>Plains zebra</li><li>Grévy’s zebra</li></ul>
<pre><code>count = 3</code></pre></main>
<footer>FOOTER-TEXT</footer></body></html>"""


# old markup with unclosed paragraphs (and generated pages) nest elements hundreds deep
DEEP_PAGE = (
    b"<html><head><title>Deep</title></head><body>"
    + b"".join(b"<p>paragraph %d " % i for i in range(600))
    + b"<div>" * 5000
    + b"the end</body></html>"
)


class Handler(BaseHTTPRequestHandler):
    disable_nagle_algorithm = True
    # set on the per-server subclass: `release` lets slow handlers end at teardown;
    # `endless_written` gets how many bytes /endless.html sent before the client hung up
    release: threading.Event
    endless_written: list[int]

    def do_GET(self) -> None:
        routes = {
            "/page.html": lambda: self.reply(200, "text/html; charset=utf-8", PAGE.encode()),
            "/plain.txt": lambda: self.reply(200, "text/plain", b"just plain text\nline two\n"),
            "/notes.md": lambda: self.reply(200, "text/markdown; charset=utf-8", b"# Notes\n\n- a\n- b\n"),
            "/data.json": lambda: self.reply(200, "application/json", json.dumps({"answer": 42}).encode()),
            "/latin1.txt": lambda: self.reply(
                200, "text/plain; charset=iso-8859-1", "café".encode("latin-1")
            ),
            "/long.txt": lambda: self.reply(200, "text/plain", ("0123456789" * 500).encode()),
            "/image.png": lambda: self.reply(200, "image/png", b"\x89PNG\r\n\x1a\n" + bytes(100)),
            "/missing": lambda: self.reply(404, "text/html", b"<h1>Not Found</h1>"),
            "/forbidden": lambda: self.reply(403, "text/plain", b"no"),
            "/redirect": lambda: self.reply(302, "text/plain", b"", {"Location": "/plain.txt"}),
            "/untyped": lambda: self.reply(200, "", b"<html><body><p>sniffed page</p></body></html>"),
            "/deep.html": lambda: self.reply(200, "text/html", DEEP_PAGE),
            "/endless.html": self.endless,
            "/slow": self.slow,
            "/drip": self.drip,
        }
        routes.get(self.path, lambda: self.reply(404, "text/plain", b"no route"))()

    def reply(self, status: int, ctype: str, body: bytes, headers: dict[str, str] | None = None) -> None:
        lines = [f"HTTP/1.0 {status} X", f"Content-Length: {len(body)}"]
        lines += [f"Content-Type: {ctype}"] if ctype else []
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)

    def endless(self) -> None:
        """An html page with no end (bounded at 64 MB): the client must stop reading."""
        self.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<html><body>")
        chunk = b"<p>" + b"lorem ipsum " * 800 + b"</p>\n"
        written = 0
        try:
            for _ in range(64 * 1024 * 1024 // len(chunk)):
                self.wfile.write(chunk)
                written += len(chunk)
        except OSError:
            pass  # the client hung up, as it should
        finally:
            self.endless_written.append(written)

    def slow(self) -> None:
        self.release.wait(10)
        self.reply(200, "text/plain", b"late")

    def drip(self) -> None:
        """Headers at once, then a byte every 0.1 s: each read is quick, the whole is not."""
        try:
            self.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n")
            for _ in range(100):
                if self.release.wait(0.1):
                    return
                self.wfile.write(b"x")
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server_and_handler() -> Iterator[tuple[str, type[Handler]]]:
    release = threading.Event()
    handler = type("H", (Handler,), {"release": release, "endless_written": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    finally:
        release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture
def server(server_and_handler: tuple[str, type[Handler]]) -> str:
    return server_and_handler[0]


def make_ctx(tmp_path: Path, **config: Any) -> ToolContext:
    workspace = tmp_path / "run" / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    return ToolContext(
        workspace=workspace,
        base_dir=workspace,
        cwd=workspace,
        run_dir=workspace.parent,
        tool_name="visit_url",
        # the test server listens on loopback, which the address guard refuses by default
        config={
            "max_chars": 20_000,
            "max_bytes": 2_000_000,
            "timeout_s": 10,
            "allow_hosts": ["127.0.0.1"],
            **config,
        },
        search_path=[EXAMPLES],
    )


async def test_html_becomes_readable_markdown(tmp_path: Path, server: str) -> None:
    result = await visit_url(make_ctx(tmp_path), url=f"{server}/page.html")
    assert result.status == "success", result.text
    content = result.data["content"]
    assert result.data["title"] == "Zebra Guide"
    assert content.startswith("# Zebras")
    assert "Zebras have **black** and white [stripes](/stripes)." in content
    assert "- Grévy’s zebra" in content
    assert "count = 3" in content
    for noise in ("SHOULD-NOT-APPEAR", "color:red", "NAV-LINK", "FOOTER-TEXT"):
        assert noise not in result.text
    # the URL, then the page (its title first) framed as data naming it
    page = f"{server}/page.html"
    assert result.text.startswith(f'URL: {page}\n\n<foreign-text source="page {page}"')
    assert "\n# Zebra Guide\n\n# Zebras" in result.text
    assert result.data["content_type"] == "text/html"
    assert result.stats["time_ms"] >= 0
    assert result.context["params_input"]["url"] == f"{server}/page.html"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/plain.txt", "just plain text\nline two\n"),
        ("/notes.md", "# Notes\n\n- a\n- b\n"),
        ("/data.json", '{"answer": 42}'),
        ("/latin1.txt", "café"),
        ("/untyped", "sniffed page"),
    ],
)
async def test_text_types_pass_through(tmp_path: Path, server: str, path: str, expected: str) -> None:
    result = await visit_url(make_ctx(tmp_path), url=server + path)
    assert result.status == "success", result.text
    assert result.data["content"] == expected


async def test_redirect_is_followed(tmp_path: Path, server: str) -> None:
    result = await visit_url(make_ctx(tmp_path), url=f"{server}/redirect")
    assert result.status == "success"
    assert result.data["final_url"] == f"{server}/plain.txt"
    assert result.data["content"].startswith("just plain text")


async def test_long_text_is_cut_with_a_hint_and_can_be_continued(tmp_path: Path, server: str) -> None:
    ctx = make_ctx(tmp_path)
    first = await visit_url(ctx, url=f"{server}/long.txt", max_chars=1200)
    assert first.status == "partial"
    assert first.data["content"] == ("0123456789" * 500)[:1200]
    assert (first.data["end_char"], first.data["total_chars"]) == (1200, 5000)
    assert "start_char=1200" in first.text
    rest = await visit_url(ctx, url=f"{server}/long.txt", max_chars=5000, start_char=1200)
    assert rest.status == "success"
    assert first.data["content"] + rest.data["content"] == "0123456789" * 500


async def test_too_large_page_stops_reading_at_max_bytes(
    tmp_path: Path, server_and_handler: tuple[str, type[Handler]]
) -> None:
    server, handler = server_and_handler
    result = await visit_url(
        make_ctx(tmp_path, max_bytes=50_000, max_chars=100_000), url=f"{server}/endless.html"
    )
    assert result.status == "partial", result.text
    assert result.data["truncated_bytes"] is True
    assert result.data["bytes_read"] == 50_000
    assert "lorem ipsum" in result.data["content"]
    assert "larger than max_bytes" in result.text
    # the client hung up early: the server could not send more than what socket buffers hold
    assert await asyncio.to_thread(wait_for, lambda: handler.endless_written)
    assert handler.endless_written[0] < 32 * 1024 * 1024


async def test_wrong_content_type_is_refused(tmp_path: Path, server: str) -> None:
    result = await visit_url(make_ctx(tmp_path), url=f"{server}/image.png")
    assert result.status == "error"
    assert result.error is not None and result.error.code == "UNSUPPORTED_CONTENT"
    assert "image/png" in result.text


async def test_slow_response_times_out(tmp_path: Path, server: str) -> None:
    result = await visit_url(make_ctx(tmp_path, timeout_s=0.5), url=f"{server}/slow")
    assert result.status == "error"
    assert result.error is not None and result.error.code == "TIMEOUT"


async def test_slow_drip_hits_the_overall_deadline(tmp_path: Path, server: str) -> None:
    started = time.perf_counter()
    result = await visit_url(make_ctx(tmp_path, timeout_s=0.8), url=f"{server}/drip")
    assert result.error is not None and result.error.code == "TIMEOUT"
    assert time.perf_counter() - started < 8  # the drip would last 10 s


@pytest.mark.parametrize(("path", "code"), [("/missing", "NOT_FOUND"), ("/forbidden", "ACCESS_DENIED")])
async def test_http_errors(tmp_path: Path, server: str, path: str, code: str) -> None:
    result = await visit_url(make_ctx(tmp_path), url=server + path)
    assert result.error is not None and result.error.code == code
    assert "HTTP" in result.text


async def test_unreachable_host(tmp_path: Path) -> None:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = httpd.server_address[1]
    httpd.server_close()
    result = await visit_url(make_ctx(tmp_path), url=f"http://127.0.0.1:{port}/x")
    assert result.error is not None and result.error.code == "UNAVAILABLE"


@pytest.mark.parametrize("url", ["ftp://example.org/x", "javascript:alert(1)", "example.org", "/etc/passwd"])
async def test_only_http_and_file_urls(tmp_path: Path, url: str) -> None:
    result = await visit_url(make_ctx(tmp_path), url=url)
    assert result.error is not None and result.error.code == "INVALID_PARAM"


# ---------------------------------------------------------------- file:// urls


async def test_file_url_into_the_corpus(tmp_path: Path) -> None:
    doc = (EXAMPLES / "corpus" / "howto" / "sorting.md").resolve()
    result = await visit_url(make_ctx(tmp_path), url=doc.as_uri(), max_chars=500)
    assert result.status == "partial"
    assert result.data["content"].startswith("# Sorting HOW TO")
    assert result.context["path_resolved"] == str(doc)  # outside the workspace: shown absolute


async def test_file_url_into_the_workspace(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    page = ctx.workspace / "saved" / "page.html"
    page.parent.mkdir()
    page.write_text(PAGE, encoding="utf-8")
    result = await visit_url(ctx, url=page.as_uri())
    assert result.status == "success"
    assert result.data["content"].startswith("# Zebras")
    assert result.context["path_resolved"] == "saved/page.html"


async def test_file_url_outside_is_refused(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    outside = tmp_path / "secret.txt"
    outside.write_text("top secret")
    link = ctx.workspace / "link.txt"
    link.symlink_to(outside)
    for url in (outside.as_uri(), link.as_uri(), (ctx.workspace / ".." / "..").as_uri() + "/secret.txt"):
        result = await visit_url(ctx, url=url)
        assert result.error is not None and result.error.code == "ACCESS_DENIED", url
        assert "top secret" not in result.text


async def test_file_url_errors(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    (ctx.workspace / "pic.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    png = await visit_url(ctx, url=(ctx.workspace / "pic.png").as_uri())
    assert png.error is not None and png.error.code == "UNSUPPORTED_CONTENT"
    missing = await visit_url(ctx, url=(ctx.workspace / "nope.md").as_uri())
    assert missing.error is not None and missing.error.code == "NOT_FOUND"
    folder = await visit_url(ctx, url=ctx.workspace.as_uri())
    assert folder.error is not None and folder.error.code == "IS_DIRECTORY"
    remote = await visit_url(ctx, url="file://otherhost/etc/hosts")
    assert remote.error is not None and remote.error.code == "ACCESS_DENIED"


async def test_a_page_nested_thousands_deep_is_read_as_its_text(tmp_path: Path, server: str) -> None:
    """Markdown conversion recurses once per nested element: such a page had been an INTERNAL
    error (RecursionError); now it is read, its text one element a line."""
    result = await visit_url(make_ctx(tmp_path), url=f"{server}/deep.html")
    assert result.status == "success", result.output
    content = result.data["content"]
    assert result.data["title"] == "Deep" and content.startswith("paragraph 0"), content[:200]
    assert "paragraph 599" in content and content.endswith("the end"), content[-200:]


def test_html_to_markdown_without_main_drops_site_chrome() -> None:
    title, text = html_to_markdown(
        b"<html><body><header>SITE</header><h2>Body</h2><p>text</p><footer>(c)</footer></body></html>"
    )
    assert title == ""
    assert text == "## Body\n\ntext"
