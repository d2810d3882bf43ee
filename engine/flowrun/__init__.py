"""flowrun: a declarative engine for LLM agent teams."""

from flowrun._version import __version__

__all__ = ["__version__"]
