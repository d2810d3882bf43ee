"""CrewAI crews (`config/*.yaml` with `crew.py`, or `crew.jsonc` with `agents/`) as flowrun workflows."""
