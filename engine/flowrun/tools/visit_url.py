"""`visit_url`: read a web page (or a corpus/workspace file) as text the model can use.

http(s) pages are streamed with a byte cap (config `max_bytes`) and an overall deadline, so a
huge or slow-dripping page cannot stall the agent; html becomes markdown (beautifulsoup4 +
markdownify, navigation and scripts dropped); text, markdown and json pass through. The text
is cut at `max_chars` with a partial status and the `start_char` to read on from. The page's
text reaches the model framed as data, in a block naming its URL (flowrun/foreign_text.py).
Only public addresses are fetched unless the config loosens it (`allow_private`, `allow_hosts`;
see net_guard.py): every hop of a redirect chain is checked before its request and again where
its connection is opened. `file://` URLs are what the offline web_search returns; they may only
point inside the corpus folder or the workspace.
"""

from __future__ import annotations

import asyncio
import mimetypes
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

from flowrun.foreign_text import frame
from flowrun.pinned import Moved
from flowrun.tools.base import ToolContext, error, finish_result, tool
from flowrun.tools.corpus import find_corpus_dir
from flowrun.tools.file_io import Unreadable, open_regular
from flowrun.tools.net_guard import AddressRefused, NetPolicy
from flowrun.types import ToolResult

HTML_TYPES = {"text/html", "application/xhtml+xml"}
TEXT_TYPES = {
    "application/json",
    "application/ld+json",
    "application/xml",
    "application/x-yaml",
    "application/yaml",
}
DROP_TAGS = ["script", "style", "noscript", "nav", "aside", "form", "iframe", "svg", "button", "template"]
CHROME_TAGS = ["header", "footer"]  # site chrome when a page has no marked main content
USER_AGENT = "flowrun-visit_url/1 (+https://github.com/flowrun)"
STATUS_CODES = {
    401: "ACCESS_DENIED",
    403: "ACCESS_DENIED",
    404: "NOT_FOUND",
    410: "NOT_FOUND",
    429: "RATE_LIMITED",
}


class VisitError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(slots=True)
class Fetched:
    body: bytes
    content_type: str  # media type without parameters, lower case ("" when unknown)
    charset: str | None
    final_url: str
    truncated: bool  # stopped reading at max_bytes


# the network: a replay shows the page as it was then; the page is framed as data (foreign_text.py)
@tool(replay="recorded", foreign_text=True)
async def visit_url(
    ctx: ToolContext, url: str, max_chars: int | None = None, start_char: int = 0
) -> ToolResult:
    started = time.perf_counter()
    params: dict[str, object] = {"url": url, "max_chars": max_chars, "start_char": start_char}
    path_resolved: str | None = None
    try:
        scheme = urlsplit(url).scheme.lower() if isinstance(url, str) else ""
        if scheme == "file":
            fetched, local = _read_file_url(ctx, url)
            path_resolved = ctx.relative(local)
        elif scheme in ("http", "https") and ctx.dry_run:
            raise VisitError(
                "UNAVAILABLE",
                f"a dry run fetches nothing from the web ({url}); it reads the corpus's file:// URLs",
            )
        elif scheme in ("http", "https"):
            fetched = await _fetch_http(ctx, url)
        else:
            raise VisitError("INVALID_PARAM", f"only http(s) and file:// URLs can be visited, got {url!r}")
        result = _render(ctx, url, fetched, max_chars, start_char)
    except VisitError as e:
        result = error(e.code, e.message)
    return finish_result(result, params, started, path_resolved)


# ---------------------------------------------------------------- fetching


async def _fetch_http(ctx: ToolContext, url: str) -> Fetched:
    import httpx  # lazy: `flowrun validate` never needs it

    from flowrun.tools.net_transport import GuardedTransport

    timeout_s = float(ctx.config.get("timeout_s") or ctx.limits.get("timeout_s") or 30)
    max_bytes = int(ctx.config.get("max_bytes") or 2_000_000)
    headers = {"User-Agent": str(ctx.config.get("user_agent") or USER_AGENT)}
    policy = NetPolicy.from_config(ctx.config)

    async def check_hop(request: httpx.Request) -> None:
        # before each request of the redirect chain, proxied ones included; an unresolvable
        # name is left to the connection, which reports it
        try:
            await policy.check_url(str(request.url))
        except OSError:
            pass

    try:
        # httpx's timeout bounds each read; asyncio.timeout bounds the whole visit (slow drips)
        async with asyncio.timeout(timeout_s):
            async with httpx.AsyncClient(
                timeout=httpx.Timeout(timeout_s),
                follow_redirects=True,
                headers=headers,
                transport=GuardedTransport(policy),
                event_hooks={"request": [check_hop]},
            ) as client:
                async with client.stream("GET", url) as response:
                    return await _read_response(response, url, max_bytes)
    except AddressRefused as e:
        raise VisitError("ACCESS_DENIED", f"not fetched: {e}") from e
    except TimeoutError as e:
        raise VisitError("TIMEOUT", f"{url} did not answer within {timeout_s:g} s") from e
    except httpx.TimeoutException as e:
        raise VisitError("TIMEOUT", f"{url} did not answer within {timeout_s:g} s") from e
    except httpx.InvalidURL as e:
        raise VisitError("INVALID_PARAM", f"invalid URL {url!r}: {e}") from e
    except httpx.HTTPError as e:
        raise VisitError("UNAVAILABLE", f"cannot fetch {url}: {type(e).__name__}: {e}") from e


async def _read_response(response: Any, url: str, max_bytes: int) -> Fetched:
    status = response.status_code
    if status >= 400:
        code = STATUS_CODES.get(status, "UNAVAILABLE")
        raise VisitError(code, f"{url} answered HTTP {status} {response.reason_phrase}".rstrip())
    media_type, charset = _parse_content_type(response.headers.get("content-type", ""))
    if media_type and _kind(media_type) is None:
        raise VisitError(
            "UNSUPPORTED_CONTENT", f"{url} is {media_type}, not a page or text this tool can read"
        )
    chunks: list[bytes] = []
    size = 0
    truncated = False
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            truncated = True
            break  # stop downloading: the rest of the page is never read
    body = b"".join(chunks)[:max_bytes]
    return Fetched(body, media_type, charset, str(response.url), truncated)


def _read_file_url(ctx: ToolContext, url: str) -> tuple[Fetched, Path]:
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise VisitError("ACCESS_DENIED", f"file URLs must name a local file, got host {parts.netloc!r}")
    try:
        path = Path(url2pathname(parts.path)).resolve()
    except (OSError, RuntimeError, ValueError) as e:
        raise VisitError("INVALID_PARAM", f"cannot resolve {url!r}: {e}") from e
    roots = [r for r in (find_corpus_dir(ctx), ctx.workspace.resolve()) if r is not None]
    if not any(path == root or root in path.parents for root in roots):
        raise VisitError(
            "ACCESS_DENIED", "file:// URLs may only point inside the search corpus or the workspace"
        )
    if path.is_dir():
        raise VisitError("IS_DIRECTORY", f"{url} is a folder; visit a file inside it")
    if not path.is_file():
        raise VisitError("NOT_FOUND", f"no such file: {url}")
    guessed = mimetypes.guess_type(path.name)[0] or ""
    if path.suffix.lower() in (".md", ".markdown", ".rst", ".txt", ".log"):
        guessed = "text/plain"
    if guessed and _kind(guessed) is None:
        raise VisitError(
            "UNSUPPORTED_CONTENT", f"{path.name} is {guessed}, not a page or text this tool can read"
        )
    max_bytes = int(ctx.config.get("max_bytes") or 2_000_000)
    try:
        with open_regular(path, url) as f:  # the checked file (pinned), never a FIFO
            body = f.read(max_bytes + 1)
    except Moved:
        raise VisitError(
            "ACCESS_DENIED", f"{url} changed while it was being opened; nothing was read"
        ) from None
    except Unreadable as e:
        raise VisitError("INVALID_PARAM", str(e)) from None
    return Fetched(body[:max_bytes], guessed, None, url, len(body) > max_bytes), path


def _parse_content_type(value: str) -> tuple[str, str | None]:
    media_type, _, rest = value.partition(";")
    match = re.search(r"charset\s*=\s*\"?([\w.:-]+)", rest, re.IGNORECASE)
    return media_type.strip().lower(), match.group(1) if match else None


def _kind(media_type: str) -> str | None:
    """'html', 'text' or None (unsupported) for a media type."""
    if media_type in HTML_TYPES:
        return "html"
    if media_type.startswith("text/") or media_type in TEXT_TYPES or media_type.endswith(("+json", "+xml")):
        return "text"
    return None


# ---------------------------------------------------------------- rendering


def _render(
    ctx: ToolContext, url: str, fetched: Fetched, max_chars: int | None, start_char: int
) -> ToolResult:
    kind = _kind(fetched.content_type) if fetched.content_type else _sniff(fetched.body)
    if kind is None:
        raise VisitError("UNSUPPORTED_CONTENT", f"{url} is binary content, not a page or text")
    if kind == "html":
        title, content = html_to_markdown(fetched.body, fetched.charset)
    else:
        title, content = "", _decode(fetched.body, fetched.charset)
    limit = int(max_chars or ctx.config.get("max_chars") or 20_000)
    total = len(content)
    start = max(0, min(int(start_char or 0), total))
    end = min(total, start + max(1, limit))
    cut = end < total
    data: dict[str, object] = {
        "url": url,
        "final_url": fetched.final_url,
        "title": title,
        "content_type": fetched.content_type or kind,
        "content": content[start:end],
        "start_char": start,
        "end_char": end,
        "total_chars": total,
        "bytes_read": len(fetched.body),
        "truncated_bytes": fetched.truncated,
    }
    header = f"# {title}\n\n" if title else ""
    page = frame(f"{header}{content[start:end]}", f"page {fetched.final_url}")
    text = f"URL: {fetched.final_url}\n\n{page}"
    notes = []
    if cut:
        notes.append(
            f"[showing characters {start}-{end} of {total}; call visit_url with start_char={end} to read on]"
        )
    if fetched.truncated:
        notes.append(
            f"[the page is larger than max_bytes; only its first {len(fetched.body)} bytes were read]"
        )
    if notes:
        return ToolResult.partial(text + "\n\n" + "\n".join(notes), **data)
    return ToolResult.ok(text, **data)


def _sniff(body: bytes) -> str | None:
    head = body[:2048].lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html")) or b"<body" in head:
        return "html"
    return None if b"\x00" in head else "text"


def _decode(body: bytes, charset: str | None) -> str:
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:  # unknown charset name in the header
        return body.decode("utf-8", errors="replace")


def html_to_markdown(html: bytes | str, charset: str | None = None) -> tuple[str, str]:
    """(title, readable markdown) of an html page: scripts, styles and navigation dropped, the
    main content area (`<main>`, `role=main`, `<article>`) kept when the page marks one."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    if isinstance(html, bytes) and charset:
        html = _decode(html, charset)
    soup = BeautifulSoup(html, "html.parser")
    title = " ".join(soup.title.get_text().split()) if soup.title else ""
    for tag in soup(DROP_TAGS):
        tag.decompose()
    for anchor in soup.select("a.headerlink"):  # sphinx's pilcrow permalinks
        anchor.decompose()
    main = soup.find("main") or soup.find(None, {"role": "main"}) or soup.find("article")
    if main is None:
        main = soup.body or soup
        for tag in main(CHROME_TAGS):
            tag.decompose()
    try:
        markdown = MarkdownConverter(heading_style="ATX", bullets="-", strip=["img"]).convert_soup(main)
    except RecursionError:  # markdownify recurses once per nested element: a page nesting hundreds
        # (unclosed <p> or <font> tags, generated markup) is read as its text, one line per element
        markdown = main.get_text("\n")
    markdown = re.sub(r"[ \t]+\n", "\n", markdown)
    markdown = re.sub(r"\n{3,}", "\n\n", markdown).strip()
    return title, markdown
