"""An agent's `memory:` (files it keeps across runs) as manifests declare it, and where each
memory's folder is. The folder of a memory is decided here only, so a run, `flowrun memory`,
`validate` and the HTTP API always find the same one:

| scope | flowrun's folders (`folders: flowrun`) | Claude Code's (`folders: claude-code`) |
|---|---|---|
| `run` | `RUN/memory/NAME/` | the same |
| `project` | `WF/.flowrun/memory/NAME/` | `WF/.claude/agent-memory/NAME/` |
| `local` | `WF/.flowrun/memory-local/NAME/` | `WF/.claude/agent-memory-local/NAME/` |
| `user` | `$FLOWRUN_MEMORY_DIR/NAME/` (1) | `~/.claude/agent-memory/NAME/` |

(1) else `$XDG_DATA_HOME/flowrun/memory/NAME/`, else `~/.local/share/flowrun/memory/NAME/`.
WF is the workflow's folder, RUN the run folder, NAME the memory's `name` (default: the agent's).
A dry run works on a copy in `RUN/memory/NAME/`; a run given a memory folder (`memory_dir`, as
an eval's `memory: fresh` gives it) keeps every memory under `DIR/SCOPE/NAME/`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import Field

from flowrun.manifest.spec_base import Name, Strict

MemoryScope = Literal["run", "project", "local", "user"]
SCOPES: tuple[MemoryScope, ...] = ("run", "project", "local", "user")
INDEX = "MEMORY.md"  # the index file: what a prompt gets (its first lines)
INDEX_LINES = 200  # as Claude Code: the first 200 lines or 25 KB of MEMORY.md
INDEX_BYTES = 25_000


class MemorySpec(Strict):
    """`memory:` of an agent: files it keeps across runs, read and changed with the `memory` tool
    (offered without being listed in `tools:`); MEMORY.md's first lines are put in its prompt."""

    scope: MemoryScope = Field(
        default="project",
        description="run (this run only), project (the workflow's folder), local (the workflow's folder, "
        "kept out of version control) or user (the user's data folder, every project).",
    )
    name: Name | None = Field(
        default=None,
        description="The memory's name (default: the agent's); agents that name one memory share it.",
    )
    folders: Literal["flowrun", "claude-code"] = Field(
        default="flowrun",
        description="Whose folders: flowrun's (.flowrun/memory/NAME/) or Claude Code's "
        "(.claude/agent-memory/NAME/, ~/.claude/agent-memory/NAME/): a Claude Code project and flowrun "
        "then share one memory. A Claude Code agent file's `memory:` uses Claude Code's.",
    )
    index: bool = Field(default=True, description="Put the first lines of MEMORY.md in the agent's prompt.")
    index_lines: int = Field(
        default=INDEX_LINES,
        ge=1,
        le=10_000,
        description="At most this many lines of MEMORY.md go in the prompt.",
    )
    index_bytes: int = Field(
        default=INDEX_BYTES,
        ge=100,
        le=1_000_000,
        description="At most this many bytes of MEMORY.md go in the prompt.",
    )
    writes: Literal["agent", "reflect", "none"] = Field(
        default="agent",
        description="Who changes the memory: the agent with the memory tool (agent), only the reflection "
        "at the end of the run (reflect; the agent may view and search), or nobody (none: read-only).",
    )
    reflect: bool | Name = Field(
        default=False,
        description="At the end of the run, a reflection reads the run's conversation and updates the "
        "memory with what would have helped: true (the agent itself) or the name of an agent that does it.",
    )
    reflect_max_steps: int | None = Field(
        default=None,
        ge=1,
        le=1000,
        description="Model calls the reflection may make (default: the reflect agent's max_steps; 10 for "
        "`reflect: true`).",
    )
    git: bool = Field(
        default=False,
        description="Commit each change in the memory folder (a git repository) with the run id.",
    )
    max_file_bytes: int = Field(
        default=100_000, ge=100, le=10_000_000, description="A memory file may hold at most this many bytes."
    )
    max_bytes: int = Field(
        default=1_000_000,
        ge=100,
        le=100_000_000,
        description="All the memory's files together at most this many bytes.",
    )

    @property
    def reflects(self) -> bool:
        return bool(self.reflect) or self.writes == "reflect"

    def owner(self, agent: str) -> str:
        """The memory's name: its own, else the agent's."""
        return self.name or agent


MemorySetting = MemorySpec | MemoryScope


def memory_spec(value: MemorySetting | None) -> MemorySpec | None:
    """A `memory:` setting as a spec (a bare scope is {scope: ...})."""
    if value is None or isinstance(value, MemorySpec):
        return value
    return MemorySpec(scope=value)


def memory_folder(
    spec: MemorySpec,
    agent: str,
    workflow_dir: Path,
    run_dir: Path | None = None,
    memory_dir: Path | None = None,
) -> Path | None:
    """The folder of the memory `agent` declares (absolute, not resolved); None for a `run`
    memory without a run folder."""
    name = spec.owner(agent)
    if memory_dir is not None and spec.scope != "run":
        return memory_dir / spec.scope / name
    if spec.scope == "run":
        return run_dir / "memory" / name if run_dir is not None else None
    claude = spec.folders == "claude-code"
    if spec.scope == "user":
        return (Path.home() / ".claude" / "agent-memory" / name) if claude else user_memory_root() / name
    if claude:
        return (
            workflow_dir
            / ".claude"
            / ("agent-memory" if spec.scope == "project" else "agent-memory-local")
            / name
        )
    return workflow_dir / ".flowrun" / ("memory" if spec.scope == "project" else "memory-local") / name


def user_memory_root() -> Path:
    """Where flowrun's `user` memories live: $FLOWRUN_MEMORY_DIR, else $XDG_DATA_HOME/flowrun/memory
    or ~/.local/share/flowrun/memory."""
    given = os.environ.get("FLOWRUN_MEMORY_DIR")
    if given:
        return Path(given).expanduser()
    data = os.environ.get("XDG_DATA_HOME")
    return (Path(data) if data else Path.home() / ".local" / "share") / "flowrun" / "memory"
