"""Per-agent config schemas for tool entries whose manifest does not declare one: agents
offered as tools, and declarative command tools."""

from __future__ import annotations

from typing import Any

AGENT_TOOL_CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "session": {"enum": ["fresh", "persistent"], "description": "Override the sub-agent's session mode."},
        "max_calls": {"type": "integer", "minimum": 1, "description": "Calls allowed (a round limit)."},
        "max_steps": {"type": "integer", "minimum": 1, "description": "Override the sub-agent's max_steps."},
        "selectable_models": {"type": "array", "items": {"type": "string"}},
        "budget": {
            "type": "object",
            "additionalProperties": False,
            "minProperties": 1,
            "description": "A budget for each call of this agent and every agent it calls, capped at "
            "what the caller's own budget has left; used up, the call returns partial.",
            "properties": {
                "max_cost_usd": {"type": "number", "exclusiveMinimum": 0},
                "max_tokens": {"type": "integer", "minimum": 1},
                "max_steps": {"type": "integer", "minimum": 1, "description": "Model calls of the sub-tree."},
            },
        },
    },
}


# per-agent config of a declarative command tool whose manifest declares none
COMMAND_TOOL_CONFIG_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "allow": {"type": "array", "items": {"type": "string"}, "description": "Command patterns allowed."},
        "deny": {"type": "array", "items": {"type": "string"}, "description": "Command patterns refused."},
        "timeout": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "Seconds before the call is killed.",
        },
        "max_output_bytes": {"type": "integer", "minimum": 256},
        "env": {"type": "object", "additionalProperties": {"type": "string"}},
        "base_dir": {"type": "string", "description": "Folder under the workspace the tool is confined to."},
    },
}
