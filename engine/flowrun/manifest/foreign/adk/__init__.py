"""Google ADK Agent Config (`root_agent.yaml` and the files it names) as flowrun workflows."""
