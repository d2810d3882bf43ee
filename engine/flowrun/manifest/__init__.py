"""Manifest loading: YAML with line numbers → JSON Schema check → typed specs → cross-references."""
