"""Tool kinds: how an agent's tools run. Each module is one kind: its manifest side (claims,
checks, sandbox needs, the `implementation:` model) and how its tools are bound and run;
runtime/kinds.py registers them."""
