"""The reference pages generated from the code at build time, so they cannot drift.

An mkdocs hook (`hooks:` in mkdocs.yml): a page that holds a line `<!-- generated: NAME -->` gets
that line replaced by the markdown NAME's generator makes from the installed flowrun:

- `manifest-keys`: every key of every manifest kind, from `flowrun.manifest.schema.export.kind_schema`
  (type, default, description, an example value checked against the key's schema);
- `cli`: every command of the click group in `flowrun.cli` (the lazy table loaded whole);
- `python-api`: the public names of `flowrun.__all__`, as mkdocstrings directives;
- `layout`: every package and module of engine/flowrun with its docstring's first line;
- `kinds`, or one family of them (`tool-kinds`, `presets`, ...): the registered kinds, from their
  registries (kind_lists.py).

tests/test_docs.py calls the generators too, to check they cover what they claim.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click
import yaml

# kind_lists.py sits beside this file; mkdocs puts this folder on sys.path, a test loading the
# file by its path does not
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import kind_lists

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)
ENGINE = Path(__file__).resolve().parents[2] / "engine" / "flowrun"
EXAMPLE_MAX = 110  # longer example values are left to the keys of the section below


# --- the hook ---------------------------------------------------------------------------------


def on_page_markdown(markdown: str, **_: Any) -> str:
    return MARKER.sub(lambda m: generate(m.group(1)), markdown)


def generate(name: str) -> str:
    generators: dict[str, Callable[[], str]] = {
        "manifest-keys": manifest_keys,
        "cli": cli_reference,
        "python-api": python_api,
        "layout": layout,
        **{kinds: functools.partial(kind_lists.generate, kinds, cell) for kinds in kind_lists.NAMES},
    }
    if name not in generators:
        raise ValueError(f"unknown generated section {name!r}; known: {', '.join(generators)}")
    return generators[name]()


def cell(text: str) -> str:
    """Text for a table cell: one line, no raw HTML, and outside code spans pipes and square
    brackets escaped (mkdocs-autorefs reads `tools[1][0]` as a cross-reference)."""
    parts = re.split(r"(`[^`]*`)", " ".join(text.split()))
    out = []
    for part in parts:
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append(part)  # Python-Markdown splits no cell at a pipe inside a code span
        else:
            escaped = part.replace("|", "\\|").replace("[", "\\[").replace("]", "\\]")
            out.append(escaped.replace("<", "&lt;").replace(">", "&gt;"))
    return "".join(out)


def code(value: str) -> str:
    fence = "``" if "`" in value else "`"
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def flow_yaml(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=10_000, sort_keys=False)
    text = text.strip()
    return text.removesuffix("\n...").removesuffix("...").strip()


# --- manifest keys ----------------------------------------------------------------------------


def manifest_kinds() -> list[str]:
    """The kinds `flowrun schema` knows, from its KIND argument's choices."""
    command = _commands()["schema"]
    (kind_param,) = [p for p in command.params if p.name == "kind"]
    assert isinstance(kind_param.type, click.Choice)
    return [str(c) for c in kind_param.type.choices]


class KindPage:
    """The sections of one kind: an object schema per section, reached at a key path."""

    def __init__(self, kind: str) -> None:
        import flowrun.runtime.kinds  # noqa: F401  (registers the kinds whose specs the schema holds)
        from flowrun.manifest.schema.export import kind_schema

        self.kind = kind
        self.schema = kind_schema(kind)
        self.defs: dict[str, Any] = self.schema.get("$defs", {})
        self.anchors: dict[str, str] = {}  # a $defs name -> its section's anchor
        self.queue: list[tuple[str, str, dict[str, Any], str]] = []  # anchor, path, schema, label

    def render(self) -> str:
        lines = [f"## `kind: {self.kind}` {{#kind-{self.kind}}}", ""]
        if self.schema.get("description"):
            lines += [self.schema["description"], ""]
        lines += self._table("", self.schema)
        while self.queue:
            anchor, path, schema, label = self.queue.pop(0)
            lines += [f"### `{path}`{label} {{#{anchor}}}", ""]
            if schema.get("description"):
                lines += [" ".join(schema["description"].split()), ""]
            lines += self._table(path, schema)
        return "\n".join(lines)

    def rows(self, path: str, schema: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any], bool]]:
        required = set(schema.get("required", []))
        for key, prop in schema.get("properties", {}).items():
            yield (f"{path}.{key}" if path else key), prop, key in required

    def _table(self, path: str, schema: dict[str, Any]) -> list[str]:
        out = ["| key | type | default | description | example |", "|---|---|---|---|---|"]
        for key_path, prop, required in self.rows(path, schema):
            kind = self.type_of(prop, key_path)
            default = "**required**" if required else _default(prop)
            example = self.example(prop, key_path)
            description = prop.get("description") or self._resolved(prop).get("description", "")
            out.append(f"| `{key_path}` | {kind} | {default} | {cell(description)} | {example} |")
        return [*out, ""]

    def _resolved(self, schema: dict[str, Any]) -> dict[str, Any]:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            resolved: dict[str, Any] = self.defs[ref.rsplit("/", 1)[-1]]
            return resolved
        return schema

    def section(self, schema: dict[str, Any], path: str, label: str = "") -> str:
        """The anchor of the section for an object schema (queued the first time it is seen)."""
        ref = schema.get("$ref")
        name = ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None
        if name is not None and name in self.anchors:
            return self.anchors[name]
        anchor = f"{self.kind}-" + re.sub(r"[^a-z0-9]+", "-", (name or path).lower()).strip("-")
        while anchor in {a for a, *_ in self.queue} or anchor in self.anchors.values():
            anchor += "-"
        if name is not None:
            self.anchors[name] = anchor
        self.queue.append((anchor, path, self._resolved(schema), label))
        return anchor

    def type_of(self, schema: dict[str, Any], path: str, label: str = "") -> str:
        resolved = self._resolved(schema)
        options = resolved.get("anyOf") or resolved.get("oneOf")
        if options:
            return " \\| ".join(self.type_of(o, path, _variant(self._resolved(o))) for o in options)
        if "const" in resolved:
            return code(flow_yaml(resolved["const"]))
        if "enum" in resolved:
            return " \\| ".join(code(flow_yaml(v)) for v in resolved["enum"])
        kind = resolved.get("type")
        if resolved.get("properties"):
            title = resolved.get("title") or "object"
            return f"[{title}](#{self.section(schema, path, label)})"
        if kind == "array":
            items = resolved.get("items")
            return "list of " + (self.type_of(items, path + "[]") if isinstance(items, dict) else "any")
        if kind == "object" or "patternProperties" in resolved:
            values = list(resolved.get("patternProperties", {}).values())
            extra = resolved.get("additionalProperties")
            value = values[0] if values else extra if isinstance(extra, dict) else None
            if value is None:
                return "map"
            return "map of name → " + self.type_of(value, path + ".NAME")
        if isinstance(kind, list):
            return " \\| ".join(kind)
        return _bounded(str(kind or "any"), resolved)

    def example(self, schema: dict[str, Any], path: str) -> str:
        """An example value valid for the key: the schema's own examples, an `e.g.` of its
        description, its default, else one made from the schema."""
        from jsonschema import Draft202012Validator

        from flowrun.providers.schema_samples import Unavailable, sample_value

        full = {**schema, "$defs": self.defs}
        validator = Draft202012Validator(full)
        candidates: list[Any] = list(schema.get("examples", []))
        candidates += _examples_in(schema.get("description") or "")
        if schema.get("default") is not None:
            candidates.append(schema["default"])
        try:
            candidates.append(sample_value(path.rsplit(".", 1)[-1], full, {}, full))
        except Unavailable:
            pass
        for value in [*candidates[:-1], *self._filled(schema, path), *candidates[-1:]]:
            if value in ({}, []):
                continue  # an empty map or list shows nothing: try the next candidate
            if validator.is_valid(value):
                text = flow_yaml(value)
                return code(text) if len(text) <= EXAMPLE_MAX else "(see its keys)"
        return ""

    def _filled(self, schema: dict[str, Any], path: str) -> list[Any]:
        """A one-entry list or map for a list or map key (its sample item under `example`)."""
        from flowrun.providers.schema_samples import Unavailable, sample_value

        resolved = self._resolved(schema)
        root = {**resolved, "$defs": self.defs}
        options = resolved.get("anyOf") or resolved.get("oneOf")
        if options:
            return [value for option in options for value in self._filled(option, path)]
        if "JSON Schema" in resolved.get("description", ""):
            return [{"type": "object", "properties": {"path": {"type": "string"}}}]
        if resolved.get("type") == "object" and resolved.get("additionalProperties") is True:
            return [{"example": "value"}]
        items = resolved.get("items")
        values = [*resolved.get("patternProperties", {}).values(), resolved.get("additionalProperties")]
        try:
            if resolved.get("properties"):
                base = sample_value(path, schema, {}, root)
                key, prop = next(iter(resolved["properties"].items()))
                return [{**base, key: base.get(key, sample_value(key, prop, {}, root))}]
            if isinstance(items, dict):
                return [[sample_value(path, items, {}, root)]]
            value = next((v for v in values if isinstance(v, dict)), None)
            if value is not None:
                entry = self._filled(value, "example") or [sample_value("example", value, {}, root)]
                return [{"example": entry[0]}]
        except Unavailable:
            pass
        return []


def _variant(schema: dict[str, Any]) -> str:
    """How a member of a union is told apart: its `const` key, else its one required key."""
    for key, prop in schema.get("properties", {}).items():
        if "const" in prop:
            return f" ({key}: {prop['const']})"
    required = schema.get("required", [])
    return f" (with `{required[0]}:`)" if len(required) == 1 else ""


def _default(schema: dict[str, Any]) -> str:
    if "default" not in schema or schema["default"] is None:
        return ""
    return code(flow_yaml(schema["default"]))


def _bounded(kind: str, schema: dict[str, Any]) -> str:
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if low is not None and high is not None:
        return f"{kind} {low}–{high}"
    if low is not None:
        return f"{kind} {'>' if 'exclusiveMinimum' in schema else '≥'} {low}"
    if high is not None:
        return f"{kind} {'<' if 'exclusiveMaximum' in schema else '≤'} {high}"
    return kind


def _examples_in(description: str) -> list[Any]:
    """Values a description gives after `e.g.`, read as YAML: a code span, a quoted text, a
    flow mapping or list, else the words up to the end of the clause."""
    found: list[Any] = []
    for match in re.finditer(r"e\.g\.\s*", description):
        rest = description[match.end() :]
        spans = re.match(r"`([^`]+)`|'[^']+'|\"[^\"]+\"|\{[^}]*\}|\[[^\]]*\]", rest)
        texts = [spans.group(1) or spans.group(0)] if spans else []
        texts.append(re.split(r"[;)]|, | or |\.\s|\.$", rest)[0])
        for text in texts:
            try:
                found.append(yaml.safe_load(text))
            except yaml.YAMLError:
                continue
    return found


def manifest_keys() -> str:
    return "\n".join(KindPage(kind).render() for kind in manifest_kinds())


# --- the command line -------------------------------------------------------------------------


def _commands() -> dict[str, click.Command]:
    """Every command of the lazy group, loaded."""
    from flowrun.cli import main

    ctx = click.Context(main, info_name="flowrun")
    found: dict[str, click.Command] = {}
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        assert command is not None, name
        found[name] = command
    return found


def all_commands() -> list[tuple[str, click.Command, click.Context]]:
    """(the command's path, the command, a context for it), groups and their subcommands."""
    from flowrun.cli import main

    root = click.Context(main, info_name="flowrun")
    out: list[tuple[str, click.Command, click.Context]] = [("flowrun", main, root)]
    for name, command in _commands().items():
        ctx = click.Context(command, info_name=name, parent=root)
        out.append((f"flowrun {name}", command, ctx))
        if isinstance(command, click.Group):
            for sub_name in command.list_commands(ctx):
                sub = command.get_command(ctx, sub_name)
                assert sub is not None, sub_name
                out.append(
                    (f"flowrun {name} {sub_name}", sub, click.Context(sub, info_name=sub_name, parent=ctx))
                )
    return out


def cli_reference() -> str:
    lines: list[str] = []
    for path, command, ctx in all_commands():
        anchor = re.sub(r"[^a-z0-9]+", "-", path.lower())
        lines += [f"## `{path}` {{#{anchor}}}", ""]
        usage = " ".join([path, *command.collect_usage_pieces(ctx)])
        lines += ["```", usage, "```", ""]
        lines += [*_help_text(command.help or ""), ""]
        params = [p for p in command.params if not getattr(p, "hidden", False)]
        arguments = [p for p in params if isinstance(p, click.Argument)]
        options = [p for p in params if isinstance(p, click.Option)]
        if arguments:
            names = ", ".join(code(a.make_metavar(ctx)) for a in arguments)
            lines += [f"Arguments: {names}.", ""]
        if options:
            lines += ["| option | value | default | meaning |", "|---|---|---|---|"]
            for option in options:
                lines.append(_option_row(option, ctx))
            lines.append("")
        if isinstance(command, click.Group) and path != "flowrun":
            subs = ", ".join(f"[`{path} {name}`](#{anchor}-{name})" for name in command.list_commands(ctx))
            lines += [f"Commands: {subs}.", ""]
    return "\n".join(lines)


def _help_text(help_text: str) -> list[str]:
    """Click's help: paragraphs, and `\\b` blocks as preformatted text."""
    out: list[str] = []
    for paragraph in inspect.cleandoc(help_text).split("\n\n"):
        if paragraph.startswith("\b"):
            out += ["```", paragraph.removeprefix("\b").strip("\n"), "```", ""]
        else:
            out += [" ".join(paragraph.split()), ""]
    return out


def _option_row(option: click.Option, ctx: click.Context) -> str:
    names = ", ".join(option.opts)
    if option.secondary_opts:
        names += " / " + ", ".join(option.secondary_opts)
    value = "" if option.is_flag else option.make_metavar(ctx)
    default = option.get_default(ctx, call=False)
    shown = "" if default is None or option.is_flag or "UNSET" in repr(default) else str(default)
    if option.multiple:
        value += " (repeatable)"
    return f"| {code(names)} | {cell(value)} | {cell(shown)} | {cell(option.help or '')} |"


# --- the Python API ---------------------------------------------------------------------------


def public_api() -> list[tuple[str, str]]:
    """(module, name) of each public name of `flowrun.__all__`, where it is defined."""
    import flowrun

    out = []
    for name in flowrun.__all__:
        if name.startswith("__"):
            continue
        value = getattr(flowrun, name)
        out.append((value.__module__, name))
    return out


def python_api() -> str:
    lines = []
    for module, name in public_api():
        lines += [
            f"::: {module}.{name}",
            "    options:",
            "      heading_level: 2",
            "      show_root_full_path: false",
            "",
        ]
    return "\n".join(lines)


# --- the source layout ------------------------------------------------------------------------


def first_line(path: Path) -> str:
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    return (docstring or "").strip().split("\n\n")[0].replace("\n", " ").split(". ")[0].rstrip(".")


def source_files() -> list[Path]:
    return sorted(p for p in ENGINE.rglob("*.py") if "__pycache__" not in p.parts)


def layout() -> str:
    lines = []
    packages = sorted({p.parent for p in source_files()})
    for package in packages:
        relative = package.relative_to(ENGINE.parent)
        dotted = ".".join(relative.parts)
        lines += [f"### `{relative}/` {{#{dotted.replace('.', '-')}}}", ""]
        init = package / "__init__.py"
        if init.exists():
            lines += [first_line(init) + ".", ""]
        lines += ["| module | what it holds |", "|---|---|"]
        for module in sorted(p for p in package.glob("*.py") if p.name != "__init__.py"):
            lines.append(f"| `{module.name}` | {cell(first_line(module))} |")
        subpackages = sorted(p for p in packages if p.parent == package)
        for sub in subpackages:
            anchor = ".".join(sub.relative_to(ENGINE.parent).parts).replace(".", "-")
            lines.append(f"| [`{sub.name}/`](#{anchor}) | {cell(first_line(sub / '__init__.py'))} |")
        lines.append("")
    return "\n".join(lines)
