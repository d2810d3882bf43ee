"""Files users already have: Claude Code agents, Agent Skills, `.mcp.json`."""
