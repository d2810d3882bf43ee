"""Jinja2 for prompts and workflow templates: one sandboxed, strict environment, plus static
analysis (syntax errors, variables a template uses) for `flowrun validate`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from flowrun.errors import ManifestError

if TYPE_CHECKING:  # jinja2 is imported when a template with Jinja syntax is first compiled
    from jinja2 import Template
    from jinja2.sandbox import SandboxedEnvironment

# Names the runtime provides to every agent prompt.
PROMPT_BUILTINS = frozenset(
    {
        "agent",
        "tools",
        "team",
        "workspace",
        "inputs",
        "date",
        "iteration",
        "run_id",
        "output",
        "dashboards",
        "model",
    }
)
# Names the runtime provides to workflow templates (task, seed files, until, workdir).
WORKFLOW_BUILTINS = frozenset({"inputs", "workspace", "date", "iteration", "run_id", "output"})
# Jinja globals that are always defined.
JINJA_GLOBALS = frozenset(
    {"range", "dict", "lipsum", "cycler", "joiner", "namespace", "loop", "self", "varargs"}
)


def environment(search: list[Path] | None = None) -> SandboxedEnvironment:
    from jinja2 import FileSystemLoader, StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    loader = FileSystemLoader([str(p) for p in search]) if search else None
    return SandboxedEnvironment(
        loader=loader,
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


TOO_DEEP = "the template nests expressions or blocks too deep"
DEEP_HINT = "split it into smaller expressions or blocks"


@dataclass(slots=True)
class TemplateInfo:
    variables: dict[str, int]  # undeclared name -> first line it is used on
    includes: list[str]
    error: str | None = None
    error_line: int = 0


def analyse(source: str, env: SandboxedEnvironment | None = None) -> TemplateInfo:
    from jinja2 import TemplateSyntaxError, meta, nodes

    env = env or environment()
    try:
        ast = env.parse(source)
        names = meta.find_undeclared_variables(ast) - JINJA_GLOBALS
        first_line: dict[str, int] = {}
        for node in ast.find_all(nodes.Name):
            if node.name in names and node.ctx == "load":
                first_line.setdefault(node.name, node.lineno)
        includes = [t for t in meta.find_referenced_templates(ast) if isinstance(t, str)]
    except TemplateSyntaxError as e:
        return TemplateInfo({}, [], e.message or str(e), e.lineno or 1)
    except RecursionError:  # jinja2's parser and its tree walks recurse once per nested node
        return TemplateInfo({}, [], TOO_DEEP, 1)
    return TemplateInfo(first_line, includes)


def analyse_expression(source: str) -> TemplateInfo:
    """An `until:` condition: a bare expression, or a {{ ... }} template."""
    text = source if "{{" in source or "{%" in source else "{{ " + source + " }}"
    return analyse(text)


def render(
    source: str, variables: Mapping[str, object], *, search: list[Path] | None = None, what: str = ""
) -> str:
    if is_plain(source):
        return source
    from jinja2 import TemplateError

    try:
        return _compiled(source, tuple(str(p) for p in search or ())).render(**variables)
    except TemplateError as e:
        raise ManifestError(
            f"cannot render {what or 'template'}: {e}", "check the variable names it uses"
        ) from e
    except (RecursionError, SyntaxError):  # the parser's recursion, or Python's on the compiled code
        raise ManifestError(f"cannot render {what or 'template'}: {TOO_DEEP}", DEEP_HINT) from None


def is_plain(source: str) -> bool:
    """Text with no Jinja syntax: every delimiter starts with "{", and without "\r" (which
    Jinja turns into "\n") rendering returns it unchanged; jinja2 is not needed for it."""
    return "{" not in source and "\r" not in source


@lru_cache(maxsize=512)
def _compiled(source: str, search: tuple[str, ...]) -> Template:
    """A template compiled once per process: the runs of a batch and an API caller's second run
    render the same prompts again."""
    return _environment(search).from_string(source)


@lru_cache(maxsize=32)
def _environment(search: tuple[str, ...]) -> SandboxedEnvironment:
    return environment([Path(p) for p in search])


def evaluate(expression: str, variables: Mapping[str, object], what: str = "until") -> bool:
    text = expression if "{{" in expression or "{%" in expression else "{{ " + expression + " }}"
    value = render(text, variables, what=what).strip()
    return value.lower() not in ("", "false", "0", "none", "no")
