"""OpenTelemetry: events as GenAI spans, exported after a run or live."""
