"""The one generic agent loop and what it sees: instances, bound tools, dispatch, approvals, prompts."""
