"""flowrun: a declarative engine for LLM agent teams."""

__version__ = "0.1.0"
