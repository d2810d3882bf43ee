"""LLM providers. Each module imports its SDK lazily, inside the functions that need it."""
