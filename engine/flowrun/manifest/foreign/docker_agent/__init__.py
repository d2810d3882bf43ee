"""docker-agent (ex-cagent) team files, checked with docker-agent's JSON Schema, as flowrun workflows."""
