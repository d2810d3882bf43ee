"""What the offline test provider (--dry-run) is told so its calls show real wiring and succeed:
a file each tool may write, a scratch folder, a page it can visit without a network, a query
from the inputs, and each tool manifest's `dry_run` arguments."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from flowrun.manifest.project import Project
from flowrun.paths import builtin_corpus
from flowrun.runtime.bound_tool import BoundTool
from flowrun.runtime.instance import AgentInstance


@cache
def corpus_page(roots: tuple[Path, ...]) -> str | None:
    """The first page of the first corpus on the search path (then the shipped one), if any."""
    folders = [root / "corpus" for root in roots]
    if (shipped := builtin_corpus()) is not None:
        folders.append(shipped)
    for folder in folders:
        docs = sorted(folder.rglob("*.md")) if folder.is_dir() else []
        docs = [d for d in docs if d.stem.upper() not in ("README", "LICENSE")]
        if docs:
            return docs[0].resolve().as_uri()
    return None


def hints(
    inst: AgentInstance, output: str | None, inputs: dict[str, Any], project: Project
) -> dict[str, Any]:
    write = inst.tools.get("write_file")
    allowed = _write_globs(write)
    target = output if (output and (not allowed or output in allowed)) else None
    path = target or sample_path(allowed, inst.name)
    found: dict[str, Any] = {"write_path": path, "text": f"dry run by {inst.name}: wiring checked"}
    found["paths"] = {name: tool_path(bound, path, inst.name) for name, bound in inst.tools.items()}
    scratch = sample_dir(_write_globs(inst.tools.get("create_directory")), inst.name)
    if scratch is not None and "create_directory" in inst.tools:
        found["dir"] = scratch
    found["dry_run"] = {
        name: dict(loaded.spec.dry_run)
        for name in inst.tools
        if (loaded := project.tools.get(name)) is not None and loaded.spec.dry_run
    }
    if url := corpus_page(tuple(project.roots)):
        found["url"] = url
    question = next(iter(inputs.values()), None)
    if isinstance(question, str):
        found["query"] = question[:100]
    return found


def _write_globs(bound: BoundTool | None) -> list[str]:
    if bound is None:
        return []
    return [str(g) for g in (bound.config.get("write_paths") or bound.config.get("paths") or [])]


def tool_path(bound: BoundTool, default: str | None, agent: str) -> str | None:
    """The file a tool works on: the one write_file writes, unless the tool's own path policy
    rules it out (then a file its policy allows)."""
    globs = _write_globs(bound)
    if not globs or default is None:
        return default
    from flowrun.tools.paths import glob_matches

    parts = default.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(len(parts), 0, -1)]
    if any(glob_matches(prefix, g) for g in globs for prefix in prefixes):
        return default
    return sample_path(globs, agent)


def sample_path(globs: list[str], agent: str) -> str | None:
    """A file path a dry run may write under an agent's write globs."""
    for pattern in globs:
        if not any(c in pattern for c in "*?["):
            return pattern
    for pattern in globs:
        if pattern.endswith("/**"):
            return f"{pattern[:-3]}/dry-run/{agent}.md"
    return None


def sample_dir(globs: list[str], agent: str) -> str | None:
    """A folder a dry run may create (and then delete) under the write globs: below a `X/**`
    pattern or a plain folder name, else at the top when nothing restricts writes."""
    if not globs:
        return f"dry-run/{agent}-folder"
    for pattern in globs:
        if pattern.endswith("/**") and not any(c in pattern[:-3] for c in "*?["):
            return f"{pattern[:-3]}/dry-run-{agent}"
    for pattern in globs:
        if not any(c in pattern for c in "*?[") and "." not in pattern.rsplit("/", 1)[-1]:
            return f"{pattern}/dry-run-{agent}"
    return None
