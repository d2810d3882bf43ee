"""Kinds own both sides and are registered once. Every registered tool kind, step kind, context
strategy, grader and provider has a manifest side; every member of a manifest union is a
registered kind; a throw-away kind of each sort (tests/kind_fixtures/: a tool kind, a step kind,
a context strategy, a grader, a provider and a preset), added as one module and one
registration, is checked by `validate`, described by the schema and the generated docs,
accepted as `--model NAME:id` (a provider, a preset) and used by a run, with no other edit; and
a hand-written list of kinds in the docs names them all or says it names some."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import typing
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from support.paths import REPO
from support.project import write_files
from support.wire_server import Reply, Script, WireServer

import flowrun
from flowrun.cli import main
from flowrun.evals import grader_kinds
from flowrun.evals.grading import GraderKind
from flowrun.manifest import kinds as manifest_kinds
from flowrun.manifest.specs import ImplementationSpec, StepSpec, StrategySpec
from flowrun.providers.base import Provider
from flowrun.providers.presets import PRESETS
from flowrun.providers.registry import PROVIDERS, provider_class
from flowrun.runtime import kinds
from flowrun.runtime.loop.contracts import ContextStrategy, ToolKind
from flowrun.runtime.steps.base import StepKind

SCHEMA = REPO / "schema"
HOOKS = REPO / "docs" / "_hooks"


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


def test_every_grader_has_both_sides() -> None:
    assert list(grader_kinds.GRADERS) == [k.name for k in manifest_kinds.grader_kinds()]
    for name, grader in grader_kinds.GRADERS.items():
        assert GraderKind in type(grader).__mro__ and grader.name == name
        assert grader.spec.kind == name and name in grader.spec.model_fields, f"{name}: tagged by its key"


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
    evalset = json.loads((SCHEMA / "evalset.schema.json").read_text())
    assert _refs(evalset["properties"]["graders"]["items"]) == {
        g.spec.__name__ for g in grader_kinds.GRADERS.values()
    }
    model = json.loads((SCHEMA / "models.schema.json").read_text())["$defs"]["ModelSpec"]["properties"]
    assert model["provider"]["enum"] == list(PROVIDERS) and model["preset"]["enum"] == list(PRESETS)


def test_the_manifest_kinds_are_the_specs_kinds() -> None:
    """`flowrun schema` and validate's first look name the manifest kinds without importing the
    specs; they are the specs' kinds, in the same order."""
    from flowrun.manifest.schema.export import FOLDER_KINDS, KIND_NAMES
    from flowrun.manifest.specs import KINDS

    assert tuple(KINDS) == KIND_NAMES and set(FOLDER_KINDS.values()) <= set(KINDS)


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


# ---------------------------------------------------------------- a throw-away kind of every sort


def _docs(name: str) -> str:
    """What `<!-- generated: NAME -->` becomes in the docs (the hook of docs/_hooks/)."""
    sys.path.insert(0, str(HOOKS))
    try:
        import reference
    finally:
        sys.path.remove(str(HOOKS))
    text: str = reference.generate(name)
    return text


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _schema(kind: str) -> dict[str, typing.Any]:
    result = _cli("schema", kind)
    assert result.exit_code == 0, result.output
    schema: dict[str, typing.Any] = json.loads(result.output)
    return schema


@contextlib.contextmanager
def _registered(undo: Callable[[], None]) -> Iterator[None]:
    """While the block runs, the kind whose registration returned `undo` is registered."""
    try:
        yield
    finally:
        undo()


def _write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


QUIET_AGENT = "version: 1\nkind: agent\nname: crier\nprompt: You shout.\n"
TOWN = "version: 1\nkind: workflow\nname: town\ninputs: {news: {}}\nentry: crier\ntask: '{{ news }}'\n"
TOWN_MODELS = TOWN + "default_model: m\nmodels: {m: {provider: anthropic, model: x}}\n"


def _events(run_dir: Path) -> list[dict[str, typing.Any]]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


@pytest.fixture
def echo_provider() -> Iterator[None]:
    with _registered(kinds.register_provider("echo", "kind_fixtures.echo_provider:EchoProvider")):
        yield


def test_a_new_provider_is_a_model_shorthand_and_answers_a_run(echo_provider: None, tmp_path: Path) -> None:
    project = _write(tmp_path, {"agents.d/crier.yaml": QUIET_AGENT, "town.yaml": TOWN_MODELS})
    models = "version: 1\nkind: models\nmodels: {parrot: {provider: echo, model: any}}\n"
    _write(project, {"models.d/parrot.yaml": models})
    assert (cli := _cli("validate", str(project))).exit_code == 0, cli.output
    assert "echo" in _schema("models")["$defs"]["ModelSpec"]["properties"]["provider"]["enum"]
    assert "| `echo` | `echo:MODEL` | none: it calls no service |" in _docs("providers")

    result = flowrun.load(project / "town.yaml").run_sync(
        {"news": "rain"}, model="echo:any", runs_dir=tmp_path / "runs"
    )
    assert result.status == "completed", result.message
    assert result.message == "echo: rain"
    with pytest.raises(flowrun.UsageError, match="unknown provider 'ekho'"):
        flowrun.load(project / "town.yaml").run_sync({"news": "rain"}, model="ekho:any", dry_run=True)


def test_a_new_preset_is_a_model_shorthand_with_its_url_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kind_fixtures import loopback_preset

    project = _write(tmp_path, {"agents.d/crier.yaml": QUIET_AGENT, "town.yaml": TOWN_MODELS})
    monkeypatch.setenv("LOOPBACK_API_KEY", "sekrit")
    with WireServer(Script({"crier": [Reply(text="RAIN!")]}, {"crier": "You shout"})) as server:
        port = int(server.url.rpartition(":")[2])
        with _registered(kinds.register_preset("loopback", loopback_preset.at(port))):
            models = "version: 1\nkind: models\nmodels: {near: {preset: loopback, model: m1}}\n"
            _write(project, {"models.d/near.yaml": models})
            assert (cli := _cli("validate", str(project))).exit_code == 0, cli.output
            assert "loopback" in _schema("workflow")["$defs"]["ModelSpec"]["properties"]["preset"]["enum"]
            assert f"| `loopback` | `loopback:MODEL` | `http://127.0.0.1:{port}/v1` |" in _docs("presets")
            result = flowrun.load(project / "town.yaml").run_sync(
                {"news": "rain"}, model="loopback:m1", runs_dir=tmp_path / "runs"
            )
    assert result.status == "completed", result.message
    assert result.message == "RAIN!"
    (request,) = server.requests
    assert request.headers["authorization"] == "Bearer sekrit" and request.body["model"] == "m1"


def test_a_new_step_kind_validates_is_described_and_runs_dry(tmp_path: Path) -> None:
    from kind_fixtures import note_step

    steps = "steps:\n  - note: {file: 'notes/{{ news }}.md', text: 'News: {{ news }}'}\n  - agent: crier\n"
    town = TOWN_MODELS.replace("entry: crier\n", "") + steps
    project = _write(tmp_path / "ok", {"agents.d/crier.yaml": QUIET_AGENT, "town.yaml": town})
    bad = _write(
        tmp_path / "bad", {"agents.d/crier.yaml": QUIET_AGENT, "town.yaml": town.replace(".md'", ".txt'")}
    )
    gone = _cli("validate", str(project))
    assert gone.exit_code == 1 and "town.yaml:9:" in gone.output, gone.output  # not registered yet
    with _registered(kinds.register_step_kind(note_step.KIND)):
        assert (cli := _cli("validate", str(project))).exit_code == 0, cli.output
        cli = _cli("validate", str(bad))
        assert cli.exit_code == 1 and "town.yaml:9:" in cli.output and "a note is a .md file" in cli.output
        assert '"NoteStep"' in _cli("schema", "workflow").output
        assert "| `note:` |" in _docs("step-kinds")
        result = flowrun.load(project / "town.yaml").run_sync(
            {"news": "rain"}, dry_run=True, runs_dir=tmp_path / "runs"
        )
        assert result.status == "completed", result.message
        assert (result.run_dir / "notes" / "rain.md").read_text() == "News: rain"
        said = [(e["kind"], e["text"]) for e in _events(result.run_dir) if e["type"] == "step"]
        assert said == [("note", "wrote notes/rain.md")]
        assert "wrote notes/rain.md" in _cli("show", str(result.run_dir)).output


def test_a_new_context_strategy_validates_is_described_and_runs_dry(tmp_path: Path) -> None:
    from kind_fixtures import window_context

    agent = QUIET_AGENT + "tools: [read_file]\ncontext: {strategy: window, turns: 1}\n"
    project = _write(tmp_path / "ok", {"agents.d/crier.yaml": agent, "town.yaml": TOWN_MODELS})
    idle = QUIET_AGENT + "context: {strategy: window, turns: 1}\n"
    lazy = _write(tmp_path / "idle", {"agents.d/crier.yaml": idle, "town.yaml": TOWN_MODELS})
    with _registered(kinds.register_context_strategy(window_context.STRATEGY)):
        assert (cli := _cli("validate", str(project))).exit_code == 0, cli.output
        cli = _cli("validate", str(lazy))
        assert "agents.d/crier.yaml:5:" in cli.output and "its history never grows" in cli.output
        assert '"WindowContext"' in _cli("schema", "agent").output
        assert "| `window` |" in _docs("context-strategies")
        result = flowrun.load(project / "town.yaml").run_sync(
            {"news": "rain"}, dry_run=True, runs_dir=tmp_path / "runs"
        )
        assert result.status == "completed", result.message
        resets = [
            e for e in _events(result.run_dir) if e["type"] == "context_reset" and e["agent"] == "crier"
        ]
        assert resets and resets[0]["messages_after"] == 1


def test_a_new_grader_validates_is_described_and_grades_an_eval(tmp_path: Path) -> None:
    from kind_fixtures import length_grader

    evalset = (
        "version: 1\nkind: evalset\nname: town-evals\nworkflow: town.yaml\n"
        "cases:\n  - id: rain\n    inputs: {news: rain}\ngraders:\n  - length: {max_chars: 500}\n"
    )
    files = {"agents.d/crier.yaml": QUIET_AGENT, "town.yaml": TOWN_MODELS, "town.eval.yaml": evalset}
    project = _write(tmp_path / "ok", files)
    bad = _write(tmp_path / "bad", {**files, "town.eval.yaml": evalset.replace("500", "0")})
    with _registered(grader_kinds.register_grader(length_grader.KIND)):
        assert (cli := _cli("validate", str(project))).exit_code == 0, cli.output
        cli = _cli("validate", str(bad))
        assert cli.exit_code == 1 and "town.eval.yaml:9:" in cli.output, cli.output
        assert "max_chars must be at least 1" in cli.output
        assert '"LengthGrader"' in _cli("schema", "evalset").output
        assert "| `length:` |" in _docs("graders")
        report = tmp_path / "report.json"
        out = tmp_path / "evals"
        cli = _cli(
            "eval", str(project / "town.eval.yaml"), "--dry-run", "--out", str(out), "--json", str(report)
        )
        assert cli.exit_code == 0, cli.output
        graded = json.loads(report.read_text())
        (run,) = graded["variants"][0]["runs"]
        (score,) = run["graders"]
        assert score["kind"] == "length" and score["passed"], score
        assert re.fullmatch(r"the final answer has \d+ characters", score["detail"]), score


FRESH = """\
import json, sys
from click.testing import CliRunner
from flowrun.cli import main

def cli(*args):
    result = CliRunner().invoke(main, list(args))
    return [result.exit_code, result.output]

out = {"builtin": [cli("schema", kind) for kind in ("evalset", "models")]}
from flowrun.evals.grader_kinds import register_grader
from flowrun.runtime import kinds
from kind_fixtures import echo_kind, echo_provider, length_grader, loopback_preset, note_step, window_context

kinds.register_tool_kind(echo_kind.KIND)
kinds.register_step_kind(note_step.KIND)
kinds.register_context_strategy(window_context.STRATEGY)
kinds.register_provider("echo", "kind_fixtures.echo_provider:EchoProvider")
kinds.register_preset("loopback", loopback_preset.at(9))
register_grader(length_grader.KIND)
out["validate"] = cli("validate", sys.argv[1])
out["schemas"] = [cli("schema", kind)[1] for kind in ("workflow", "agent", "tool", "evalset")]
sys.path.insert(0, sys.argv[2])
import reference
out["docs"] = reference.generate("kinds")
print(json.dumps(out))
"""


def test_a_fresh_process_registers_kinds_on_first_use_and_takes_new_ones(tmp_path: Path) -> None:
    """Without the test process's imports: the built-in kinds are registered when a command
    first needs them (the committed schemas come out), and a kind of every sort registered
    before the first manifest is read is validated, described and listed like a built-in."""
    steps = "steps:\n  - note: {file: notes.md, text: '{{ news }}'}\n  - agent: crier\n"
    agent = QUIET_AGENT + "tools: [shout]\ncontext: {strategy: window, turns: 2}\n"
    shout = (
        "version: 1\nkind: tool\nname: shout\ndescription: Say it louder.\n"
        "parameters: {type: object, properties: {text: {type: string}}}\nimplementation: {echo: '>> '}\n"
    )
    models = "models:\n  m: {provider: echo, model: any}\n  near: {preset: loopback, model: m1}\n"
    evalset = (
        "version: 1\nkind: evalset\nname: town-evals\nworkflow: town.yaml\n"
        "cases:\n  - id: rain\n    inputs: {news: rain}\ngraders:\n  - length: {max_chars: 500}\n"
    )
    town = TOWN.replace("entry: crier\n", "") + "default_model: m\n" + models + steps
    files = {"agents.d/crier.yaml": agent, "tools.d/shout.yaml": shout, "town.yaml": town}
    project = _write(tmp_path, {**files, "town.eval.yaml": evalset})
    env = {"PYTHONPATH": str(REPO / "tests"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", FRESH, str(project), str(HOOKS)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    for (code, text), kind in zip(out["builtin"], ("evalset", "models"), strict=True):
        assert code == 0 and text == (SCHEMA / f"{kind}.schema.json").read_text(), kind
    assert out["validate"][0] == 0, out["validate"][1]
    for schema, model in zip(
        out["schemas"], ("NoteStep", "WindowContext", "EchoImplementation", "LengthGrader"), strict=True
    ):
        assert f'"{model}"' in schema, model
    assert '"echo"' in out["schemas"][0] and '"loopback"' in out["schemas"][0]
    for row in ("| `echo` |", "| `note:` |", "| `window` |", "| `length:` |", "| `loopback` |"):
        assert row in out["docs"], row


# ---------------------------------------------------------------- lists of kinds written by hand

NAME = r"`[\w-]+:?`"
ITEM = rf"{NAME}(?:\s*\([^()]*\))?"  # a name, maybe with a remark in brackets
SEPARATOR = r"(?:\s*(?:,|\\?\||/)\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+)"
WRITTEN_LIST = re.compile(rf"{ITEM}(?:{SEPARATOR}{ITEM})+(?:{SEPARATOR}(?:\.\.\.|…))?")


def test_a_written_list_of_kinds_names_them_all_or_says_it_names_some() -> None:
    """A list written in the docs or the code (`a`, `b` or `c`) that names three kinds of one
    sort (or three manifest kinds) names every registered one, or ends with `...`: a kind added
    later fails this test until the lists that name them all are true again (the generated
    reference lists them all anyway: docs/reference/kinds.md)."""
    from flowrun.manifest.schema.export import KIND_NAMES

    families = {
        "tool kinds": set(kinds.TOOL_KINDS),
        "step kinds": set(kinds.STEP_KINDS),
        "context strategies": set(kinds.STRATEGIES),
        "graders": set(grader_kinds.GRADERS),
        "providers": set(PROVIDERS),
        "presets": set(PRESETS),
        "manifest kinds": set(KIND_NAMES),
    }
    pages = [*(REPO / "docs").rglob("*.md"), REPO / "README.md", REPO / "CONTRIBUTING.md"]
    sources = [*pages, *(REPO / "engine" / "flowrun").rglob("*.py")]
    incomplete = []
    for path in sources:
        text = " ".join(path.read_text(encoding="utf-8").split())
        for found in WRITTEN_LIST.finditer(text):
            names = re.findall(NAME, re.sub(r"\([^()]*\)", "", found.group(0)))
            named = {name.strip("`").rstrip(":") for name in names}
            partial = found.group(0).endswith(("...", "…"))
            for family, members in families.items():
                if len(named & members) >= 3 and not partial and not members <= named:
                    missing = ", ".join(sorted(members - named))
                    where = path.relative_to(REPO)
                    incomplete.append(f"{where}: {found.group(0)!r} leaves out {family}: {missing}")
    assert not incomplete, "\n".join(incomplete)
