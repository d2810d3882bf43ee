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
from flowrun.paths import display_path

SETTINGS_FILES = (".claude/settings.json", ".claude/settings.local.json")
# events whose hooks Claude Code runs whatever their `matcher` says
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
                re.compile(matcher)
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


def load_settings_hooks(root: Path) -> tuple[list[tuple[HooksSpec, Source]], list[Diagnostic]]:
    """The `hooks` of root's `.claude/settings.json` and `settings.local.json` (each with its
    source, for the folder its commands are relative to), and their problems. Other settings
    are Claude Code's own and ignored; `disableAllHooks: true` in either turns hooks off."""
    from flowrun.manifest.typed_check import check_model

    found: list[tuple[HooksSpec, Source]] = []
    diags: list[Diagnostic] = []
    for name in SETTINGS_FILES:
        path = root / name
        if not path.is_file():
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
        rules = hook_problems(src, ("hooks",), raw)
        spec, errors = check_model(src, HooksSpec, raw, ("hooks",))
        diags += rules + errors
        if isinstance(spec, HooksSpec) and not any(d.severity == "error" for d in rules):
            found.append((spec, src))
    return found, diags
