"""A run of a workflow: its setup and end (run.py, execute.py), the loop, model calls, durability,
replay, telemetry, MCP plumbing, and the kinds of tools, steps and context strategies."""
