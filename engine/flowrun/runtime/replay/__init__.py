"""Replaying a recorded run: its provider, where it diverged, and what `flowrun test` expects of it."""
