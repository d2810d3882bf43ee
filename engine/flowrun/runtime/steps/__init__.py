"""Step kinds: agent, loop, parallel, foreach. Each module is one kind: its spec (the schema
part), its manifest side (nested steps, templates, checks) and how it runs; runtime/kinds.py
registers them."""
