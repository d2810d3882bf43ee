"""`web_search`: Tavily when a key is set, else the offline corpus (see corpus.py).

The backend is chosen at call time (config `backend`: auto | tavily | corpus), so exporting
TAVILY_API_KEY switches a workflow to the live web with no manifest change. Both backends return
the same shape: a numbered list as text (what the model reads, framed as data in a block naming
the backend: flowrun/foreign_text.py) and the whole search as data (the
metadata the event log keeps): `query`, `search_depth`, `max_results`, `backend` and `results` =
[{title, url, snippet, score}], plus what Tavily adds (`answer`, `response_time`,
`follow_up_questions`, `images`, and per result its whole `content`, `published_date`,
`raw_content`) or the corpus (`corpus`, `documents`).

An agent's entry sets the defaults the model gets when it leaves the arguments out
(`web_search: {max_results: 10, search_depth: advanced}`, as the research roster's design has
them); the parameters the model sees say so.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from flowrun.foreign_text import frame
from flowrun.tools.base import ToolContext, error, finish_result, tool
from flowrun.tools.corpus import find_corpus_dir, search_corpus
from flowrun.tools.net_guard import AddressRefused, NetPolicy
from flowrun.types import ToolResult

MAX_RESULTS_CAP = 20
SNIPPET_CHARS = 500
Depth = Literal["basic", "advanced"]
DEPTHS: tuple[Depth, ...] = ("basic", "advanced")
DEFAULT_MAX_RESULTS = 5
DEFAULT_DEPTH: Depth = "basic"
# what Tavily answers beyond the results, kept in the result's data when it is given
TAVILY_EXTRAS = ("answer", "response_time", "follow_up_questions", "images", "request_id")
RESULT_EXTRAS = ("published_date", "raw_content", "favicon")


def search_parameters(search_path: list[Path], config: Mapping[str, object]) -> dict[str, object] | None:
    """The parameters with the agent's configured defaults (`max_results`, `search_depth`), so
    the model reads them and an argument it leaves out gets them; None (the manifest's) when
    the entry sets neither."""
    results, depth = config.get("max_results"), config.get("search_depth")
    if results is None and depth is None:
        return None
    results = results if isinstance(results, int) else DEFAULT_MAX_RESULTS  # the config is checked
    depth = depth if isinstance(depth, str) else DEFAULT_DEPTH
    return {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "description": "What to search for: keywords or a question. "
                '"Quoted words" match as a phrase.',
            },
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_RESULTS_CAP,
                "default": results,
                "description": f"How many results to return (1-{MAX_RESULTS_CAP}; default {results}).",
            },
            "search_depth": {
                "type": "string",
                "enum": list(DEPTHS),
                "default": depth,
                "description": f"advanced: slower, more thorough web search (Tavily only; default {depth}).",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }


@tool(
    replay="recorded", parameters=search_parameters, foreign_text=True
)  # the network: a replay shows what it found then
async def web_search(
    ctx: ToolContext, query: str, max_results: int | None = None, search_depth: str | None = None
) -> ToolResult:
    started = time.perf_counter()
    count: int = max_results if max_results is not None else _configured(ctx, "max_results")
    depth: str = search_depth if search_depth is not None else _configured(ctx, "search_depth")
    params = {"query": query, "max_results": count, "search_depth": depth}
    result = await _search(ctx, query, count, depth)
    if result.status != "error":
        limit = max(1, min(int(count), MAX_RESULTS_CAP))
        result.data = {
            "query": query.strip(),
            "search_depth": depth,
            "max_results": limit,
            **result.data,
        }
    return finish_result(result, params, started)


def _configured(ctx: ToolContext, key: str) -> Any:
    """An argument the call left out: the agent's configured default, else the tool's."""
    value = ctx.config.get(key)
    if value is not None:
        return value
    return DEFAULT_MAX_RESULTS if key == "max_results" else DEFAULT_DEPTH


async def _search(ctx: ToolContext, query: str, max_results: int, search_depth: str) -> ToolResult:
    if not isinstance(query, str) or not query.strip():
        return error("INVALID_PARAM", "query must be a non-empty string")
    depth: Depth | None = next((d for d in DEPTHS if d == search_depth), None)
    if depth is None:
        return error(
            "INVALID_PARAM", f"search_depth must be one of {', '.join(DEPTHS)}, got {search_depth!r}"
        )
    limit = max(1, min(int(max_results), MAX_RESULTS_CAP))
    backend = str(ctx.config.get("backend", "auto"))
    key = os.environ.get(str(ctx.config.get("api_key_env") or "TAVILY_API_KEY"), "")
    if ctx.dry_run and backend in ("auto", "tavily"):
        backend = "corpus"  # a dry run sends nothing to a paid service, whatever key is set
    if backend == "tavily" or (backend == "auto" and key):
        if not key:
            return error(
                "UNAVAILABLE",
                f"web search backend is 'tavily' but {ctx.config.get('api_key_env') or 'TAVILY_API_KEY'} "
                "is not set",
            )
        return await _tavily_search(ctx, key, query.strip(), limit, depth)
    if backend not in ("auto", "corpus"):
        return error("INVALID_PARAM", f"unknown web_search backend {backend!r} (auto, tavily or corpus)")
    return await _corpus_search(ctx, query.strip(), limit)


# ---------------------------------------------------------------- tavily


async def _tavily_search(ctx: ToolContext, key: str, query: str, limit: int, depth: Depth) -> ToolResult:
    from tavily import AsyncTavilyClient  # lazy: only runs that search the web pay for the import

    base_url = ctx.config.get("api_base_url") or os.environ.get("TAVILY_API_BASE_URL") or None
    timeout = float(ctx.config.get("timeout_s") or ctx.limits.get("timeout_s") or 30)
    if base_url:  # a configured endpoint must pass the address guard like any fetched page
        try:
            await NetPolicy.from_config(ctx.config).check_url(str(base_url))
        except AddressRefused as e:
            return error("ACCESS_DENIED", f"web search endpoint refused: {e}")
        except OSError:
            pass  # unresolvable: the SDK reports it
    try:
        async with AsyncTavilyClient(api_key=key, api_base_url=base_url) as client:
            response = await client.search(query, search_depth=depth, max_results=limit, timeout=timeout)
    except Exception as e:  # every SDK/network failure becomes an error result, see _tavily_error
        return _tavily_error(e)
    raw = response.get("results", []) if isinstance(response, dict) else []
    results = [_tavily_result(item) for item in raw[:limit] if isinstance(item, dict)]
    text = _format(query, results, "the web (Tavily)")
    data: dict[str, object] = {"backend": "tavily", "results": results}
    if isinstance(response, dict):
        data |= {key: response[key] for key in TAVILY_EXTRAS if response.get(key) not in (None, [], "")}
    return ToolResult.ok(text, **data)


def _tavily_result(item: dict[str, Any]) -> dict[str, Any]:
    """One result as the model's list shows it (a snippet) and in full (its content and
    whatever else Tavily gave: the date, the raw page when asked for)."""
    content = str(item.get("content") or "")
    out: dict[str, Any] = {
        "title": str(item.get("title") or item.get("url") or ""),
        "url": str(item.get("url") or ""),
        "snippet": _clip(" ".join(content.split()), SNIPPET_CHARS),
        "content": content,
        "score": round(float(item.get("score") or 0.0), 4),
    }
    return out | {key: item[key] for key in RESULT_EXTRAS if item.get(key) not in (None, "")}


def _tavily_error(exc: Exception) -> ToolResult:
    """Map tavily-python's exceptions (and httpx's, which it lets through) to result codes."""
    import httpx
    from tavily import errors as tv

    detail = str(exc) or type(exc).__name__
    if isinstance(exc, tv.InvalidAPIKeyError):
        return error("AUTH_FAILED", f"Tavily rejected the API key (401): {detail}. Check TAVILY_API_KEY.")
    if isinstance(exc, tv.UsageLimitExceededError):
        return error("RATE_LIMITED", f"Tavily rate or usage limit reached (429): {detail}. Retry later.")
    if isinstance(exc, tv.ForbiddenError):
        return error("PERMISSION_DENIED", f"Tavily refused the request (403): {detail}")
    if isinstance(exc, tv.BadRequestError):
        return error("INVALID_PARAM", f"Tavily rejected the query (400): {detail}")
    if isinstance(exc, tv.TimeoutError):
        return error("TIMEOUT", f"Tavily search timed out: {detail}")
    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        return error("UNAVAILABLE", f"Tavily answered HTTP {status}; try again later")
    if isinstance(exc, httpx.HTTPError | OSError):
        return error("UNAVAILABLE", f"cannot reach Tavily ({type(exc).__name__}: {detail})")
    return error("INTERNAL", f"Tavily search failed: {type(exc).__name__}: {detail}")


# ---------------------------------------------------------------- corpus


async def _corpus_search(ctx: ToolContext, query: str, limit: int) -> ToolResult:
    corpus = find_corpus_dir(ctx)
    if corpus is None:
        return error(
            "UNAVAILABLE",
            "web search is offline (TAVILY_API_KEY is not set) and no corpus/ folder was found "
            "next to the workflow; set TAVILY_API_KEY or the tool config corpus_dir",
        )
    cache_dir = Path(str(ctx.config["cache_dir"])) if ctx.config.get("cache_dir") else None
    try:
        hits, count = await asyncio.to_thread(search_corpus, corpus, query, limit, cache_dir)
    except (OSError, sqlite3.Error) as e:
        return error("UNAVAILABLE", f"cannot index or search the corpus {corpus}: {e}")
    results = [
        {
            "title": h.title,
            "url": h.path.as_uri(),
            "snippet": h.snippet,
            "score": h.score,
        }
        for h in hits
    ]
    source = f"the local corpus ({count} documents; offline mode)"
    return ToolResult.ok(
        _format(query, results, source),
        backend="corpus",
        results=results,
        corpus=str(corpus),
        documents=count,
    )


# ---------------------------------------------------------------- output


def _format(query: str, results: Sequence[Mapping[str, object]], source: str) -> str:
    if not results:
        return f'No results for "{query}" in {source}. Try other or fewer words.'
    found = "\n".join(
        f"{i}. {item['title']}\n   {item['url']}\n   {item['snippet']}" for i, item in enumerate(results, 1)
    )
    return (
        f'{len(results)} results for "{query}" from {source}:\n'
        + frame(found, f"search results from {source}")
        + "\nOpen a result with visit_url(url) to read it in full."
    )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
