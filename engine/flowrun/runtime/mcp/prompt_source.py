"""An agent's system prompt taken from an MCP server: `prompt: {mcp: SERVER, name: PROMPT,
arguments: {...}}`. Before the agent's first model call the server is started (as for its
tools) and the prompt fetched with the arguments rendered over the inputs; the text of its
messages is the system prompt, fetched once per run and set of arguments."""

from __future__ import annotations

from flowrun.manifest.specs import McpPromptSpec
from flowrun.runtime.loop.contracts import AgentInstance, RunServices
from flowrun.runtime.loop.prompts import PromptRenderer, mcp_prompt_key
from flowrun.runtime.tool_kinds.mcp import McpStartError, pool_of
from flowrun.tools.remote.mcp_client import McpServerDown
from flowrun.tools.remote.mcp_resources import prompt_text


async def fetch_prompt(inst: AgentInstance, run: RunServices, prompts: PromptRenderer) -> bool:
    """Fetch the MCP prompt of `inst`'s agent before its first model call; True when the
    instance's system prompt is to be rendered again with it."""
    spec = run.project.agents[inst.name].spec
    if not isinstance(spec.prompt, McpPromptSpec) or inst.model_calls:
        return False
    prompt = spec.prompt
    arguments = prompts.mcp_arguments(spec)
    key = mcp_prompt_key(prompt, arguments)
    if key not in prompts.mcp_texts:
        pool = pool_of(run)
        await pool.tools_of(prompt.mcp)  # started once per run, as for its tools
        try:
            text = await prompt_text(pool.connections[prompt.mcp], prompt.name, arguments)
        except McpServerDown as e:
            raise McpStartError(
                f"MCP server '{prompt.mcp}' gave no prompt for agent '{spec.name}': {e}",
                "check the prompt's name and arguments (the server's prompts/list names them)",
            ) from None
        if not text:
            raise McpStartError(
                f"MCP prompt '{prompt.name}' of server '{prompt.mcp}' is empty", "fix the agent's `prompt:`"
            )
        prompts.mcp_texts[key] = text
    return True
