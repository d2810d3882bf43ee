"""Claude Code subagent files as flowrun agents, read as they are: a Markdown file with YAML
front matter in `agents.d/` or `.claude/agents/` next to the workflow. The body is the system
prompt (never rendered as a template), followed, as Claude Code gives a subagent its project's
memory, by the project's CLAUDE.md files (manifest/ecosystem/project_instructions.py: a `.md`
agent reads them unless the workflow says `instructions: none`).

`name` and `description` are the agent's; `tools` (comma-separated or a list of Claude Code
tool names, see TOOL_MAP; `Task(NAME)` offers agent NAME, `mcp__SERVER__TOOL` an MCP tool,
`Bash(git:*)` an allow pattern; omitted: the file, shell, web and skill tools) and
`disallowedTools` become tool entries; `model` sonnet/opus/haiku the Anthropic model, `inherit`
the workflow's; `maxTurns` is `max_steps`; `skills` limits use_skill and run_skill_script;
`mcpServers` names servers (inline declarations join the project's); `permissionMode` becomes
approvals (`default`: ask on edits and the shell, `acceptEdits`: on the shell, `plan`: only
read-only tools, `bypassPermissions`/`dontAsk`: none); `hooks` are the agent's hooks, in
Claude Code's shape (manifest/hooks.py; what they do: runtime/hooks/); `memory` (user, project or
local) is the agent's memory in Claude Code's own folders (manifest/memory.py), so Claude Code and
flowrun share it.

Keys flowrun does not use (`isolation`, `background`, ...) are warnings naming what is ignored, except
`color` (only how Claude Code draws the agent); a key that looks like a misspelling of a known
one is an error with a did-you-mean. Claude Code's team tools that flowrun's agent-as-tool
protocol already is (`TaskList`, `TaskGet`: the assignment, which a sub-agent gets as its task;
`TaskUpdate`, `SendMessage`: the report, which is its answer) are accepted without a tool."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.ecosystem.front_matter import Document, load_document
from flowrun.manifest.schema.check import did_you_mean
from flowrun.manifest.specs import NAME, AgentManifest, McpServerSpec
from flowrun.manifest.yaml_source import PathKey, Source

USED_KEYS = (
    "name",
    "description",
    "tools",
    "disallowedTools",
    "model",
    "maxTurns",
    "skills",
    "mcpServers",
    "permissionMode",
    "hooks",
    "memory",
)
IGNORED_KEYS = ("isolation", "background", "effort", "initialPrompt")
COSMETIC_KEYS = ("color",)  # how Claude Code shows the agent: nothing a run does depends on it
# Claude Code team tools that a sub-agent's call already is: its task is the assignment
# (TaskList, TaskGet) and its answer the report to the lead (TaskUpdate, SendMessage)
PROTOCOL_TOOLS = ("TaskList", "TaskGet", "TaskUpdate", "SendMessage")
MISSPELLINGS = {
    "allowed-tools": "tools",
    "allowedTools": "tools",
    "allowed_tools": "tools",
    "max_turns": "maxTurns",
    "maxturns": "maxTurns",
    "max_steps": "maxTurns",
    "disallowed-tools": "disallowedTools",
    "disallowed_tools": "disallowedTools",
    "permission_mode": "permissionMode",
    "mcp_servers": "mcpServers",
}
TOOL_MAP: dict[str, tuple[str, ...]] = {
    "Read": ("read_file",),
    "Write": ("write_file",),
    "Edit": ("edit_file",),
    "MultiEdit": ("edit_file",),
    "Glob": ("glob",),
    "Grep": ("grep",),
    "LS": ("list_directory",),
    "Bash": ("execute_shell", "get_shell_output", "kill_shell"),
    "BashOutput": ("get_shell_output",),
    "KillShell": ("kill_shell",),
    "KillBash": ("kill_shell",),
    "WebSearch": ("web_search",),
    "WebFetch": ("visit_url",),
    "Skill": ("use_skill", "run_skill_script"),
    "AskUserQuestion": ("ask_user",),
}
DEFAULT_TOOLS = ("Read", "Write", "Edit", "Glob", "Grep", "LS", "Bash", "WebSearch", "WebFetch", "Skill")
MODEL_ALIASES = {
    "sonnet": "anthropic:claude-sonnet-4-5",
    "opus": "anthropic:claude-opus-4-1",
    "haiku": "anthropic:claude-haiku-4-5",
}
CLAUDE_MEMORY_SCOPES = ("user", "project", "local")  # Claude Code's; the folders: manifest/memory.py
PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")
EDIT_TOOLS = ("write_file", "edit_file", "delete_file", "create_directory")
SHELL_TOOLS = ("execute_shell", "get_shell_output", "kill_shell", "run_skill_script", "git")
SKILL_TOOLS = ("use_skill", "run_skill_script")
SPECIFIER = re.compile(r"^([A-Za-z]+)\((.*)\)$")


class Converted:
    """What a Claude agent file becomes: the manifest data, inline MCP servers, problems."""

    def __init__(self, src: Source) -> None:
        self.src = src
        self.data: dict[str, Any] = {"version": 1, "kind": "agent"}
        self.tools: dict[str, dict[str, Any]] = {}
        self.servers: dict[str, McpServerSpec] = {}
        self.diagnostics: list[Diagnostic] = []

    def problem(self, parts: PathKey, message: str, hint: str = "", code: str = "invalid", **kw: Any) -> None:
        self.diagnostics.append(self.src.diag(parts, message, hint, code, **kw))


def load_claude_agent(
    path: Path, display: str
) -> tuple[AgentManifest | None, Source, dict[str, McpServerSpec], list[Diagnostic]]:
    doc, diags = load_document(path, display)
    if doc.source.data is None or any(d.severity == "error" for d in diags):
        return None, doc.source, {}, diags
    out = Converted(doc.source)
    out.diagnostics += diags
    _convert(doc, out)
    if any(d.severity == "error" for d in out.diagnostics):
        return None, doc.source, {}, out.diagnostics
    from pydantic import ValidationError

    try:
        spec = AgentManifest.model_validate(out.data)
    except ValidationError as e:
        for err in e.errors():
            loc = tuple(p for p in err["loc"] if isinstance(p, str | int))
            out.problem(loc[:1], f"{'.'.join(map(str, loc))}: {err['msg']}", "", "schema")
        return None, doc.source, {}, out.diagnostics
    return spec, doc.source, out.servers, out.diagnostics


def _convert(doc: Document, out: Converted) -> None:
    meta: dict[str, object] = doc.source.data
    _check_keys(meta, out)
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not re.match(NAME, name):
        where: PathKey = ("name",) if "name" in meta else ()
        hint = "lowercase letters, digits and hyphens, e.g. code-reviewer"
        out.problem(where, f"a Claude Code agent needs a `name`, got {name!r}", hint, "bad-name")
    if not isinstance(description, str) or not description.strip():
        out.problem(
            ("description",) if "description" in meta else (), "a Claude Code agent needs a `description`"
        )
    out.data.update(name=name, description=description)
    out.data["prompt"] = _raw(doc.body) if doc.body.strip() else f"You are the {name} agent."
    _model(meta, out)
    _max_turns(meta, out)
    _tools(meta, out)
    _skills(meta, out)
    _mcp_servers(meta, out)
    _permission_mode(meta, out)
    _hooks(meta, out)
    _memory(meta, out)
    out.data["tools"] = [{n: c} if c else n for n, c in out.tools.items()]


def _raw(body: str) -> str:
    """The body as a prompt that is never rendered (`{{` in a Markdown example stays as is)."""
    return (
        "{% raw %}"
        + body.replace("{% endraw %}", "{% endraw %}{{ '{% endraw %}' }}{% raw %}")
        + "{% endraw %}"
    )


def _check_keys(meta: Mapping[str, object], out: Converted) -> None:
    known = (*USED_KEYS, *IGNORED_KEYS, *COSMETIC_KEYS)
    for key in meta:
        if key in USED_KEYS or key in COSMETIC_KEYS:
            continue
        if key in IGNORED_KEYS:
            message = f"'{key}' is a Claude Code setting flowrun does not use; it is ignored"
            out.problem((key,), message, "", "ignored-key", key=True, severity="warning")
            continue
        guess = MISSPELLINGS.get(str(key))
        hint = f"did you mean '{guess}'?" if guess else did_you_mean(str(key), known)
        if hint:
            out.problem((key,), f"unknown key '{key}' in a Claude Code agent", hint, "unknown-key", key=True)
        else:
            message = f"unknown key '{key}' (not a Claude Code subagent setting); it is ignored"
            hint = "known keys: " + ", ".join(USED_KEYS)
            out.problem((key,), message, hint, "ignored-key", key=True, severity="warning")


def _names(value: object, key: str, out: Converted) -> list[str]:
    """A comma/space-separated string or a list of strings."""
    if value is None:
        return []
    if isinstance(value, str):
        return [part.strip() for part in re.split(r",\s*(?![^()]*\))", value) if part.strip()]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [v.strip() for v in value if v.strip()]
    out.problem((key,), f"`{key}` must be a comma-separated string or a list of names", "", "wrong-type")
    return []


def _model(meta: Mapping[str, object], out: Converted) -> None:
    model = meta.get("model")
    if model is None or model == "inherit":
        return
    if not isinstance(model, str):
        out.problem(
            ("model",), "`model` must be sonnet, opus, haiku, inherit or a model name", "", "wrong-type"
        )
        return
    if model in MODEL_ALIASES:
        out.data["model"] = MODEL_ALIASES[model]
    elif model.startswith("claude-"):  # a full Claude model id, as Claude Code takes it
        out.data["model"] = f"anthropic:{model}"
    elif ":" in model:  # flowrun's provider:model
        out.data["model"] = model
    else:  # (Claude Code would refuse it too; a run would fail at its first call)
        hint = did_you_mean(model, [*MODEL_ALIASES, "inherit"]) or (
            "sonnet, opus, haiku, inherit, a claude-... model id, or flowrun's provider:model"
        )
        out.problem(("model",), f"unknown model '{model}'", hint, "unknown-model")


def _max_turns(meta: Mapping[str, object], out: Converted) -> None:
    turns = meta.get("maxTurns")
    if turns is None:
        return
    if not isinstance(turns, int) or isinstance(turns, bool) or turns < 1:
        out.problem(
            ("maxTurns",), f"`maxTurns` must be a whole number of at least 1, not {turns!r}", "", "wrong-type"
        )
        return
    out.data["max_steps"] = turns


def _tools(meta: Mapping[str, object], out: Converted) -> None:
    listed = _names(meta["tools"], "tools", out) if "tools" in meta else list(DEFAULT_TOOLS)
    for i, item in enumerate(listed):
        _tool(item, out, ("tools", i) if isinstance(meta.get("tools"), list) else ("tools",))
    for item in _names(meta.get("disallowedTools"), "disallowedTools", out):
        found = SPECIFIER.match(item)
        for name in _flowrun_names(found.group(1) if found else item):
            out.tools.pop(name, None)


def _flowrun_names(claude: str) -> tuple[str, ...]:
    if claude.startswith("mcp__"):
        server, _, tool = claude[5:].partition("__")
        return (f"{server}.{tool}" if tool else server,)
    return TOOL_MAP.get(claude, ())


def _tool(item: str, out: Converted, where: PathKey) -> None:
    found = SPECIFIER.match(item)
    base, spec = (found.group(1), found.group(2).strip()) if found else (item, "")
    if base in ("Task", "Agent"):
        if spec:
            out.tools.setdefault(spec, {})
        else:
            message = f"'{item}' without an agent name: flowrun offers agents as tools by name"
            out.problem(where, message, f"write {base}(AGENT_NAME)", "ignored-tool", severity="warning")
        return
    names = _flowrun_names(base)
    if not names and base in PROTOCOL_TOOLS:
        return  # what calling the agent as a tool already does (see the module docstring)
    if not names:
        hint = (
            did_you_mean(base, TOOL_MAP)
            or "the tools flowrun maps are listed in its docs: how-to/claude-code.md"
        )
        message = f"Claude Code tool '{base}' has no flowrun equivalent; it is ignored"
        out.problem(where, message, hint, "ignored-tool", severity="warning")
        return
    for name in names:
        out.tools.setdefault(name, {})
    if spec and base == "Bash":
        allow = out.tools["execute_shell"].setdefault("allow", [])
        allow.append(spec.replace(":*", " *").replace(":", " "))
    elif spec:
        message = f"the rule in '{item}' is not applied: flowrun gives {names[0]} its own path config"
        out.problem(
            where,
            message,
            "limit paths with the tool's `paths`/`write_paths` config",
            "ignored-tool",
            severity="warning",
        )


def _skills(meta: Mapping[str, object], out: Converted) -> None:
    skills = _names(meta.get("skills"), "skills", out)
    if not skills:
        return
    for tool in SKILL_TOOLS:
        out.tools.setdefault(tool, {})["skills"] = list(skills)


def _mcp_servers(meta: Mapping[str, object], out: Converted) -> None:
    servers = meta.get("mcpServers")
    if servers is None:
        return
    if not isinstance(servers, list):
        out.problem(
            ("mcpServers",), "`mcpServers` must be a list of server names or {NAME: config}", "", "wrong-type"
        )
        return
    from flowrun.manifest.schema.typed import check_model

    for i, item in enumerate(servers):
        if isinstance(item, str):
            out.tools.setdefault(item, {})
        elif isinstance(item, dict) and len(item) == 1:
            name, raw = next(iter(item.items()))
            spec, problems = check_model(out.src, McpServerSpec, raw, ("mcpServers", i, name))
            out.diagnostics += problems
            if isinstance(spec, McpServerSpec):
                out.servers[str(name)] = spec
                out.tools.setdefault(str(name), {})
        else:
            out.problem(("mcpServers", i), "a server is a name or {NAME: {command: ...}}", "", "wrong-type")


def _permission_mode(meta: Mapping[str, object], out: Converted) -> None:
    mode = meta.get("permissionMode")
    if mode is None:
        return
    if mode not in PERMISSION_MODES:
        hint = did_you_mean(str(mode), PERMISSION_MODES) or "use one of: " + ", ".join(PERMISSION_MODES)
        out.problem(("permissionMode",), f"{mode!r} is not a permission mode", hint, "bad-value")
        return
    if mode == "plan":
        for name in (*EDIT_TOOLS, *SHELL_TOOLS):
            out.tools.pop(name, None)
        return
    ask = {"default": (*EDIT_TOOLS, *SHELL_TOOLS), "acceptEdits": SHELL_TOOLS}.get(mode, ())
    for name in ask:
        if name in out.tools:
            out.tools[name]["approve"] = "ask"


def _memory(meta: Mapping[str, object], out: Converted) -> None:
    scope = meta.get("memory")
    if scope is None:
        return
    if scope not in CLAUDE_MEMORY_SCOPES:
        hint = did_you_mean(str(scope), CLAUDE_MEMORY_SCOPES) or "use user, project or local"
        out.problem(("memory",), f"{scope!r} is not a memory scope", hint, "bad-value")
        return
    out.data["memory"] = {"scope": scope, "folders": "claude-code"}


def _hooks(meta: Mapping[str, object], out: Converted) -> None:
    raw = meta.get("hooks")
    if raw is None:
        return
    from flowrun.manifest.hooks import claude_code_hooks, hook_problems
    from flowrun.manifest.schema.typed import check_model
    from flowrun.manifest.specs import HooksSpec

    raw, skipped = claude_code_hooks(out.src, ("hooks",), raw)
    rules = hook_problems(out.src, ("hooks",), raw)
    spec, problems = check_model(out.src, HooksSpec, raw, ("hooks",))
    out.diagnostics += skipped + rules + problems
    if isinstance(spec, HooksSpec):
        out.data["hooks"] = raw
