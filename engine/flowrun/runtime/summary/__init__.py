"""A run folder read back as one summary that every view shows: state, agents, timeline, talk."""
