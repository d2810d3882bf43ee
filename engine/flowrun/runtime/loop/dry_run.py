"""What the offline test provider (--dry-run) is told so its calls show real wiring and succeed:
a file each tool may write, a scratch folder, a page it can visit without a network, a query
from the inputs, each tool manifest's `dry_run` arguments and `dry_run_order`. Which file a tool
gets follows what it declares (`files:` read, write or change), never its name."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from pathlib import Path

from flowrun.manifest.project import Project
from flowrun.paths import builtin_corpus
from flowrun.runtime.durable.run_folder import PROTECTED
from flowrun.runtime.loop.contracts import AgentInstance, BoundTool
from flowrun.types import FileUse

TEXT_SUFFIXES = frozenset({".md", ".txt", ".json", ".jsonl", ".yaml", ".yml", ".py", ".csv", ".rst", ".toml"})
SKIPPED = frozenset({name.rstrip("/") for name in PROTECTED} | {"runs", "node_modules", "__pycache__"})
MAX_DEPTH = 3  # folders below the agent's folder looked into for a file to read
MAX_LOOKED = 500  # entries looked at, at most


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
    inst: AgentInstance,
    output: str | None,
    inputs: Mapping[str, object],
    project: Project,
    run_dir: Path | None = None,
) -> dict[str, object]:
    allowed = _write_globs(_first_with(inst, "write"))
    target = output if (output and (not allowed or output in allowed)) else None
    path = target or sample_path(allowed, inst.name)
    found: dict[str, object] = {"write_path": path, "text": f"dry run by {inst.name}: wiring checked"}
    in_run = run_dir is None or inst.cwd.resolve().is_relative_to(run_dir.resolve())
    found["paths"] = _tool_paths(inst, path, output, in_run)
    maker = _first_with(inst, "change")
    scratch = sample_dir(_write_globs(maker), inst.name)
    if scratch is not None and maker is not None:
        found["dir"] = scratch
    found["dry_run"] = {
        name: dict(loaded.spec.dry_run)
        for name in inst.tools
        if (loaded := project.tools.get(name)) is not None and loaded.spec.dry_run
    }
    found["order"] = {
        name: loaded.spec.dry_run_order
        for name in inst.tools
        if (loaded := project.tools.get(name)) is not None and loaded.spec.dry_run_order
    }
    if url := corpus_page(tuple(project.roots)):
        found["url"] = url
    question = next(iter(inputs.values()), None)
    if isinstance(question, str):
        found["query"] = question[:100]
    return found


def _first_with(inst: AgentInstance, files: FileUse) -> BoundTool | None:
    """The agent's first tool (in its tools order) that declares `files: <files>`."""
    return next((b for b in inst.tools.values() if b.files == files), None)


def _tool_paths(inst: AgentInstance, path: str | None, output: str | None, in_run: bool) -> dict[str, object]:
    """The file each tool is called on. The agent's own file (the one its first `files: write`
    tool writes) when it exists or the tool writes or changes files; otherwise, so that an agent
    without a writer (a reviewer) reads something, a file that exists: any text file of the
    agent's folder for a `files: read` tool, and for another tool too in the run folder; outside
    it (--workdir), where a tool of unknown effect must not touch the user's files, a sample file
    the dry run makes."""
    found: dict[str, object] = {}
    existing: list[str | None] = []  # looked up once, when first needed
    for name, bound in inst.tools.items():
        own = tool_path(bound, path, inst.name)
        if bound.files in ("write", "change") or (own is not None and (inst.cwd / own).exists()):
            found[name] = own
            continue
        if bound.files == "read" or in_run:
            if not existing:
                existing.append(existing_file(inst.cwd, [path, output]) or _sample_file(inst))
            other = existing[0]
        else:
            other = _sample_file(inst)
        found[name] = other if other is not None and tool_path(bound, other, "") == other else own
    return found


def existing_file(cwd: Path, preferred: list[str | None]) -> str | None:
    """A text file under the agent's folder, relative to it: the first of `preferred` that
    exists, else the first found breadth first (engine files, hidden and run folders skipped)."""
    for rel in preferred:
        if rel and (cwd / rel).is_file():
            return rel
    queue, looked = [cwd], 0
    while queue:
        folder = queue.pop(0)
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        usable = [p for p in entries if not p.name.startswith(".") and p.name not in SKIPPED]
        looked += len(entries)
        for entry in usable:
            if entry.suffix.lower() in TEXT_SUFFIXES and entry.is_file():
                return entry.relative_to(cwd).as_posix()
        if looked > MAX_LOOKED:
            return None
        queue += [p for p in usable if p.is_dir() and len(p.relative_to(cwd).parts) < MAX_DEPTH]
    return None


def _sample_file(inst: AgentInstance) -> str | None:
    """A file for reading tools in a run folder that holds none yet (no seeds, nothing written):
    `dry-run/AGENT-sample.md`, made by the dry run itself."""
    rel = f"dry-run/{inst.name}-sample.md"
    try:
        (inst.cwd / "dry-run").mkdir(exist_ok=True)
        (inst.cwd / rel).write_text(f"dry run: a file for {inst.name} to read\n", encoding="utf-8")
    except OSError:
        return None
    return rel


def _write_globs(bound: BoundTool | None) -> list[str]:
    if bound is None:
        return []
    return [str(g) for g in (bound.config.get("write_paths") or bound.config.get("paths") or [])]


def tool_path(bound: BoundTool, default: str | None, agent: str) -> str | None:
    """The file a tool works on: the agent's own file (its writer's), unless the tool's own
    path policy rules it out (then a file its policy allows)."""
    globs = _write_globs(bound)
    if not globs or default is None:
        return default
    from flowrun.tools.globs import glob_matches

    parts = default.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(len(parts), 0, -1)]
    if any(glob_matches(prefix, g) for g in globs for prefix in prefixes):
        return default
    return sample_path(globs, agent)


def sample_path(globs: list[str], agent: str) -> str | None:
    """A file path a dry run may write under an agent's write globs: a plain file name as it
    is; in a plain folder name (no dot in its last part: `design`, `Notebook`) a file of its
    own, so the dry run never makes a file where the real run needs the folder."""
    for pattern in globs:
        if not any(c in pattern for c in "*?["):
            last = pattern.rstrip("/").rsplit("/", 1)[-1]
            return pattern if "." in last else f"{pattern.rstrip('/')}/dry-run-{agent}.md"
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
