"""Other frameworks' built-in tools and the flowrun built-in tools that do the same job: one
table per framework (the docs print them: how-to/foreign-formats.md). A tool with no flowrun
equivalent is not in its table; each format says what it does with one (a warning, and the
agent runs without it)."""

from __future__ import annotations

from dataclasses import dataclass

from flowrun.manifest.foreign.conversion import How

FILE_READ = ("read_file", "list_directory", "glob", "grep")
FILE_WRITE = ("write_file", "edit_file", "create_directory")
SHELL = ("execute_shell", "get_shell_output", "kill_shell")


@dataclass(frozen=True, slots=True)
class Equivalent:
    """The flowrun tools a foreign tool becomes, and how close they are."""

    tools: tuple[str, ...]
    how: How = "mapped"
    why: str = ""  # what differs, for an approximation


def _same(*tools: str) -> Equivalent:
    return Equivalent(tools)


def _near(why: str, *tools: str) -> Equivalent:
    return Equivalent(tools, "approximated", why)


SEARCH_TOOLS = "searches the web through web_search (Tavily with TAVILY_API_KEY, else the offline corpus)"
RAG = "reads and greps the files instead of searching an embedding index"

CREWAI: dict[str, Equivalent] = {
    "SerperDevTool": _near(SEARCH_TOOLS, "web_search"),
    "TavilySearchTool": _same("web_search"),
    "BraveSearchTool": _near(SEARCH_TOOLS, "web_search"),
    "EXASearchTool": _near(SEARCH_TOOLS, "web_search"),
    "WebsiteSearchTool": _near(
        "fetches pages with visit_url and searches with web_search", "web_search", "visit_url"
    ),
    "FirecrawlSearchTool": _near(SEARCH_TOOLS, "web_search"),
    "SerpApiGoogleSearchTool": _near(SEARCH_TOOLS, "web_search"),
    "LinkupSearchTool": _near(SEARCH_TOOLS, "web_search"),
    "ScrapeWebsiteTool": _same("visit_url"),
    "SerperScrapeWebsiteTool": _same("visit_url"),
    "JinaScrapeWebsiteTool": _same("visit_url"),
    "TavilyExtractorTool": _same("visit_url"),
    "ScrapeElementFromWebsiteTool": _near("fetches the whole page", "visit_url"),
    "FirecrawlScrapeWebsiteTool": _near("fetches the page with visit_url", "visit_url"),
    "SeleniumScrapingTool": _near("fetches the page without a browser", "visit_url"),
    "SpiderTool": _near("fetches one page at a time", "visit_url"),
    "FileReadTool": _same("read_file"),
    "FileWriterTool": _same("write_file"),
    "DirectoryReadTool": _same("list_directory", "glob"),
    "DirectorySearchTool": _near(RAG, "grep", "glob"),
    "CodeInterpreterTool": _near("runs the code with the shell in flowrun's sandbox", "execute_shell"),
    "PDFSearchTool": _near(RAG, "read_file", "grep"),
    "TXTSearchTool": _near(RAG, "read_file", "grep"),
    "CSVSearchTool": _near(RAG, "read_file", "grep"),
    "DOCXSearchTool": _near(RAG, "read_file", "grep"),
    "JSONSearchTool": _near(RAG, "read_file", "grep"),
    "MDXSearchTool": _near(RAG, "read_file", "grep"),
    "XMLSearchTool": _near(RAG, "read_file", "grep"),
}

ADK: dict[str, Equivalent] = {
    "google_search": _near(SEARCH_TOOLS, "web_search"),
    "enterprise_web_search": _near(SEARCH_TOOLS, "web_search"),
    "url_context": _same("visit_url"),
    "load_web_page": _same("visit_url"),
    "exit_loop": _same("exit_loop"),
    "get_user_choice": _near("asks the question in text; the choices are part of it", "ask_user"),
    "built_in_code_execution": _near("runs the code with the shell in flowrun's sandbox", "execute_shell"),
}

DOCKER_AGENT: dict[str, Equivalent] = {
    "filesystem": _same(*FILE_READ, *FILE_WRITE),
    "shell": _same(*SHELL),
    "fetch": _same("visit_url"),
    "user_prompt": _same("ask_user"),
}

PYDANTIC_AI: dict[str, Equivalent] = {
    "WebSearch": _near(SEARCH_TOOLS, "web_search"),
    "WebFetch": _same("visit_url"),
}

MAF: dict[str, Equivalent] = {
    "web_search": _near(SEARCH_TOOLS, "web_search"),
    "bing_grounding": _near(SEARCH_TOOLS, "web_search"),
    "code_interpreter": _near("runs the code with the shell in flowrun's sandbox", "execute_shell"),
}
