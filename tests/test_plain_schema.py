"""Tool arguments checked without jsonschema (flowrun/plain_schema.py) are accepted and
refused exactly as jsonschema's Draft 2020-12 validator (the tools' validator, no format
checker) accepts and refuses them: generated schemas and values are given to both. A schema
holding a keyword the plain check does not know is left to jsonschema whole. Through the API,
a run whose calls are valid never imports jsonschema; an invalid call gets jsonschema's words."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from support.env import clean_env
from support.paths import REPO
from support.runs import events, folders
from support.wire_server import Reply, Script, ToolCallSpec, WireServer

from flowrun.plain_schema import KEYWORDS, compile_schema, parameters_check

NAMES = st.sampled_from(["path", "mode", "n", "items", "x"])
NUMBERS = st.integers(-5, 5) | st.sampled_from([0.5, 2.0, -1.5])
SCALARS = st.none() | st.booleans() | NUMBERS | st.text(max_size=4) | st.sampled_from(["a", "b", "path"])
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(NAMES, inner, max_size=4),
    max_leaves=12,
)
TYPE_NAMES = st.sampled_from(["object", "array", "string", "boolean", "integer", "number", "null"])


def plain_schemas() -> st.SearchStrategy[Any]:
    """Schemas built from the keywords the plain check handles, with annotations among them."""

    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        keywords = st.fixed_dictionaries(
            {},
            optional={
                "type": TYPE_NAMES | st.lists(TYPE_NAMES, min_size=1, max_size=3),
                "properties": st.dictionaries(NAMES, inner, max_size=3),
                "required": st.lists(NAMES, max_size=3, unique=True),
                "additionalProperties": inner,
                "items": inner,
                "enum": st.lists(st.sampled_from(["a", "b", "path", ""]), min_size=1, max_size=3),
                "minimum": NUMBERS,
                "maximum": NUMBERS,
                "exclusiveMinimum": NUMBERS,
                "exclusiveMaximum": NUMBERS,
                "minLength": st.integers(0, 3),
                "maxLength": st.integers(0, 3),
                "minItems": st.integers(0, 3),
                "maxItems": st.integers(0, 3),
                "format": st.sampled_from(["date", "email"]),
                "description": st.text(max_size=3),
                "default": SCALARS,
                "x-note": SCALARS,
            },
        )
        return keywords | st.booleans()

    return st.recursive(st.booleans() | st.just({}), extend, max_leaves=8)


def jsonschema_valid(schema: Any, value: Any) -> bool:
    return not any(Draft202012Validator(schema).iter_errors(value))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=plain_schemas(), value=VALUES)
def test_plain_schemas_are_checked_as_jsonschema_checks_them(schema: Any, value: Any) -> None:
    check = compile_schema(schema)
    assert check is not None, schema  # every one of these is the plain check's
    assert check(value) == jsonschema_valid(schema, value), (schema, value)


@settings(max_examples=200, deadline=None)
@given(
    value=VALUES,
    keyword=st.sampled_from(
        [
            ("pattern", "^a"),
            ("anyOf", [{"type": "string"}]),
            ("$ref", "#/$defs/x"),
            ("const", 1),
            ("enum", [1, "a"]),
            ("uniqueItems", True),
            ("patternProperties", {"^p": {"type": "string"}}),
            ("minProperties", 1),
            ("prefixItems", [{"type": "string"}]),
        ]
    ),
    nested=st.booleans(),
)
def test_other_keywords_leave_the_whole_schema_to_jsonschema(
    value: Any, keyword: tuple[str, Any], nested: bool
) -> None:
    inner: dict[str, Any] = {keyword[0]: keyword[1]}
    schema = {"type": "object", "properties": {"path": inner}} if nested else inner
    assert compile_schema(schema) is None
    assert parameters_check(json.dumps(schema, sort_keys=True))(value) is False  # jsonschema decides


def test_values_json_does_not_make_are_left_to_jsonschema() -> None:
    from decimal import Decimal

    check = compile_schema({"type": "object", "properties": {"n": {"maximum": 1}}})
    assert check is not None
    assert check({"n": 1}) and not check({"n": 2})
    assert not check({"n": Decimal(0)}) and not check({"n": (1,)}) and not check((("n", 1),))


def test_the_keywords_are_jsonschemas_validation_keywords() -> None:
    assert set(Draft202012Validator.VALIDATORS) == KEYWORDS


def test_the_builtin_tools_schemas_are_plain() -> None:
    """What the built-in tools declare is checked without jsonschema (so a run calling only
    them never imports it)."""
    for manifest in sorted((REPO / "tools.d").glob("*.yaml")):
        parameters = yaml.safe_load(manifest.read_text())["parameters"]
        assert compile_schema(parameters) is not None, manifest.name


AGENT = "version: 1\nkind: agent\nname: solo\nprompt: You are solo.\ntools: [list_directory]\n"
WORKFLOW = """\
version: 1
kind: workflow
name: solo
models:
  m: {provider: openai, model: m, api_key_env: PLAIN_KEY, stream: false}
default_model: m
entry: solo
"""
RUN = """\
import sys
import flowrun
seen = []
def on_event(event):
    if event.type == "tool_result":
        seen.append((event.result.error.code if event.result.error else "ok", "jsonschema" in sys.modules))
result = flowrun.load("wf.yaml").run_sync({}, runs_dir="runs", on_event=on_event)
print(result.status, seen)
"""


def test_a_run_whose_calls_are_valid_never_imports_jsonschema(tmp_path: Path) -> None:
    (tmp_path / "agents.d").mkdir()
    (tmp_path / "agents.d" / "solo.yaml").write_text(AGENT)
    (tmp_path / "wf.yaml").write_text(WORKFLOW)
    calls = [ToolCallSpec("list_directory", {"path": "."}), ToolCallSpec("list_directory", {"path": 5})]
    replies = [Reply(tool_calls=[calls[0]]), Reply(tool_calls=[calls[1]]), Reply(text="done")]
    env = clean_env(
        {"PLAIN_KEY": "k", "FLOWRUN_CACHE_DIR": str(tmp_path / "cache")}
    )  # warm: checking imports it
    with WireServer(Script({"solo": replies}, {"solo": "You are solo"})) as server:
        env["OPENAI_BASE_URL"] = server.openai_base_url
        for _ in range(2):  # the first process checks the manifests (which uses jsonschema)
            done = subprocess.run(
                [sys.executable, "-c", RUN],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "completed [('ok', False), ('INVALID_PARAM', True)]"
    newest = max(folders(tmp_path / "runs"), key=lambda p: p.stat().st_mtime)
    results = [e for e in events(newest) if e["type"] == "tool_result"]
    invalid = Draft202012Validator({"type": "string"}).iter_errors(5)
    assert f"path: {next(invalid).message}" in results[1]["result"]["text"]  # jsonschema's words
