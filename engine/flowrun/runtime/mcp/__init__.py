"""MCP plumbing of a run: how a server starts, and `validate --connect`."""
