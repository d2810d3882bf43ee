"""Step kinds of a workflow's `steps:`. Each module is one kind: its spec (the schema part), its
manifest side (nested steps, templates, checks) and how it runs; runtime/kinds.py registers them."""
