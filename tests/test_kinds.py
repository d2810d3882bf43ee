"""Kinds own both sides. Every registered tool kind, step kind, context strategy and provider has
a manifest side; every member of a manifest union is a registered kind; and a throw-away tool
kind, added as one module and one registration line, is checked by `validate`, described by
the schema and run by a dry run like a built-in one."""

from __future__ import annotations

import json
import typing
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.paths import REPO
from support.project import write_files

import flowrun
from flowrun.cli import main
from flowrun.manifest import kinds as manifest_kinds
from flowrun.manifest.specs import ImplementationSpec, StepSpec, StrategySpec
from flowrun.providers.base import Provider
from flowrun.providers.registry import PROVIDERS, provider_class
from flowrun.runtime import kinds
from flowrun.runtime.loop.contracts import ContextStrategy, ToolKind
from flowrun.runtime.steps.base import StepKind

SCHEMA = REPO / "schema"


def _refs(node: dict[str, typing.Any]) -> set[str]:
    return {option["$ref"].rpartition("/")[2] for option in node["oneOf"]}


def test_every_tool_kind_has_both_sides() -> None:
    assert list(kinds.TOOL_KINDS) == [k.name for k in manifest_kinds.tool_kinds()]
    for name, kind in kinds.TOOL_KINDS.items():
        assert ToolKind in type(kind).__mro__, f"{name}: not a ToolKind"
        assert kind.name == name
        impl = kind.implementation
        if impl is not None:  # declared in tools.d under `implementation: {NAME: ...}`
            assert issubclass(impl, ImplementationSpec) and impl.kind == name
            assert name in impl.model_fields, f"{impl.__name__} is tagged by its key '{name}'"
        for method in ("claims", "check_entry", "bind", "invoke", "prepare", "aclose"):
            assert callable(getattr(kind, method)), f"{name}.{method}"


def test_every_step_kind_and_strategy_has_both_sides() -> None:
    for name, step in kinds.STEP_KINDS.items():
        assert StepKind in type(step).__mro__ and step.name == name
        assert issubclass(step.spec, StepSpec) and step.spec.kind == name and name in step.spec.model_fields
    for name, strategy in kinds.STRATEGIES.items():
        assert ContextStrategy in type(strategy).__mro__ and strategy.name == name
        assert issubclass(strategy.spec, StrategySpec)
        assert typing.get_args(strategy.spec.model_fields["strategy"].annotation) == (name,)


def test_every_provider_declares_its_manifest_side() -> None:
    for name in PROVIDERS:
        cls = provider_class(name)
        assert issubclass(cls, Provider)
        for attribute in ("key_env", "token_env", "needs_key", "requires"):
            assert attribute in {a for c in cls.__mro__ for a in vars(c)}, f"{name}: {attribute}"


def test_every_union_member_is_a_registered_kind() -> None:
    """The committed schema's unions list exactly the registered kinds' spec models."""
    tool = json.loads((SCHEMA / "tool.schema.json").read_text())
    declared = {k.implementation.__name__ for k in kinds.TOOL_KINDS.values() if k.implementation}
    assert _refs(tool["properties"]["implementation"]) == declared
    workflow = json.loads((SCHEMA / "workflow.schema.json").read_text())
    assert _refs(workflow["properties"]["steps"]["items"]) == {
        s.spec.__name__ for s in kinds.STEP_KINDS.values()
    }
    agent = json.loads((SCHEMA / "agent.schema.json").read_text())
    assert _refs(agent["properties"]["context"]) == {s.spec.__name__ for s in kinds.STRATEGIES.values()}


# ---------------------------------------------------------------- a throw-away tool kind


def _project(folder: Path, prefix: str = ">> ") -> Path:
    shout = (
        "version: 1\nkind: tool\nname: shout\ndescription: Say it louder.\n"
        "parameters: {type: object, properties: {text: {type: string}}, required: [text]}\n"
        f"implementation: {{echo: {json.dumps(prefix)}}}\n"
    )
    town = (
        "version: 1\nkind: workflow\nname: town\ninputs: {news: {}}\nentry: crier\n"
        "task: '{{ news }}'\ndefault_model: m\nmodels: {m: {provider: anthropic, model: x}}\n"
    )
    crier = "version: 1\nkind: agent\nname: crier\nprompt: You shout.\ntools: [shout]\n"
    write_files(folder, {"tools.d/shout.yaml": shout, "agents.d/crier.yaml": crier, "town.yaml": town})
    return folder / "town.yaml"


@pytest.fixture
def echo_kind() -> typing.Iterator[None]:
    from kind_fixtures import echo_kind

    undo = kinds.register_tool_kind(echo_kind.KIND)  # the one registration line
    try:
        yield
    finally:
        undo()


def test_a_new_tool_kind_validates_and_runs_dry(echo_kind: None, tmp_path: Path) -> None:
    workflow = _project(tmp_path / "ok")
    cli = CliRunner().invoke(main, ["validate", str(workflow.parent)])
    assert cli.exit_code == 0, cli.output
    schema = CliRunner().invoke(main, ["schema", "tool"])
    assert '"EchoImplementation"' in schema.output and '"echo"' in schema.output

    wf = flowrun.load(workflow)
    result = wf.run_sync({"news": "rain"}, dry_run=True, runs_dir=tmp_path / "runs")
    assert result.status == "completed", result.message
    lines = [json.loads(x) for x in (result.run_dir / "events.jsonl").read_text().splitlines()]
    answers = [e["result"]["text"] for e in lines if e["type"] == "tool_result" and e["tool"] == "shout"]
    assert answers and all(text.startswith(">> {") for text in answers)


def test_a_new_tool_kind_checks_its_own_manifests(echo_kind: None, tmp_path: Path) -> None:
    workflow = _project(tmp_path / "bad", prefix=" ")
    cli = CliRunner().invoke(main, ["validate", str(workflow.parent)])
    assert cli.exit_code == 1
    assert "tools.d/shout.yaml:6:" in cli.output and "an empty echo prefix" in cli.output
    with pytest.raises(flowrun.ManifestInvalid, match="empty echo prefix"):
        flowrun.load(workflow)


def test_an_unregistered_kind_is_unknown_again(tmp_path: Path) -> None:
    """Without the registration line the same manifest is refused, and the schema says why."""
    workflow = _project(tmp_path / "gone")
    cli = CliRunner().invoke(main, ["validate", str(workflow.parent)])
    assert cli.exit_code == 1 and "tools.d/shout.yaml:6:" in cli.output, cli.output
    assert "EchoImplementation" not in CliRunner().invoke(main, ["schema", "tool"]).output
