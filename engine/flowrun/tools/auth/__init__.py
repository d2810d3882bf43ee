"""Signing in to the servers tools reach: OAuth for HTTP MCP servers."""
