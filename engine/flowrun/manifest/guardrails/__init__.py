"""Guardrails as manifests declare them: their spec models and the checks `validate` runs."""
