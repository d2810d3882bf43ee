"""flowrun's tool calls as a Claude Code hook script expects to see them: the tool's Claude Code
name (`execute_shell` is `Bash`, an agent called as a tool is `Task`, an MCP tool `SERVER.TOOL`
is `mcp__SERVER__TOOL`), its input in Claude Code's shape (`file_path` absolute, a Bash
`timeout` in milliseconds) and its response; and a hook's `updatedInput` back in flowrun's
shape. Tools without a Claude Code counterpart keep their name and arguments."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from flowrun.manifest.ecosystem.claude_agents import TOOL_MAP
from flowrun.types import ToolResult


def _claude_names() -> dict[str, str]:
    """flowrun tool -> its Claude Code name: claude_agents.TOOL_MAP the other way, a tool's own
    entry (the first of its tuple: get_shell_output is BashOutput, not Bash) before a shared one."""
    names: dict[str, str] = {}
    for claude, tools in TOOL_MAP.items():
        names.setdefault(tools[0], claude)
    for claude, tools in TOOL_MAP.items():
        for tool in tools:
            names.setdefault(tool, claude)
    return names


CLAUDE_NAMES = _claude_names()
AGENT_TOOL = "Task"  # Claude Code's tool that runs a subagent
# Claude Code input key -> flowrun argument, per tool whose keys differ
PATH_KEYS = {"Read": "path", "Write": "path", "Edit": "path", "LS": "path", "Glob": "path", "Grep": "path"}


def claude_name(tool: str, delegates: bool) -> str:
    if delegates:
        return AGENT_TOOL
    if "." in tool:
        server, _, name = tool.partition(".")
        return f"mcp__{server}__{name}"
    return CLAUDE_NAMES.get(tool, tool)


def names_of(tool: str, delegates: bool) -> tuple[str, ...]:
    """The names a matcher is tried on: Claude Code's, then flowrun's."""
    return tuple(dict.fromkeys((claude_name(tool, delegates), tool)))


def claude_input(tool: str, delegates: bool, arguments: Mapping[str, object], cwd: Path) -> dict[str, object]:
    """`arguments` as Claude Code's tool of that name takes them."""
    name = claude_name(tool, delegates)
    args = dict(arguments)
    if name == AGENT_TOOL:
        task = str(args.get("task", ""))
        return {
            "description": task.splitlines()[0][:80] if task else "",
            "prompt": task,
            "subagent_type": tool,
        }
    if name == "Bash":
        out: dict[str, object] = {"command": args.get("command", "")}
        if isinstance(args.get("timeout"), int | float):
            out["timeout"] = int(float(args["timeout"]) * 1000)  # type: ignore[arg-type]
        if args.get("run_in_background"):
            out["run_in_background"] = True
        return out
    if name in PATH_KEYS and "path" in args:
        key = "path" if name in ("LS", "Glob", "Grep") else "file_path"
        args[key] = str((cwd / str(args.pop("path"))).resolve())
    if name == "Read":
        start, end = args.pop("start_line", None), args.pop("end_line", None)
        if isinstance(start, int):
            args["offset"] = start
            if isinstance(end, int):
                args["limit"] = end - start + 1
    return args


def flowrun_input(
    tool: str, delegates: bool, updated: Mapping[str, object], cwd: Path, workspace: Path
) -> dict[str, object]:
    """A hook's `updatedInput` (Claude Code's shape for a mapped tool) as flowrun's arguments."""
    name = claude_name(tool, delegates)
    args = dict(updated)
    if name == AGENT_TOOL:
        out = {k: v for k, v in args.items() if k not in ("description", "prompt", "subagent_type")}
        if "prompt" in args:
            out["task"] = args["prompt"]
        return out
    if name == "Bash" and isinstance(args.get("timeout"), int | float):
        args["timeout"] = float(args["timeout"]) / 1000  # type: ignore[arg-type]
    if name in PATH_KEYS:
        path = args.pop("file_path", None) if "file_path" in args else args.pop("path", None)
        if isinstance(path, str):
            args["path"] = _relative(path, cwd, workspace)
    if name == "Read":
        offset, limit = args.pop("offset", None), args.pop("limit", None)
        if isinstance(offset, int):
            args["start_line"] = offset
            if isinstance(limit, int):
                args["end_line"] = offset + limit - 1
    return args


def _relative(path: str, cwd: Path, workspace: Path) -> str:
    """An absolute path inside the agent's folder as flowrun's tools take it: relative."""
    target = Path(path)
    if not target.is_absolute():
        return path
    for base in (cwd.resolve(), workspace.resolve()):
        if target.is_relative_to(base):
            return target.relative_to(base).as_posix() or "."
    return path


def claude_response(tool: str, delegates: bool, result: ToolResult) -> object:
    """A tool result as PostToolUse's `tool_response`: Bash's {stdout, stderr, interrupted,
    isImage}, Write's and Edit's {filePath, success}, a subagent's answer text; otherwise the
    result in the tool protocol's shape (status, text, data, error)."""
    name = claude_name(tool, delegates)
    data = result.data
    if name == "Bash":
        return {
            "stdout": str(data.get("stdout", "")),
            "stderr": str(data.get("stderr", "")),
            "interrupted": result.error is not None and result.error.code == "TIMEOUT",
            "isImage": False,
            "exit_code": data.get("exit_code"),
        }
    if name in ("Write", "Edit"):
        return {"filePath": result.context.get("path_resolved"), "success": result.status != "error"}
    if name == AGENT_TOOL:
        return {"content": [{"type": "text", "text": result.text}], "status": result.status}
    return flowrun_response(result)


def flowrun_response(result: ToolResult) -> dict[str, object]:
    out: dict[str, object] = {"status": result.status, "text": result.text, "data": result.data}
    if result.error is not None:
        out["error"] = {"code": result.error.code, "message": result.error.message}
    return out
