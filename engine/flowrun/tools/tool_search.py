"""`tool_search`: how an agent finds deferred tools (an MCP server's, when it has too many to
offer every schema). The model gives a query (keywords) or exact names; the answer lists the
best matches with their descriptions, and those tools are loaded: their schemas are offered
from the agent's next model request on. The ranking is BM25 over each tool's name (split at
`_`, `-`, `.` and camelCase), description (the server's words, without the block that frames
them) and parameter names: deterministic, so a replay finds the same tools."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping

from flowrun.foreign_text import frame, inner
from flowrun.types import ToolResult, ToolSpec

NAME = "tool_search"
DEFAULT_LIMIT = 5
MAX_LIMIT = 20
LOADED_KEY = "tools_loaded"  # a result's data key: the names it loaded (runtime/loop/deferred.py)
K1, B = 1.2, 0.75  # BM25's usual constants
NAME_WEIGHT = 3  # a word of the tool's name counts as this many of its description
DESCRIPTION_CHARS = 300  # of each match's description, in the answer

PARAMETERS: dict[str, object] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Keywords that describe what the tool should do."},
        "names": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Exact tool names to load (from an earlier search or the task).",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "description": f"How many matches to load (default {DEFAULT_LIMIT}).",
        },
    },
}

_WORD = re.compile(r"[A-Za-z][a-z]*|[A-Z]+(?![a-z])|\d+")


def description(count: int, servers: list[str]) -> str:
    """What the model reads about tool_search: how many tools hide behind it, and where from."""
    where = ", ".join(servers)
    return (
        f"Search {count} more tools (from {where}) that are not offered yet, by keywords or exact "
        "names. The tools found are loaded: you can call them from your next step on."
    )


def words(text: str) -> list[str]:
    """Lower-case words: `getUserById` and `get_user_by_id` give the same four."""
    return [w.lower() for w in _WORD.findall(text)]


def _document(spec: ToolSpec) -> list[str]:
    props = spec.parameters.get("properties")
    params = " ".join(props) if isinstance(props, dict) else ""
    return words(spec.name) * NAME_WEIGHT + words(inner(spec.description)) + words(params)


def rank(query: str, tools: Mapping[str, ToolSpec]) -> list[tuple[str, float]]:
    """The tools that share a word with the query, best first (ties by name)."""
    terms = set(words(query))
    if not terms or not tools:
        return []
    docs = {name: Counter(_document(spec)) for name, spec in tools.items()}
    lengths = {name: sum(doc.values()) for name, doc in docs.items()}
    average = sum(lengths.values()) / len(docs) or 1.0
    holding = {t: sum(1 for doc in docs.values() if t in doc) for t in terms}
    scores: list[tuple[str, float]] = []
    for name, doc in docs.items():
        score = 0.0
        for term in terms:
            tf = doc.get(term, 0)
            if not tf:
                continue
            idf = math.log(1 + (len(docs) - holding[term] + 0.5) / (holding[term] + 0.5))
            score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * lengths[name] / average))
        if score > 0:
            scores.append((name, round(score, 6)))
    return sorted(scores, key=lambda item: (-item[1], item[0]))


def search(tools: Mapping[str, ToolSpec], loaded: set[str], arguments: Mapping[str, object]) -> ToolResult:
    """Answer one tool_search call over the deferred `tools` (`loaded`: those already offered);
    the result's data names the tools it loads."""
    query = arguments.get("query")
    query = query if isinstance(query, str) else ""
    wanted = arguments.get("names")
    names = [n for n in wanted if isinstance(n, str)] if isinstance(wanted, list) else []
    limit = arguments.get("limit")
    limit = limit if isinstance(limit, int) and limit > 0 else DEFAULT_LIMIT
    if not query.strip() and not names:
        return ToolResult.fail("INVALID_PARAM", "give `query` (keywords) or `names` (exact tool names)")
    unknown = [n for n in names if n not in tools]
    found = [n for n in names if n in tools]
    found += [n for n, _ in rank(query, tools) if n not in found][: max(0, min(limit, MAX_LIMIT))]
    fresh = [n for n in found if n not in loaded]
    data: dict[str, object] = {"query": query, "matches": found, LOADED_KEY: fresh}
    if not found:
        text = f"no tool matches {query!r}" if query.strip() else "none of these names is a tool"
        if unknown:
            text += f" (unknown: {', '.join(unknown)})"
        return ToolResult.ok(text + ". Try other keywords.", **data)
    lines = []
    for name in found:
        text = " ".join(inner(tools[name].description).split())
        cut = text if len(text) <= DESCRIPTION_CHARS else text[:DESCRIPTION_CHARS] + "…"
        lines.append(f"- {name}: {cut}")
    # the descriptions are the servers' words: framed as data, as each tool's own is
    text = f"Loaded {len(found)} tools: call them from your next step on.\n"
    text += frame("\n".join(lines), "MCP servers, the descriptions of their tools")
    if unknown:
        text += f"\nNot tools: {', '.join(unknown)}."
    return ToolResult.ok(text, **data)
