"""Graders of an eval set. Each module is one kind: its spec (the schema part), what `validate`
checks of it and how it scores a run; evals/grader_kinds.py registers them."""
