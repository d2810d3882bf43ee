"""A run's hooks: which apply at a moment, running them (all at once, a command given once
however often it is configured), recording each as a `hook` event, and their verdict.

Scopes: the run's (a `.claude/settings.json` and `settings.local.json` next to the workflow,
and the workflow's `hooks:`) apply to every agent; an agent's own (its manifest's `hooks:`, or a
Claude Code agent file's front matter) only to that agent. A run's Stop hooks fire for the
workflow's own agents and its SubagentStop hooks for agents called as tools; an agent's own Stop
hooks fire whenever it is about to answer (Claude Code turns a subagent's Stop into
SubagentStop). Hooks from Claude Code files see Claude Code's tool names and input shapes
(claude_tools.py); those of flowrun manifests see flowrun's.

A recorded outcome (same moment, same hook, same command) is reused on resume and replay,
never run again, as a recorded tool result is."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from flowrun.events import Event, HookEvent
from flowrun.manifest.hooks import matches_all
from flowrun.manifest.project import Project
from flowrun.manifest.specs import HookHandler, HookMatcher, HooksSpec, WorkflowManifest
from flowrun.regexes import compile_regex
from flowrun.runtime.durable.ledger import Ledger
from flowrun.runtime.hooks.answers import HookAnswer, Verdict, interpret
from flowrun.runtime.hooks.execution import run_handler
from flowrun.runtime.loop.contracts import AgentInstance
from flowrun.tools.base import ToolContext

Dialect = Literal["claude", "flowrun"]
SIMPLE_MATCHER = re.compile(r"^[A-Za-z0-9_|]+$")  # names, exactly (Claude Code: `Write`, `Edit|Write`)
# what a moment's hooks are given: (the hook's dialect) -> the event's JSON object
Payload = Callable[[Dialect], dict[str, object]]
# a hook's updatedInput, in its dialect, as flowrun arguments
InputBack = Callable[[Dialect, dict[str, object]], dict[str, object]]


@dataclass(frozen=True, slots=True)
class HookSet:
    scope: str  # settings | workflow | agent/NAME
    spec: HooksSpec
    dialect: Dialect
    root: Path  # where its python hooks are imported from


@dataclass(frozen=True, slots=True)
class Selected:
    hook_id: str
    dialect: Dialect
    matcher: str | None
    handler: HookHandler
    root: Path

    @property
    def label(self) -> str:
        return self.handler.command or f"python {self.handler.python}"


def matches(matcher: str | None, names: tuple[str, ...]) -> bool:
    if matches_all(matcher):
        return True
    assert matcher is not None
    if SIMPLE_MATCHER.match(matcher):
        return any(name in matcher.split("|") for name in names)
    try:
        pattern = compile_regex(matcher)
    except re.error:
        return False  # validate reports it
    return any(pattern.search(name) for name in names)


class HookBook:
    def __init__(
        self,
        project: Project,
        workflow: WorkflowManifest,
        workflow_dir: Path,
        emit: Callable[[Event], None],
        ledger: Ledger | None,
        context: Callable[[AgentInstance | None], ToolContext],
    ) -> None:
        self.run_sets = [
            HookSet("settings", loaded.spec, "claude", workflow_dir) for loaded in project.settings_hooks
        ]
        if workflow.hooks is not None:
            self.run_sets.append(HookSet("workflow", workflow.hooks, "flowrun", workflow_dir))
        self.agent_sets: dict[str, HookSet] = {}
        for name, loaded in project.agents.items():
            if loaded.spec.hooks is not None and not loaded.spec.hooks.empty:
                dialect: Dialect = "claude" if loaded.source.path.suffix == ".md" else "flowrun"
                self.agent_sets[name] = HookSet(f"agent/{name}", loaded.spec.hooks, dialect, loaded.root)
        self.project_dir = workflow_dir
        self.emit = emit
        self.ledger = ledger
        self.context = context

    @property
    def active(self) -> bool:
        return bool(self.agent_sets) or any(not s.spec.empty for s in self.run_sets)

    def select(
        self, event: str, inst: AgentInstance | None, names: tuple[str, ...] = (), run_scope: bool = True
    ) -> list[Selected]:
        """The hooks of `event` for `inst` (None: the run itself), those whose matcher takes
        one of `names` (no names: every group), each command once."""
        sets = list(self.run_sets) if run_scope else []
        own = self.agent_sets.get(inst.name) if inst is not None else None
        if own is not None:
            sets.append(own)
        found: dict[str, Selected] = {}
        for hook_set in sets:
            for g, group in enumerate(hook_set.spec.matchers(event)):
                if names and not matches(group.matcher, names):
                    continue
                self._add(found, hook_set, event, g, group)
        return list(found.values())

    def _add(
        self, found: dict[str, Selected], hook_set: HookSet, event: str, g: int, group: HookMatcher
    ) -> None:
        for i, handler in enumerate(group.hooks):
            key = handler.command or f"python:{handler.python}"
            hook_id = f"{hook_set.scope}:{event}:{g}:{i}"
            found.setdefault(key, Selected(hook_id, hook_set.dialect, group.matcher, handler, hook_set.root))

    async def fire(
        self,
        event: str,
        inst: AgentInstance | None,
        moment: str,
        payload: Payload,
        selected: list[Selected],
        input_back: InputBack | None = None,
    ) -> Verdict:
        """Run `selected` at one moment (`moment`: its id within the agent) and combine them."""
        verdict = Verdict()
        if not selected:
            return verdict
        answers = await asyncio.gather(*(self._answer(event, inst, moment, payload, s) for s in selected))
        for chosen, answer in zip(selected, answers, strict=True):
            one = interpret(event, answer, chosen.label, chosen.handler.on_failure)
            if one.updated_input is not None and input_back is not None:
                one.updated_input = input_back(chosen.dialect, one.updated_input)
            verdict.add(one)
        return verdict

    async def _answer(
        self, event: str, inst: AgentInstance | None, moment: str, payload: Payload, chosen: Selected
    ) -> HookAnswer:
        agent_id = inst.id if inst is not None else ""
        recorded = self.ledger.hook(agent_id, moment, chosen.hook_id) if self.ledger is not None else None
        started = time.perf_counter()
        replayed = None
        if recorded is not None and recorded.command == chosen.label:
            answer = HookAnswer(recorded.exit_code, recorded.stdout, recorded.stderr, recorded.failure)
            replayed = True
        else:
            ctx = self.context(inst)
            answer = await run_handler(chosen.handler, payload(chosen.dialect), ctx, self.project_dir)
        one = interpret(event, answer, chosen.label, chosen.handler.on_failure)
        self.emit(
            HookEvent(
                event=event,
                hook=chosen.hook_id,
                agent=inst.name if inst is not None else "",
                agent_id=agent_id,
                call_id=moment,
                matcher=chosen.matcher,
                command=chosen.label,
                exit_code=answer.exit_code,
                stdout=answer.stdout,
                stderr=answer.stderr,
                failure=answer.failure,
                decision=one.decision,
                reason=one.reason or None,
                duration_ms=round((time.perf_counter() - started) * 1000, 2),
                replayed=replayed,
            )
        )
        return answer
