"""Context strategies: full, dashboard, compact. Each module is one strategy: its `context:`
spec (the schema part), its manifest checks and what it does to a conversation;
runtime/kinds.py registers them."""
