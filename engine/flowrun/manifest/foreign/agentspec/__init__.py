"""Oracle Open Agent Specification: component trees in YAML or JSON, read and written."""
