"""Other frameworks' agent files (CrewAI, ADK, docker-agent, pydantic-ai, MAF) read as flowrun manifests."""
