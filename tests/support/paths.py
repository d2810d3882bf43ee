"""Where things are: the repository, its tests/ folder, and the crash points' sitecustomize."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
CRASH_POINTS = TESTS / "crash_points"  # a sitecustomize that kills the process at a chosen change
