"""What each agent instance was told, kept with the run: an `agent_prompt` event (the source
of truth: the system prompt as the model gets it, tools and their schemas) and a readable copy in
`prompts/<instance>.md` in the run folder (`flowrun show --prompts` prints them)."""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable
from functools import lru_cache

from flowrun.atomic_files import replace_in
from flowrun.events import AgentPromptEvent
from flowrun.providers.react import system_as_sent
from flowrun.runtime.loop.contracts import AgentInstance

PROMPTS_DIR = "prompts"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.@#=-]")


def prompt_event(inst: AgentInstance) -> AgentPromptEvent:
    tools: list[dict[str, object]] = [
        {"name": b.name, "description": b.spec.description, "parameters": b.spec.parameters}
        for b in inst.tools.values()
    ]
    specs = [b.spec for b in inst.tools.values()]
    system = system_as_sent(inst.system, specs, inst.output_schema, inst.model)
    return AgentPromptEvent(
        agent=inst.name, agent_id=inst.id, model=inst.model.name, system=system, tools=tools
    )


def prompt_file_name(agent_id: str) -> str:
    """`orchestrator/searcher@call_1` -> `orchestrator.searcher@call_1.md`."""
    return _UNSAFE.sub("_", agent_id.replace("/", "."))[:200] + ".md"


def prompt_markdown(event: AgentPromptEvent) -> str:
    lines = [
        f"# {event.agent_id}",
        "",
        f"agent: {event.agent} · model: {event.model}",
        "",
        "## System prompt",
        "",
    ]
    lines += [event.system, "", f"## Tools ({len(event.tools)})", ""]
    for tool in event.tools:
        lines += [f"### {tool['name']}", "", str(tool.get("description", "")).strip(), ""]
        schema = json.dumps(tool.get("parameters", {}), ensure_ascii=False)
        lines += ["```json", _pretty(schema), "```", ""]
    return "\n".join(lines)


@lru_cache(maxsize=512)
def _pretty(schema_json: str) -> str:
    """A schema indented for people. Every instance of an agent shows the same tool schemas:
    the indenting (the json module's slow path) is done once per schema."""
    return json.dumps(json.loads(schema_json), indent=2, ensure_ascii=False)


def write_prompt_file(run_folder: int, event: AgentPromptEvent, redact: Callable[[str], str]) -> None:
    """prompts/<instance>.md, by name in the run folder open as `run_folder` (never through a
    symlink a tool left: prompts/ is made here, and is read-only to the tools' processes)."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(PROMPTS_DIR, 0o777, dir_fd=run_folder)
    folder = os.open(
        PROMPTS_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=run_folder
    )
    try:
        replace_in(folder, prompt_file_name(event.agent_id), redact(prompt_markdown(event)))
    finally:
        os.close(folder)
