"""Clients of tools that live in other processes or hosts: MCP servers (their calls, OAuth,
elicitation, resources) and remote A2A agents."""
