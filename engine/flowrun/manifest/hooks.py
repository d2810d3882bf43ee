"""Hooks as manifests and Claude Code files declare them: the rules across their keys (each
problem at its line), and the `hooks` of a `.claude/settings.json` (and `settings.local.json`)
next to the workflow, read as Claude Code reads them. What a hook does at run time is in
runtime/hooks/."""

from __future__ import annotations

import re
from pathlib import Path

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.specs import HOOK_EVENTS, HooksSpec
from flowrun.manifest.yaml_source import PathKey, Source, load_source
from flowrun.paths import display_path, is_file
from flowrun.regexes import compile_regex

SETTINGS_FILES = (".claude/settings.json", ".claude/settings.local.json")
# Claude Code's events with no moment in a flowrun run: a Claude Code file naming one is read
# with a warning and the hooks skipped, so public agent files run unchanged (a typo of one of
# flowrun's events stays an error, with a did-you-mean)
CLAUDE_ONLY_EVENTS = (
    "PermissionRequest",
    "PermissionDenied",
    "PostToolUseFailure",
    "PostToolBatch",
    "PreCompact",
    "PostCompact",
    "SubagentStart",
    "StopFailure",
    "UserPromptExpansion",
    "Elicitation",
    "ElicitationResult",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "Setup",
    "InstructionsLoaded",
    "ConfigChange",
    "CwdChanged",
    "FileChanged",
    "WorktreeCreate",
    "WorktreeRemove",
)
# Claude Code's hook types flowrun does not run (an LLM prompt, a sub-agent, an HTTP POST)
CLAUDE_ONLY_TYPES = ("prompt", "agent", "http")
# keys of a Claude Code command hook that flowrun reads past (it runs every hook and waits)
CLAUDE_ONLY_HANDLER_KEYS = ("async", "asyncRewake", "once", "shell", "if")
# events whose hooks Claude Code runs whatever their `matcher` says
HOOKS_PAGE = "see how-to/hooks.md for the events and hook types flowrun runs"
UNMATCHED = ("UserPromptSubmit", "Stop", "SubagentStop", "SessionEnd")


def matches_all(matcher: str | None) -> bool:
    return matcher is None or matcher.strip() in ("", "*")


def hook_problems(src: Source, parts: PathKey, raw: object) -> list[Diagnostic]:
    """Rules a schema cannot say, for a `hooks:` mapping found at `parts` in `src`: a matcher
    that is not a regex, a hook with both or neither of `command` and `python`, a matcher an
    event ignores (a warning)."""
    if not isinstance(raw, dict):
        return []
    out: list[Diagnostic] = []
    for event, groups in raw.items():
        if event not in HOOK_EVENTS or not isinstance(groups, list):
            continue  # the schema names the unknown event (with a did-you-mean)
        for i, group in enumerate(groups):
            if isinstance(group, dict):
                out += _group_problems(src, (*parts, event, i), str(event), group)
    return out


def _group_problems(src: Source, where: PathKey, event: str, group: dict[str, object]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    matcher = group.get("matcher")
    if isinstance(matcher, str) and not matches_all(matcher):
        if event in UNMATCHED:
            message = f"{event} hooks run whatever the matcher says: `matcher` is ignored here"
            out.append(
                src.diag((*where, "matcher"), message, "remove `matcher`", "ignored-key", severity="warning")
            )
        else:
            try:
                compile_regex(matcher)
            except re.error as e:
                message = f"matcher {matcher!r} is not a regular expression: {e}"
                hint = "e.g. Bash, Edit|Write, mcp__github__.*; empty or * for all"
                out.append(src.diag((*where, "matcher"), message, hint, "bad-matcher"))
    hooks = group.get("hooks")
    for j, hook in enumerate(hooks if isinstance(hooks, list) else []):
        if isinstance(hook, dict):
            out += _handler_problems(src, (*where, "hooks", j), hook)
    return out


def _handler_problems(src: Source, where: PathKey, hook: dict[str, object]) -> list[Diagnostic]:
    has_command, has_python = "command" in hook, "python" in hook
    kind = hook.get("type")
    if src.lost(where, "command", "python", "type"):
        return []
    if has_command == has_python:
        message = "a hook needs exactly one of `command` (a shell command) or `python` (module:function)"
        return [
            src.diag(where, message, 'e.g. {type: command, command: ".claude/hooks/check.sh"}', "invalid")
        ]
    wanted = "command" if has_command else "python"
    if kind is not None and kind != wanted:
        hint = (
            "Claude Code's prompt, agent and http hooks are not run by flowrun"
            if kind
            not in (
                "command",
                "python",
            )
            else f"write type: {wanted}"
        )
        message = f"a hook of type {kind!r} with `{wanted}`"
        return [src.diag((*where, "type"), message, hint, "invalid")]
    return []


def claude_code_hooks(src: Source, parts: PathKey, raw: object) -> tuple[object, list[Diagnostic]]:
    """A Claude Code file's `hooks` (settings.json, an agent's front matter) as flowrun runs
    them: the events, hook types and keys flowrun has no moment or runner for are dropped, each
    with a warning at its line; what is left is checked like a manifest's `hooks:`."""
    if not isinstance(raw, dict):
        return raw, []
    kept: dict[object, object] = {}
    warnings: list[Diagnostic] = []
    for event, groups in raw.items():
        if event in CLAUDE_ONLY_EVENTS:
            message = f"Claude Code's {event} hooks have no moment in a flowrun run: skipped"
            warnings.append(
                src.diag(
                    (*parts, str(event)), message, HOOKS_PAGE, "ignored-key", key=True, severity="warning"
                )
            )
            continue
        if event not in HOOK_EVENTS or not isinstance(groups, list):
            kept[event] = groups
            continue
        left = []
        for i, group in enumerate(groups):
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                left.append(group)
                continue
            handlers = []
            for j, hook in enumerate(group["hooks"]):
                where = (*parts, str(event), i, "hooks", j)
                handler, said = _claude_handler(src, where, hook)
                warnings += said
                if handler is not None:
                    handlers.append(handler)
            if handlers:
                left.append({**group, "hooks": handlers})
        if left:
            kept[event] = left
    return kept, warnings


def _claude_handler(src: Source, where: PathKey, hook: object) -> tuple[object | None, list[Diagnostic]]:
    if not isinstance(hook, dict):
        return hook, []
    kind = hook.get("type")
    if kind in CLAUDE_ONLY_TYPES:
        message = f"Claude Code's {kind} hooks are not run by flowrun: skipped"
        return None, [src.diag((*where, "type"), message, HOOKS_PAGE, "ignored-key", severity="warning")]
    extra = [k for k in CLAUDE_ONLY_HANDLER_KEYS if k in hook]
    said = [
        src.diag(
            (*where, k),
            f"`{k}` is Claude Code's: flowrun runs the hook and waits for it",
            HOOKS_PAGE,
            "ignored-key",
            key=True,
            severity="warning",
        )
        for k in extra
    ]
    return {k: v for k, v in hook.items() if k not in extra}, said


def load_settings_hooks(root: Path) -> tuple[list[tuple[HooksSpec, Source]], list[Diagnostic]]:
    """The `hooks` of root's `.claude/settings.json` and `settings.local.json` (each with its
    source, for the folder its commands are relative to), and their problems. Other settings
    are Claude Code's own and ignored; `disableAllHooks: true` in either turns hooks off."""
    found: list[tuple[HooksSpec, Source]] = []
    diags: list[Diagnostic] = []
    for name in SETTINGS_FILES:
        path = root / name
        if not is_file(path):
            continue
        src, problems = load_source(path, display_path(path))
        diags += problems
        data = src.data
        if data is None:
            continue
        if not isinstance(data, dict):
            diags.append(src.diag((), "a Claude Code settings file holds a JSON object", "", "schema"))
            continue
        if data.get("disableAllHooks") is True:
            return [], diags
        raw = data.get("hooks")
        if raw is None:
            continue
        from flowrun.manifest.schema.typed import check_model  # (a project without settings: none)

        raw, skipped = claude_code_hooks(src, ("hooks",), raw)
        rules = hook_problems(src, ("hooks",), raw)
        spec, errors = check_model(src, HooksSpec, raw, ("hooks",))
        diags += skipped + rules + errors
        if isinstance(spec, HooksSpec) and not any(d.severity == "error" for d in rules):
            found.append((spec, src))
    return found, diags
