"""Hooks in Claude Code's shape: which fire when, running them, and what their answers do."""
