"""web_search: the offline corpus backend for real (examples/corpus and tmp corpora) and the
Tavily backend through the real tavily-python client against a loopback server."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

import pytest
from support.cli import run_cli

from flowrun.paths import builtin_corpus
from flowrun.tools.base import ToolContext
from flowrun.tools.corpus import corpus_files, fts_query, html_to_text
from flowrun.tools.web_search import web_search

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"


def make_ctx(tmp_path: Path, search_path: list[Path], **config: Any) -> ToolContext:
    workspace = tmp_path / "run" / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    config.setdefault("cache_dir", str(tmp_path / "cache"))
    config.setdefault("allow_hosts", ["127.0.0.1"])  # the fake Tavily listens on loopback
    return ToolContext(
        workspace=workspace,
        base_dir=workspace,
        cwd=workspace,
        run_dir=workspace.parent,
        tool_name="web_search",
        config=config,
        search_path=search_path,
    )


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    monkeypatch.delenv("TAVILY_API_BASE_URL", raising=False)


def url_path(url: str) -> Path:
    assert url.startswith("file://")
    return Path(url2pathname(urlsplit(url).path))


# ---------------------------------------------------------------- corpus backend


async def test_example_corpus_ranks_the_relevant_howto_first(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, [EXAMPLES])
    result = await web_search(ctx, query="descriptor property __get__", max_results=3)
    assert result.status == "success"
    assert result.data["backend"] == "corpus"
    results = result.data["results"]
    assert 1 <= len(results) <= 3
    assert results[0]["title"] == "Descriptor HowTo Guide"
    assert url_path(results[0]["url"]) == (EXAMPLES / "corpus" / "howto" / "descriptor.md").resolve()
    assert all(set(r) == {"title", "url", "snippet", "score"} for r in results)
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    assert "**" in results[0]["snippet"]  # matched terms are highlighted
    lines = result.text.splitlines()  # the results, framed as data naming the backend
    assert lines[1].startswith('<foreign-text source="search results from the local corpus')
    assert lines[2].startswith("1. Descriptor HowTo Guide")
    assert "visit_url" in result.text
    assert result.stats["time_ms"] >= 0
    assert result.context["params_input"]["query"] == "descriptor property __get__"


async def test_example_corpus_is_real_and_big_enough() -> None:
    corpus = EXAMPLES / "corpus"
    files = corpus_files(corpus)
    assert len(files) >= 30
    assert all(f.name not in ("README.md", "LICENSE.md") for f in files)
    assert (corpus / "README.md").is_file() and (corpus / "LICENSE.md").is_file()
    size = sum(p.stat().st_size for p in corpus.rglob("*") if p.is_file())
    assert size < 3 * 1024 * 1024


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("logging handlers rotate files", "Logging"),
        ("asyncio task cancellation timeout", "Coroutines and Tasks"),
        ("floating point representation error", "15. Floating Point Arithmetic: Issues and Limitations"),
        ("regular expression greedy", "Regular Expression HOWTO"),
    ],
)
async def test_example_corpus_answers_research_questions(tmp_path: Path, query: str, expected: str) -> None:
    result = await web_search(make_ctx(tmp_path, [EXAMPLES]), query=query)
    titles = [r["title"] for r in result.data["results"]]
    assert any(t.startswith(expected) for t in titles[:2]), titles


def write_corpus(root: Path) -> Path:
    corpus = root / "corpus"
    (corpus / "notes").mkdir(parents=True)
    (corpus / "README.md").write_text("# About\nThis corpus is about zebras and quokkas.\n")
    (corpus / "notes" / "zebra.md").write_text("# Zebra facts\n\nZebras have black and white stripes.\n")
    (corpus / "quokka.txt").write_text("Quokkas\n=======\n\nThe quokka is a small marsupial from Rottnest.\n")
    (corpus / "page.html").write_text(
        "<html><head><title>Wombat &amp; friends</title><script>var secretword = 1;</script>"
        "<style>.burrow{}</style></head><body><nav>menu items</nav>"
        "<p>Wombats dig <b>burrows</b>.</p><p>They are marsupials too.</p></body></html>"
    )
    (corpus / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n quokka")
    (corpus / ".hidden").mkdir()
    (corpus / ".hidden" / "quokka.md").write_text("quokka quokka quokka")
    return corpus


async def test_tmp_corpus_text_markdown_and_html(tmp_path: Path) -> None:
    project = tmp_path / "project"
    corpus = write_corpus(project)
    ctx = make_ctx(tmp_path, [project])

    result = await web_search(ctx, query="marsupial")
    by_title = {r["title"]: r for r in result.data["results"]}
    assert set(by_title) == {"Quokkas", "Wombat & friends"}  # porter stemming: marsupials
    assert url_path(by_title["Wombat & friends"]["url"]) == (corpus / "page.html").resolve()

    zebra = await web_search(ctx, query="stripes")
    assert [r["title"] for r in zebra.data["results"]] == ["Zebra facts"]

    # script, style and nav text is not indexed; README and hidden folders are not documents
    for word in ("secretword", "burrow menu", "zebras quokkas about"):
        found = await web_search(ctx, query=word)
        assert all(r["title"] != "About" for r in found.data["results"])
    assert (await web_search(ctx, query="secretword")).data["results"] == []
    assert (await web_search(ctx, query="menu")).data["results"] == []
    quokka = await web_search(ctx, query="quokka")
    assert [url_path(r["url"]).name for r in quokka.data["results"]] == ["quokka.txt"]


async def test_no_results_says_so(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write_corpus(project)
    result = await web_search(make_ctx(tmp_path, [project]), query="xylophone")
    assert result.status == "success"
    assert result.data["results"] == []
    assert "No results" in result.text


async def test_index_is_cached_and_rebuilt_when_the_corpus_changes(tmp_path: Path) -> None:
    project = tmp_path / "project"
    corpus = write_corpus(project)
    ctx = make_ctx(tmp_path, [project])
    cache = tmp_path / "cache"

    await web_search(ctx, query="zebra")
    first = sorted(cache.glob("*.sqlite"))
    assert len(first) == 1
    built_at = first[0].stat().st_mtime_ns
    await web_search(ctx, query="quokka")
    assert sorted(cache.glob("*.sqlite")) == first
    assert first[0].stat().st_mtime_ns == built_at  # reused, not rebuilt

    doc = corpus / "notes" / "okapi.md"
    doc.write_text("# Okapi\n\nThe okapi looks like a zebra but is a giraffid.\n")
    result = await web_search(ctx, query="giraffid")
    assert [r["title"] for r in result.data["results"]] == ["Okapi"]
    assert len(list(cache.glob("*.sqlite"))) == 2
    assert not list(cache.glob("*.tmp"))  # built in a temp file, renamed into place

    # editing a file in place (new mtime) also makes a fresh index
    doc.write_text("# Okapi\n\nNow about forest antelopes.\n")
    os.utime(doc, ns=(built_at + 10**9, built_at + 10**9))
    assert (await web_search(ctx, query="giraffid")).data["results"] == []


@pytest.mark.parametrize(
    "query",
    [
        '"',
        "(((",
        "NEAR(zebra quokka)",
        "zebra AND",
        "OR OR",
        "foo* -bar",
        "title:zebra",
        "^zebra",
        '"unclosed',
        "}{",
    ],
)
async def test_fts5_syntax_in_queries_never_crashes(tmp_path: Path, query: str) -> None:
    project = tmp_path / "project"
    write_corpus(project)
    result = await web_search(make_ctx(tmp_path, [project]), query=query)
    assert result.status == "success", result.text


def test_fts_query_quotes_every_term() -> None:
    assert fts_query('how do "black and white" stripes work?') == '"black and white" OR "stripes" OR "work?"'
    assert fts_query('say "hi') == '"say" OR "hi"'
    assert fts_query("the a of") == '"the" OR "a" OR "of"'  # only stopwords: keep them
    assert fts_query("((( ***") == ""


def test_html_to_text_drops_scripts_and_keeps_blocks() -> None:
    title, text = html_to_text("<title> T </title><script>x()</script><p>one</p><p>two &amp; three</p>")
    assert title == "T"
    assert text == "one\ntwo & three"


async def test_corpus_dir_config_relative_to_project(tmp_path: Path) -> None:
    project = tmp_path / "project"
    other = write_corpus(tmp_path / "elsewhere")
    project.mkdir()
    ctx = make_ctx(tmp_path, [project, EXAMPLES], corpus_dir="../elsewhere/corpus")
    result = await web_search(ctx, query="stripes")
    assert result.data["corpus"] == str(other.resolve())
    assert [r["title"] for r in result.data["results"]] == ["Zebra facts"]


async def test_no_corpus_on_the_search_path_uses_the_shipped_one(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = await web_search(make_ctx(tmp_path, [empty]), query="sorting key functions")
    assert result.status == "success"
    # examples/corpus in a checkout, flowrun/_builtin/examples/corpus in an installed wheel (as in CI)
    shipped = Path(result.data["corpus"])
    assert shipped == builtin_corpus()
    assert names_in(shipped) == names_in(EXAMPLES / "corpus")


def names_in(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


async def test_no_corpus_and_no_key_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An installation without the shipped corpus (e.g. a trimmed package)."""
    import flowrun.tools.corpus

    monkeypatch.setattr(flowrun.tools.corpus, "builtin_corpus", lambda: None)
    empty = tmp_path / "empty"
    empty.mkdir()
    result = await web_search(make_ctx(tmp_path, [empty]), query="zebra")
    assert result.status == "error"
    assert result.error is not None and result.error.code == "UNAVAILABLE"
    assert "TAVILY_API_KEY" in result.text


async def test_bad_arguments(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, [EXAMPLES])
    assert (await web_search(ctx, query="  ")).error.code == "INVALID_PARAM"  # type: ignore[union-attr]
    bad_depth = await web_search(ctx, query="x", search_depth="deep")
    assert bad_depth.error is not None and bad_depth.error.code == "INVALID_PARAM"
    forced = await web_search(make_ctx(tmp_path, [EXAMPLES], backend="tavily"), query="x")
    assert forced.error is not None and forced.error.code == "UNAVAILABLE"


# ---------------------------------------------------------------- tavily backend


class TavilyHandler(BaseHTTPRequestHandler):
    """Answers POST /search like Tavily; the outcome is a pure function of key and query."""

    disable_nagle_algorithm = True
    protocol_version = "HTTP/1.1"
    requests: list[dict[str, Any]]  # set on the per-server subclass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        if self.headers.get("Authorization") != "Bearer tvly-test-key":
            self.reply(401, {"detail": {"error": "Unauthorized: missing or invalid API key."}})
        elif body["query"] == "too many":
            self.reply(429, {"detail": {"error": "Rate limit exceeded"}})
        elif body["query"] == "server down":
            self.reply(503, {"detail": {"error": "maintenance"}})
        else:
            results = [
                {
                    "title": f"Result {i} for {body['query']}",
                    "url": f"https://example.org/{i}",
                    "content": f"Snippet {i}  about\n{body['query']}",
                    "score": 0.9 - i / 10,
                    "raw_content": None,
                }
                for i in range(body["max_results"] + 2)  # more than asked: the tool caps
            ]
            self.reply(
                200, {"query": body["query"], "answer": None, "results": results, "response_time": 0.1}
            )

    def reply(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        head = f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        self.wfile.write(head.encode() + data)  # one write: no Nagle/delayed-ACK stall

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def tavily_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    requests: list[dict[str, Any]] = []
    handler = type("Handler", (TavilyHandler,), {"requests": requests})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


async def test_tavily_backend_used_when_key_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tavily_server: tuple[str, list[dict[str, Any]]]
) -> None:
    base_url, requests = tavily_server
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test-key")
    ctx = make_ctx(tmp_path, [EXAMPLES], api_base_url=base_url)
    result = await web_search(ctx, query="agent frameworks", max_results=3, search_depth="advanced")
    assert result.status == "success", result.text
    assert result.data["backend"] == "tavily"
    assert requests[0]["path"] == "/search"
    assert requests[0]["body"]["search_depth"] == "advanced"
    assert requests[0]["body"]["max_results"] == 3
    results = result.data["results"]
    assert len(results) == 3
    assert results[0] == {  # the list the model reads (snippet) and the whole result (content)
        "title": "Result 0 for agent frameworks",
        "url": "https://example.org/0",
        "snippet": "Snippet 0 about agent frameworks",
        "content": "Snippet 0  about\nagent frameworks",
        "score": 0.9,
    }
    # the search as a whole is the result's metadata: what was asked and what Tavily added
    assert result.data["query"] == "agent frameworks"
    assert (result.data["search_depth"], result.data["max_results"]) == ("advanced", 3)
    assert result.data["response_time"] == 0.1 and "answer" not in result.data  # null: left out
    assert "1. Result 0 for agent frameworks" in result.text
    assert "the web (Tavily)" in result.text


async def test_tavily_base_url_from_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tavily_server: tuple[str, list[dict[str, Any]]]
) -> None:
    base_url, requests = tavily_server
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test-key")
    monkeypatch.setenv("TAVILY_API_BASE_URL", base_url)
    result = await web_search(make_ctx(tmp_path, [EXAMPLES]), query="zebra")
    assert result.status == "success"
    assert len(requests) == 1


@pytest.mark.parametrize(
    ("key", "query", "code"),
    [
        ("tvly-wrong", "zebra", "AUTH_FAILED"),
        ("tvly-test-key", "too many", "RATE_LIMITED"),
        ("tvly-test-key", "server down", "UNAVAILABLE"),
    ],
)
async def test_tavily_error_statuses_become_error_results(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tavily_server: tuple[str, list[dict[str, Any]]],
    key: str,
    query: str,
    code: str,
) -> None:
    base_url, requests = tavily_server
    monkeypatch.setenv("TAVILY_API_KEY", key)
    result = await web_search(make_ctx(tmp_path, [EXAMPLES], api_base_url=base_url), query=query)
    assert result.status == "error"
    assert result.error is not None and result.error.code == code, result.text
    assert len(requests) == 1


async def test_tavily_unreachable_is_an_error_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), TavilyHandler)
    port = server.server_address[1]
    server.server_close()  # nothing listens on this port now
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test-key")
    ctx = make_ctx(tmp_path, [EXAMPLES], api_base_url=f"http://127.0.0.1:{port}")
    result = await web_search(ctx, query="zebra")
    assert result.status == "error"
    assert result.error is not None and result.error.code == "UNAVAILABLE"
    assert "cannot reach Tavily" in result.text


async def test_backend_corpus_ignores_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-test-key")
    ctx = make_ctx(tmp_path, [EXAMPLES], backend="corpus", api_base_url="http://127.0.0.1:9")
    result = await web_search(ctx, query="unicode normalization")
    assert result.status == "success"
    assert result.data["backend"] == "corpus"


def test_a_dry_run_never_reaches_tavily(
    tmp_path: Path, tavily_server: tuple[str, list[dict[str, Any]]]
) -> None:
    """With a Tavily key in the environment, a dry run of the research roster still searches the
    offline corpus and sends nothing to the search service (nor fetches a web page)."""
    base_url, requests = tavily_server
    env = {"TAVILY_API_KEY": "tvly-test-key", "TAVILY_API_BASE_URL": base_url}
    args = [str(EXAMPLES / "research.yaml"), "--question", "sorting", "--dry-run", "--run-id", "d"]
    proc = run_cli([*args, "--runs-dir", str(tmp_path)], cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert requests == []
    lines = [json.loads(line) for line in (tmp_path / "d" / "events.jsonl").read_text().splitlines()]
    searched = [e["result"] for e in lines if e["type"] == "tool_result" and e["tool"] == "web_search"]
    assert searched and all(r["data"]["backend"] == "corpus" for r in searched)
