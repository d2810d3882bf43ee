"""Serving workflows to other programs (`flowrun serve mcp`)."""
