"""Foreign text with placeholders (CrewAI's `{topic}`, ADK's `{var}` and `{{var}}`, docker-agent's
`$VAR` and `${VAR}`) as flowrun Jinja2 templates: each placeholder becomes a template variable,
and everything else stays literal text, `{{` and `{%` included, so a prompt that shows JSON or
Jinja2 examples renders exactly as written."""

from __future__ import annotations

import re
from collections.abc import Callable

# CrewAI: `{name}` where the name starts with a letter or _ (string_utils.interpolate_only)
CREWAI = re.compile(r"\{([A-Za-z_][A-Za-z0-9_\-]*)\}")
# ADK: `{name}`, `{name?}` (optional), `{{name}}`, with an `app:`/`user:`/`temp:` scope prefix
ADK = re.compile(r"\{+((?:app:|user:|temp:)?[A-Za-z_][A-Za-z0-9_]*)(\?)?\}+")
# docker-agent: `$NAME` and `${NAME}`, expanded from the environment when the file is loaded
ENVIRONMENT = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

Render = Callable[[re.Match[str]], str | None]  # a placeholder's Jinja2 text, None: keep it literal


def literal(text: str) -> str:
    """`text` as a template that renders to itself."""
    if not any(mark in text for mark in ("{", "}", "#", "%")):
        return text
    return (
        "{% raw %}"
        + text.replace("{% endraw %}", "{% endraw %}{{ '{% endraw %}' }}{% raw %}")
        + "{% endraw %}"
    )


def variable(name: str) -> str:
    """The Jinja2 expression of an input named `name` (`inputs['a-b']` for a name that is not an
    identifier)."""
    return f"{{{{ {name} }}}}" if IDENTIFIER.match(name) else f"{{{{ inputs[{name!r}] }}}}"


def template(text: str, pattern: re.Pattern[str], render: Render) -> str:
    """`text` as a Jinja2 template: each match of `pattern` is what `render` makes of it (or
    the matched text, literally, when it gives None), the rest literal."""
    out: list[str] = []
    at = 0
    for found in pattern.finditer(text):
        made = render(found)
        if made is None:
            continue
        out.append(literal(text[at : found.start()]))
        out.append(made)
        at = found.end()
    out.append(literal(text[at:]))
    return "".join(part for part in out if part)


def name_of(found: re.Match[str]) -> str:
    """The name a placeholder match holds (its first group that matched)."""
    return next(g for g in found.groups() if g)


def names(text: str, pattern: re.Pattern[str]) -> list[str]:
    """The placeholder names in `text`, each once, in order."""
    return list(dict.fromkeys(name_of(m) for m in pattern.finditer(text)))


def expression(text: str, pattern: re.Pattern[str]) -> str:
    """`text` with placeholders as a Jinja2 expression that builds it (for a path an earlier
    step wrote whose name has placeholders: `'output/' ~ topic ~ '.md'`)."""
    parts: list[str] = []
    at = 0
    for found in pattern.finditer(text):
        if found.start() > at:
            parts.append(repr(text[at : found.start()]))
        name = name_of(found)
        parts.append(name if IDENTIFIER.match(name) else f"inputs[{name!r}]")
        at = found.end()
    if at < len(text) or not parts:
        parts.append(repr(text[at:]))
    return " ~ ".join(parts)
