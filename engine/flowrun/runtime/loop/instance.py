"""A running agent: its identity, settings, tools and conversation, and how its run ended."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from flowrun.manifest.specs import AgentManifest
from flowrun.providers.base import ModelConfig, Provider
from flowrun.runtime.loop.bound_tool import BoundTool
from flowrun.runtime.models.subtrees import Subtree
from flowrun.types import Message

OutcomeStatus = Literal["completed", "finished", "stopped", "max_steps"]


@dataclass(slots=True)
class Outcome:
    status: OutcomeStatus
    text: str
    steps: int
    data: Any = None  # the parsed final answer of an agent with an `output_schema`
    agent_id: str = ""  # the instance that produced it (steps)
    output: str | None = None  # the file a step wrote the answer to, relative to the run folder

    def answer(self) -> str:
        """The final answer as a file holds it: the JSON of a structured answer, else the text."""
        if self.data is not None:
            return json.dumps(self.data, indent=2, ensure_ascii=False) + "\n"
        return self.text


@dataclass
class AgentInstance:
    """A persistent sub-agent keeps one instance (and so its messages) across calls."""

    id: str  # deterministic path, e.g. "orchestrator/searcher@call_1_0"
    name: str
    spec: AgentManifest  # the effective manifest (extends resolved)
    model: ModelConfig
    provider: Provider
    tools: dict[str, BoundTool]
    system: str
    depth: int
    cwd: Path
    messages: list[Message] = field(default_factory=list)
    model_calls: int = 0  # over the instance's life: the index of its next model call
    written: set[str] = field(default_factory=set)  # workspace files its write tools touched
    calls_made: dict[str, int] = field(default_factory=dict)  # sub-agent name -> calls
    side_calls: dict[str, int] = field(default_factory=dict)  # purpose -> tool-less calls (compaction)
    task: str = ""
    output_schema: dict[str, Any] | None = None  # the spec's `output_schema`, resolved
    tree: Subtree | None = None  # its usage with everything it calls, and any per-call budget
    last_text: str = ""  # the latest non-empty text the model wrote
    prompt_digests: tuple[str, str] | None = None  # (system, tools) digests, computed once
    write_within: Path | None = None  # writes confined here (called with `output_dir`)

    def stop_pattern(self) -> re.Pattern[str] | None:
        pattern = self.spec.stop.pattern
        return re.compile(pattern) if pattern else None
