"""The built-in manifests of the file, shell and git tools: well-formed, valid schemas, and in
step with the Python functions they name."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from flowrun.manifest.specs import ToolManifest

TOOLS_D = Path(__file__).resolve().parent.parent / "tools.d"
NAMES = [
    "read_file",
    "write_file",
    "edit_file",
    "list_directory",
    "glob",
    "grep",
    "delete_file",
    "create_directory",
    "stream_read_file",
    "continue_stream_read",
    "execute_shell",
    "get_shell_output",
    "kill_shell",
    "git",
]
PATH_POLICY = {"base_dir", "read_only", "paths", "write_paths"}
PATH_TOOLS = set(NAMES) - {"continue_stream_read", "execute_shell", "get_shell_output", "kill_shell", "git"}


def load(name: str) -> dict[str, Any]:
    raw = yaml.safe_load((TOOLS_D / f"{name}.yaml").read_text())
    assert isinstance(raw, dict)
    return raw


def function_of(manifest: dict[str, Any]) -> Any:
    module, _, attr = manifest["implementation"]["python"].partition(":")
    return getattr(importlib.import_module(module), attr)


@pytest.mark.parametrize("name", NAMES)
def test_manifest_shape(name: str) -> None:
    manifest = load(name)
    assert manifest["version"] == 1 and manifest["kind"] == "tool" and manifest["name"] == name
    assert {"description", "parameters", "implementation", "config", "defaults"} <= manifest.keys()
    assert len(manifest["description"]) > 60
    ToolManifest.model_validate(manifest)  # the engine's own loader accepts it


@pytest.mark.parametrize("name", NAMES)
def test_schemas_are_valid_and_defaults_fit(name: str) -> None:
    manifest = load(name)
    params, config = manifest["parameters"], manifest["config"]
    jsonschema.Draft202012Validator.check_schema(params)
    jsonschema.Draft202012Validator.check_schema(config)
    assert params["type"] == "object" and params["additionalProperties"] is False
    assert config["type"] == "object" and config["additionalProperties"] is False
    jsonschema.Draft202012Validator(config).validate(manifest["defaults"])
    if name in PATH_TOOLS:
        assert config["properties"].keys() >= PATH_POLICY


@pytest.mark.parametrize("name", NAMES)
def test_implementation_matches_parameters(name: str) -> None:
    manifest = load(name)
    fn = function_of(manifest)
    assert inspect.iscoroutinefunction(fn)
    signature = inspect.signature(fn)
    keywords = {n: p for n, p in signature.parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    properties = manifest["parameters"]["properties"]
    assert set(properties) == set(keywords), "every argument the model may send is a keyword of the function"
    required = set(manifest["parameters"].get("required", []))
    for arg, param in keywords.items():
        assert (param.default is inspect.Parameter.empty) == (arg in required), arg
        if "default" in properties[arg]:
            assert properties[arg]["default"] == param.default, arg


def test_every_manifest_here_is_covered() -> None:
    implemented_here = {
        path.stem
        for path in TOOLS_D.glob("*.yaml")
        if load(path.stem)["implementation"].get("python", "").split(":")[0]
        in {
            "flowrun.tools.files",
            "flowrun.tools.file_edit",
            "flowrun.tools.file_search",
            "flowrun.tools.file_stream",
            "flowrun.tools.shell",
            "flowrun.tools.git",
        }
    }
    assert implemented_here == set(NAMES)


@pytest.mark.parametrize("path", sorted(TOOLS_D.glob("*.yaml")), ids=lambda p: p.stem)
def test_a_description_says_what_the_arguments_allow(path: Path) -> None:
    """A tool that takes an `encoding` does not describe itself as reading or writing UTF-8 only."""
    manifest = yaml.safe_load(path.read_text())
    takes = manifest.get("parameters", {}).get("properties", {})
    if "encoding" in takes and "UTF-8" in manifest["description"]:
        assert "encoding" in manifest["description"], manifest["description"]
