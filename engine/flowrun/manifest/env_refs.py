"""Environment variables in model settings: `${VAR}` and `${VAR:-default}` in a model's `model`,
`base_url`, `api_key_env`, `auth_token_env`, `headers` and `extra_headers` values, and the
variables the seeds' users set for a default (OPENAI_MODEL, LLM_BASE_URL).

A reference is replaced by the variable's value when the run resolves the model; a variable
that is unset (or empty) takes the default after `:-`, and without one `validate` reports it at
its file:line (a run stops before it starts when a model it uses has one). `$VAR` without braces
is left as it is. The values are read when a run starts, never written into a record."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from flowrun.errors import ManifestError
from flowrun.manifest.diagnostics import Diagnostic

if TYPE_CHECKING:
    from flowrun.manifest.specs import ModelSpec
    from flowrun.manifest.yaml_source import Source

NAME = r"[A-Za-z_][A-Za-z0-9_]*"
REFERENCE = re.compile(r"\$\{(" + NAME + r")(?::-([^}]*))?\}")
TEXT_FIELDS = ("model", "base_url", "api_key_env", "auth_token_env")  # a string each
MAP_FIELDS = ("headers", "extra_headers")  # their values
# `--model openai` (or `openai:`) without a model id: the model the provider's variable names
DEFAULT_MODEL_ENV = {"openai": "OPENAI_MODEL", "anthropic": "ANTHROPIC_MODEL"}
# the base URL of `openai` models that name none, after the SDK's own OPENAI_BASE_URL
BASE_URL_ENV = "LLM_BASE_URL"


NAME_FIELDS = ("api_key_env", "auth_token_env")  # their value is a variable's name, never a secret


class UnsetVariable(ManifestError):
    """A model setting names a variable that is not set and gives no default."""

    def __init__(self, model: str, field: tuple[str, ...], name: str) -> None:
        where = ".".join(field)
        super().__init__(
            f"model '{model}': {where} names ${{{name}}}, which is not set",
            unset_hint(name),
        )
        self.model = model
        self.field = field
        self.name = name


def unset_hint(name: str) -> str:
    return (
        f"set {name} (in the environment, or in a .env file next to the workflow or in the current "
        f"folder), or give a default: ${{{name}:-VALUE}}"
    )


def _value(name: str, environ: Mapping[str, str]) -> str | None:
    return environ.get(name) or None  # empty counts as unset, as with `:-`


def expand(text: str, environ: Mapping[str, str] | None = None) -> tuple[str, list[str]]:
    """`text` with each reference replaced, and the variables that were unset with no default
    (their references are left as they were)."""
    env = os.environ if environ is None else environ
    unset: list[str] = []

    def replace(match: re.Match[str]) -> str:
        value = _value(match.group(1), env)
        if value is not None:
            return value
        if match.group(2) is not None:
            return match.group(2)
        unset.append(match.group(1))
        return match.group(0)

    return REFERENCE.sub(replace, text), unset


def _settings(spec: ModelSpec) -> Iterator[tuple[tuple[str, ...], str]]:
    """(where, text) of every setting that may hold references."""
    for name in TEXT_FIELDS:
        value = getattr(spec, name)
        if isinstance(value, str):
            yield (name,), value
    for name in MAP_FIELDS:
        for key, value in getattr(spec, name).items():
            yield (name, key), value


def referenced(spec: ModelSpec) -> set[str]:
    """The variables a model's settings name."""
    return {m.group(1) for _, text in _settings(spec) for m in REFERENCE.finditer(text)}


def expanded(
    name: str, spec: ModelSpec, environ: Mapping[str, str] | None = None, strict: bool = True
) -> ModelSpec:
    """The model with its references replaced; UnsetVariable for the first one that cannot be
    (not `strict`: left as written, for a replay, which sends nothing)."""
    if "${" not in repr([text for _, text in _settings(spec)]):
        return spec
    update: dict[str, object] = {}
    tables: dict[str, dict[str, object]] = {}  # a mapping setting (headers) copied once
    for where, text in _settings(spec):
        value, unset = expand(text, environ)
        if unset and strict:
            raise UnsetVariable(name, where, unset[0])
        if where[0] in NAME_FIELDS and value != text and not re.fullmatch(NAME, value):
            raise ManifestError(f"model '{name}': {_not_a_name(where[0], text)}", NOT_A_NAME_HINT)
        if value != text:
            if len(where) == 1:
                update[where[0]] = value
            else:
                table = tables.setdefault(where[0], dict(getattr(spec, where[0])))
                table[where[1]] = value
                update[where[0]] = table
    return spec.model_copy(update=update)


NOT_A_NAME_HINT = "the variable must hold the NAME of the variable with the key (e.g. OPENAI_API_KEY)"


def _not_a_name(field: str, text: str) -> str:
    # the value is never shown: it may be the secret itself
    return f"{field} is {text}, whose value is not a variable name"


def unset_diagnostics(src: Source, name: str, spec: ModelSpec) -> list[Diagnostic]:
    """An error at its file:line for each reference to an unset variable without a default
    (and for a key variable's name taken from a variable that holds something else)."""
    out: list[Diagnostic] = []
    for where, text in _settings(spec):
        value, unset = expand(text)
        at = ("models", name, *where)
        for variable in unset:
            message = f"model '{name}': {'.'.join(where)} names ${{{variable}}}, which is not set"
            out.append(src.diag(at, message, unset_hint(variable), "unset-variable"))
        if not unset and where[0] in NAME_FIELDS and value != text and not re.fullmatch(NAME, value):
            out.append(src.diag(at, f"model '{name}': {_not_a_name(where[0], text)}", NOT_A_NAME_HINT))
    return out


def default_model_ref(ref: str) -> tuple[str, str | None] | None:
    """`openai` / `openai:` (and `anthropic`): (the variable, its value or None); None for any
    other reference."""
    provider = ref[:-1] if ref.endswith(":") else ref
    variable = DEFAULT_MODEL_ENV.get(provider)
    if variable is None:
        return None
    return variable, _value(variable, os.environ)


def default_base_url(provider: str) -> str | None:
    """LLM_BASE_URL for an `openai` model without `base_url` when OPENAI_BASE_URL (which the SDK
    reads itself) is not set."""
    if provider != "openai" or _value("OPENAI_BASE_URL", os.environ):
        return None
    return _value(BASE_URL_ENV, os.environ)
