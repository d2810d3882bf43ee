"""The `full` strategy: keep every turn."""

from __future__ import annotations

from flowrun.runtime.context.base import ContextStrategy

STRATEGY = ContextStrategy()
