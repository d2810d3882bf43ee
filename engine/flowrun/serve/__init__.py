"""Serving workflows and runs to other programs (`flowrun serve mcp`) and people (the web UI's pages)."""
