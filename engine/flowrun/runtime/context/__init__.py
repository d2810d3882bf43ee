"""Context strategies of an agent's `context:`. Each module is one strategy: its spec (the schema
part), its manifest checks and what it does to a conversation; runtime/kinds.py registers them."""
