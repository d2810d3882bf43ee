"""Agents' memory across runs, as the run sees it: the run service (which folders, their state at
the start, the index each prompt gets), what a resume or a replay reads back, the prompt's memory
block and the reflection at the end of a run. The tool is runtime/tool_kinds/memory.py."""
