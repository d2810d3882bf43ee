"""A foreign file's reference to the user's own Python (ADK's `pkg.module.func`, CrewAI's
`custom:x`, `{"python": "pkg.mod.f"}` or a `BaseTool` subclass) as a flowrun tool: the function's
module is found on disk and read with `ast` (never imported), and a module-level function with a
plain signature (named parameters of simple types, no framework context object) becomes a
`function` tool whose parameters come from its annotations and whose description from its
docstring. Anything else is an error that names the reference and the tools.d manifest that
would declare it."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path

from flowrun.manifest.foreign.conversion import Conversion, Doc, flowrun_name
from flowrun.manifest.yaml_source import PathKey, Source
from flowrun.paths import display_path

# parameters a framework passes itself: not the model's to fill
CONTEXT_PARAMETERS = ("tool_context", "context", "ctx", "callback_context", "self", "cls")
SIMPLE = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "dict": "object",
    "list": "array",
}
PARENTS = 4  # how far up from the project folder a module's package is looked for


@dataclass(slots=True)
class FunctionTool:
    """A tool manifest made from a Python function, and where its module is imported from."""

    manifest: Doc
    import_root: Path


def refuse_tool(
    conv: Conversion, src: Source, where: PathKey, reference: str, name: str, why: str = ""
) -> None:
    """The error for a Python tool flowrun cannot run as it is."""
    reason = why or "it is the project's own Python, which flowrun reads but does not run to learn what it is"
    message = f"tool '{reference}': {reason}"
    hint = (
        f"write a plain function (named, typed parameters; it returns text or JSON) and declare it in "
        f"tools.d/{name}.yaml with `implementation: {{function: package.module:function}}`"
    )
    conv.note(src, where, f"refused: {reason}", "dropped")
    conv.problem(src, where, message, hint, "python-tool")


def find_module(module: str, root: Path) -> tuple[Path, Path] | None:
    """(the module's file, the folder it is imported from) for `pkg.mod`, looked for in `root`
    and the folders above it."""
    parts = module.split(".")
    folder = root.resolve()
    for _ in range(PARENTS + 1):
        for candidate in (folder.joinpath(*parts).with_suffix(".py"), folder.joinpath(*parts, "__init__.py")):
            if candidate.is_file():
                return candidate, folder
        if folder.parent == folder:
            break
        folder = folder.parent
    return None


def function_tool(
    conv: Conversion, src: Source, where: PathKey, dotted: str, root: Path, name: str | None = None
) -> FunctionTool | None:
    """`pkg.module.func` (or `pkg.module:func`) as a function tool, or None with an error."""
    module, _, func = dotted.partition(":") if ":" in dotted else dotted.rpartition(".")
    tool_name = flowrun_name(name or func or dotted)
    if not module or not func:
        refuse_tool(
            conv,
            src,
            where,
            dotted,
            tool_name,
            "it names no module and function (write package.module.function)",
        )
        return None
    found = find_module(module, root)
    if found is None:
        shown = display_path(root)
        refuse_tool(
            conv, src, where, dotted, tool_name, f"module '{module}' is not found from {shown} or above it"
        )
        return None
    path, import_root = found
    conv.read(path)
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"), filename=str(path))
    except (SyntaxError, OSError) as e:
        refuse_tool(conv, src, where, dotted, tool_name, f"{path.name} cannot be read ({e})")
        return None
    node = next((n for n in tree.body if getattr(n, "name", None) == func), None)
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        what = (
            "a class (a tool object flowrun cannot call as a function)"
            if isinstance(node, ast.ClassDef)
            else "not a function defined in it"
        )
        refuse_tool(conv, src, where, dotted, tool_name, f"'{func}' of {path.name} is {what}")
        return None
    parameters, problem = _parameters(node)
    if problem is not None:
        refuse_tool(
            conv, src, where, dotted, tool_name, f"{func}{ast.unparse(node.args).join('()')}: {problem}"
        )
        return None
    description = (ast.get_docstring(node) or "").strip().split("\n\n")[0].strip() or f"The {func} function."
    manifest = {
        "version": 1,
        "kind": "tool",
        "name": tool_name,
        "description": description,
        "parameters": parameters,
    }
    implementation = {"function": f"{module}:{func}"}
    if import_root != root.resolve():  # the folder the module is imported from, for the tool kind
        implementation["path"] = os.path.relpath(import_root, root.resolve())
    manifest["implementation"] = implementation
    conv.note(src, where, f"tool {tool_name}: the function {module}:{func} called with the model's arguments")
    return FunctionTool(manifest, import_root)


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[Doc, str | None]:
    """The JSON Schema of a plain signature, or why it is not plain."""
    args = node.args
    if args.vararg or args.kwarg or args.posonlyargs:
        return {}, "*args, **kwargs and positional-only parameters are not plain"
    named = [*args.args, *args.kwonlyargs]
    defaults = [None] * (len(args.args) - len(args.defaults)) + list(args.defaults) + list(args.kw_defaults)
    properties: Doc = {}
    required: list[str] = []
    for arg, default in zip(named, defaults, strict=True):
        if arg.arg in CONTEXT_PARAMETERS or _is_context(arg.annotation):
            return {}, f"'{arg.arg}' is a framework's context object, which flowrun does not have"
        schema = _schema(arg.annotation)
        if schema is None:
            return (
                {},
                f"the type of '{arg.arg}' ({ast.unparse(arg.annotation) if arg.annotation else '?'}) "
                "is not a plain one",
            )
        properties[arg.arg] = schema
        if default is None:
            required.append(arg.arg)
        elif isinstance(default, ast.Constant):
            properties[arg.arg] = {**schema, "default": default.value}
    out: Doc = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = required
    return out, None


def _is_context(annotation: ast.expr | None) -> bool:
    return annotation is not None and "Context" in ast.unparse(annotation)


def _schema(annotation: ast.expr | None) -> Doc | None:
    """A JSON Schema for a simple annotation; None for one that is not simple."""
    if annotation is None:
        return {}
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(annotation, ast.Name):
        return (
            {"type": SIMPLE[annotation.id]}
            if annotation.id in SIMPLE
            else {}
            if annotation.id == "Any"
            else None
        )
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name):
        outer = annotation.value.id
        if outer in ("list", "List", "Sequence"):
            inner = _schema(annotation.slice)
            return None if inner is None else {"type": "array", "items": inner}
        if outer in ("dict", "Dict", "Mapping"):
            return {"type": "object"}
        if outer == "Optional":
            return _schema(annotation.slice)
        if outer == "Literal":
            items = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
            values = [i.value for i in items if isinstance(i, ast.Constant)]
            return {"enum": values} if len(values) == len(items) else None
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [
            s
            for s in (annotation.left, annotation.right)
            if not (isinstance(s, ast.Constant) and s.value is None)
        ]
        return _schema(sides[0]) if len(sides) == 1 else {}
    return None
