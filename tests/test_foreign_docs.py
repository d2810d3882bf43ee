"""The foreign formats' docs say what the code does: the built-in tool table of
docs/how-to/foreign-formats.md is the mapping's own tables (builtin_tools.py), row for row, and
every format flowrun reads has its page."""

from __future__ import annotations

import re

from support.paths import REPO

from flowrun.manifest.foreign import builtin_tools
from flowrun.manifest.foreign.registry import FORMATS

PAGE = REPO / "docs" / "how-to" / "foreign-formats.md"
TABLES = {
    "CrewAI": builtin_tools.CREWAI,
    "ADK": builtin_tools.ADK,
    "docker-agent": builtin_tools.DOCKER_AGENT,
    "pydantic-ai": builtin_tools.PYDANTIC_AI,
    "Agent Framework": builtin_tools.MAF,
}
PAGES = {
    "crewai": "crewai.md",
    "adk": "adk.md",
    "docker-agent": "docker-agent.md",
    "pydantic-ai": "pydantic-ai.md",
    "maf": "agent-framework.md",
    "agentspec": "agent-spec.md",
}
ROW = re.compile(r"^\| ([^|]+) \| `([^`]+)` \| ([^|]+) \| [^|]+ \|$", re.MULTILINE)


def test_the_built_in_tool_table_is_the_mapping_s() -> None:
    rows = {
        (m.group(1), m.group(2)): re.findall(r"`([^`]+)`", m.group(3)) for m in ROW.finditer(PAGE.read_text())
    }
    expected = {
        (title, name): list(eq.tools) for title, table in TABLES.items() for name, eq in table.items()
    }
    assert rows == expected


def test_every_format_has_its_page() -> None:
    text = PAGE.read_text()
    for name in FORMATS:
        page = REPO / "docs" / "how-to" / PAGES[name]
        assert page.is_file() and f"]({PAGES[name]})" in text, name
