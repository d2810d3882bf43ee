"""A CrewAI project's `crew.py`, read with `ast` (never imported or run): the `@CrewBase` class's
`@agent`, `@task` and `@crew` methods and the keyword arguments of the `Agent(...)`, `Task(...)`
and `Crew(...)` each returns, so the crew's process, manager model, tools, models and task
order are known without executing the project.

A keyword whose value is a literal, a `Process.x`, a tool class called without arguments, an
`LLM(model=...)` call, `self.agents_config['key']` or a `self.method()` reference is read; any
other expression is kept as its source text, which the mapping reports as set in Python. The
result is a Source (display: crew.py) whose data is {agents: {method: kwargs}, tasks: {method:
kwargs}, crew: kwargs, llms: {method: value}, tools: {method: value}, order: [task methods]} with the
line and column of every keyword, so notes and problems point into crew.py."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.foreign.conversion import Doc
from flowrun.manifest.yaml_source import PathKey, Source
from flowrun.yaml_limits import read_limited

DECORATORS = ("agent", "task", "crew", "llm", "tool")
# LangChain chat models older crews pass as `llm=`: the provider each class calls
CHAT_CLASSES = {"ChatOpenAI": "openai", "ChatAnthropic": "anthropic"}
CHAT_CLASSES |= {"ChatOllama": "ollama", "Ollama": "ollama"}
SECTIONS = {"agent": "agents", "task": "tasks", "crew": "crew", "llm": "llms", "tool": "tools"}


@dataclass(slots=True)
class Python:
    """An expression flowrun does not evaluate, as its source text."""

    text: str


@dataclass(slots=True)
class ToolRef:
    """`SomeTool(...)` in a tools list: the class and the module it was imported from."""

    name: str
    module: str | None
    arguments: bool  # called with arguments (their values are Python flowrun does not evaluate)
    text: str = ""  # the call as written


@dataclass(slots=True)
class MethodRef:
    """`self.name()`: another method of the crew class."""

    name: str


@dataclass
class CrewCode:
    source: Source
    imports: dict[str, str] = field(default_factory=dict)  # name -> module it comes from
    config_paths: dict[str, str] = field(default_factory=dict)  # agents_config / tasks_config
    module_names: dict[str, ast.expr] = field(default_factory=dict)  # `name = ...` once at the top
    scope: dict[str, ast.expr] = field(default_factory=dict)  # those and the method's own
    attributes: dict[str, ast.expr] = field(default_factory=dict)  # the class's: read as `self.name`

    def section(self, name: str) -> Doc:
        found: Doc = self.source.data.setdefault(name, {})
        return found

    @property
    def order(self) -> list[str]:
        found: list[str] = self.source.data.setdefault("order", [])
        return found


def read_crew_code(path: Path, display: str) -> tuple[CrewCode | None, list[Diagnostic]]:
    """The crew class of `path`, or None (a file without one is no crew definition)."""
    text = read_limited(path)
    if not isinstance(text, str):
        return None, [Diagnostic(display, text.line, text.column, "", text.message, text.hint, text.code)]
    try:
        tree = ast.parse(text, filename=display)
    except SyntaxError as e:
        message = f"crew.py does not parse: {e.msg}"
        return None, [
            Diagnostic(
                display, e.lineno or 1, e.offset or 1, "", message, "fix the Python syntax", "python-syntax"
            )
        ]
    code = CrewCode(Source(path=path, display=display, data={}, text=text))
    code.imports = _imports(tree)
    code.module_names = _assigned(tree.body)
    crew_class = next(
        (n for n in tree.body if isinstance(n, ast.ClassDef) and _decorated(n, "CrewBase")), None
    )
    if crew_class is None:
        return None, []
    code.source.values[()] = (crew_class.lineno, crew_class.col_offset + 1)
    _read_class(crew_class, code)
    return code, []


def _imports(tree: ast.Module) -> dict[str, str]:
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                found[alias.asname or alias.name] = node.module
    return found


def _assigned(body: list[ast.stmt]) -> dict[str, ast.expr]:
    """The names bound once by `name = expression` in `body` (a module's or a method's
    statements, nested blocks included, nested functions and classes not; a name bound twice is
    left out: which value a keyword sees would depend on the run)."""
    found: dict[str, ast.expr] = {}
    twice: set[str] = set()
    pending = list(body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in found:
                twice.add(name)
            found[name] = node.value
        pending += [child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)]
    return {name: value for name, value in found.items() if name not in twice}


def _decorated(node: ast.ClassDef | ast.FunctionDef, name: str) -> bool:
    return any(_decorator_name(d) == name for d in node.decorator_list)


def _decorator_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def _read_class(crew_class: ast.ClassDef, code: CrewCode) -> None:
    code.attributes = _assigned(crew_class.body)
    for node in crew_class.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in ("agents_config", "tasks_config") and isinstance(
                node.value, ast.Constant
            ):
                code.config_paths[node.targets[0].id] = str(node.value.value)
        if not isinstance(node, ast.FunctionDef):
            continue
        kind = next((d for d in DECORATORS if _decorated(node, d)), None)
        if kind is None:
            continue
        section = SECTIONS[kind]
        code.scope = {**code.module_names, **_assigned(node.body)}
        where: PathKey = (section, node.name) if kind != "crew" else (section,)
        code.source.values[where] = (node.lineno, node.col_offset + 1)
        if kind == "task":
            code.order.append(node.name)
        returned = _returned(node)
        if kind in ("llm", "tool"):
            code.section(section)[node.name] = _value(returned, code) if returned is not None else None
            continue
        kwargs = _call_kwargs(returned, where, code) if isinstance(returned, ast.Call) else {}
        if kind == "crew":
            code.source.data["crew"] = kwargs
        else:
            code.section(section)[node.name] = kwargs


def _returned(func: ast.FunctionDef) -> ast.expr | None:
    """The expression the method returns (its last `return`)."""
    found = [n.value for n in ast.walk(func) if isinstance(n, ast.Return) and n.value is not None]
    return found[-1] if found else None


def _call_kwargs(call: ast.Call, where: PathKey, code: CrewCode) -> Doc:
    out: Doc = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            continue
        out[keyword.arg] = _value(keyword.value, code)
        code.source.keys[(*where, keyword.arg)] = (keyword.lineno, keyword.col_offset + 1)
        code.source.values[(*where, keyword.arg)] = (keyword.value.lineno, keyword.value.col_offset + 1)
    return out


def _value(node: ast.expr, code: CrewCode) -> object:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List | ast.Tuple):
        return [_value(item, code) for item in node.elts]
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Process":
        return node.attr
    if isinstance(node, ast.Subscript) and _self_attr(node.value) in ("agents_config", "tasks_config"):
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return {"config": key.value}
    if isinstance(node, ast.Call):
        return _call_value(node, code)
    if isinstance(node, ast.Name) and node.id in code.scope:  # `search_tool = SerperDevTool()` above
        return _bound(node, node.id, code.scope, code)
    attribute = _self_attr(node)
    if attribute is not None and attribute in code.attributes:  # `llm = LLM(...)` in the class
        return _bound(node, attribute, code.attributes, code)
    return Python(ast.unparse(node))


def _bound(node: ast.expr, name: str, names: dict[str, ast.expr], code: CrewCode) -> object:
    """The value of the expression bound to `name` (a name flowrun cannot read stays as written)."""
    bound = names.pop(name)  # (unbound while it is read: `a = b; b = a` ends)
    try:
        value = _value(bound, code)
    finally:
        names[name] = bound
    return Python(ast.unparse(node)) if isinstance(value, Python) else value


def _call_value(node: ast.Call, code: CrewCode) -> object:
    getter = node.func.value if isinstance(node.func, ast.Attribute) and node.func.attr == "get" else None
    if getter is not None and _self_attr(getter) in ("agents_config", "tasks_config") and node.args:
        key = node.args[0]  # self.agents_config.get("key")
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return {"config": key.value}
    method = _self_attr(node.func)
    if method is not None and not node.args and not node.keywords:
        return MethodRef(method)
    name = node.func.id if isinstance(node.func, ast.Name) else None
    if name == "LLM" or name in CHAT_CLASSES:
        settings = {k.arg: _value(k.value, code) for k in node.keywords if k.arg}
        if node.args and isinstance(node.args[0], ast.Constant):
            settings.setdefault("model", node.args[0].value)
        model = settings.get("model")
        if name in CHAT_CLASSES and isinstance(model, str) and "/" not in model:
            settings["model"] = f"{CHAT_CLASSES[name]}/{model}"  # LangChain's class names the provider
        return {"llm": settings}
    if name is not None and name[:1].isupper():
        return ToolRef(name, code.imports.get(name), bool(node.args or node.keywords), ast.unparse(node))
    return Python(ast.unparse(node))


def _self_attr(node: ast.expr) -> str | None:
    """`name` of `self.name`."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None
