"""What the offline test provider (--dry-run) is told so its calls show real wiring: a file it
may write, a page it can visit without a network, a query from the inputs."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from flowrun.runtime.instance import AgentInstance


@cache
def corpus_page(roots: tuple[Path, ...]) -> str | None:
    """The first page of the first corpus on the search path, if any (looked up once)."""
    for root in roots:
        folder = root / "corpus"
        docs = sorted(folder.rglob("*.md")) if folder.is_dir() else []
        docs = [d for d in docs if d.stem.upper() not in ("README", "LICENSE")]
        if docs:
            return docs[0].resolve().as_uri()
    return None


def hints(
    inst: AgentInstance, output: str | None, inputs: dict[str, Any], roots: list[Path]
) -> dict[str, Any]:
    write = inst.tools.get("write_file")
    allowed = (write.config.get("write_paths") or write.config.get("paths") or []) if write else []
    target = output if (output and (not allowed or output in allowed)) else None
    found: dict[str, Any] = {"write_path": target or sample_path(allowed, inst.name)}
    if url := corpus_page(tuple(roots)):
        found["url"] = url
    question = next(iter(inputs.values()), None)
    if isinstance(question, str):
        found["query"] = question[:100]
    return found


def sample_path(globs: list[str], agent: str) -> str | None:
    """A file path a dry run may write under an agent's write globs."""
    for pattern in globs:
        if not any(c in pattern for c in "*?["):
            return pattern
    for pattern in globs:
        if pattern.endswith("/**"):
            return f"{pattern[:-3]}/dry-run/{agent}.md"
    return None
