"""The run: workspace, event log, budgets, and the one generic agent loop."""
