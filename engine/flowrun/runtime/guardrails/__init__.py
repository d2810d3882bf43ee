"""Guardrails at run time: the verdict of each kind, and where the agent loop asks for them."""
