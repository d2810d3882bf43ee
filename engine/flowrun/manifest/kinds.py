"""The kinds as manifests see them, and their registry. A tool kind, a step kind, a context
strategy and a grader is each one module (runtime/tool_kinds/, runtime/steps/, runtime/context/,
evals/graders/) carrying both its runtime behaviour and its manifest side: its spec model (the
schema part), its checks, what it needs from the sandbox and how the step graph walks it.
runtime/kinds.py and evals/grader_kinds.py register the built-in ones here; `validate`, the step
graph and the sandbox ask this registry instead of testing types. The providers and presets a
model may name are the tables of providers/ (registry.py, presets.py); the models follow them
too.

The Protocols below are the manifest side; each method with a body is optional (a kind that
subclasses the Protocol inherits the default). The runtime side extends them
(runtime/loop/contracts.py)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from flowrun.manifest import unions
from flowrun.manifest.diagnostics import Diagnostic, Severity
from flowrun.manifest.eval_specs import GraderBase
from flowrun.manifest.project import Loaded, Project
from flowrun.manifest.specs import (
    AgentManifest,
    ImplementationSpec,
    StepSpec,
    StrategySpec,
    Strict,
    ToolManifest,
    WorkflowManifest,
)
from flowrun.manifest.yaml_source import PathKey, Source
from flowrun.providers.presets import PRESETS
from flowrun.providers.registry import PROVIDERS
from flowrun.tools.sandbox import Mode, SandboxPolicy

YamlPath = tuple[str | int, ...]


# ---------------------------------------------------------------- tool kinds


@dataclass(frozen=True, slots=True)
class EntryRef:
    """One entry of an agent's `tools` list, as a check sees it."""

    src: Source  # the agent's manifest
    index: int
    name: str
    config: dict[str, object]  # as written, `approve` and `sandbox` included
    project: Project

    def where(self, *more: str | int) -> PathKey:
        return ("tools", self.index, self.name, *more)


@dataclass(frozen=True, slots=True)
class SandboxQuery:
    """Where an agent's tools would start processes: the run's workflow, the agent, the folder
    relative binds start at, and `--sandbox MODE`."""

    project: Project
    workflow: WorkflowManifest
    agent: AgentManifest
    base: Path
    override: Mode | None


class ToolKindSide(Protocol):
    """A kind of tool: how the tools of an agent's entries run (runtime/tool_kinds/)."""

    name: str
    # the `implementation: {NAME: ...}` model of the tools.d manifests this kind runs (its key is
    # the kind's name); None for a kind whose tools are not declared in tools.d
    implementation: type[ImplementationSpec] | None

    def claims(self, name: str, project: Project) -> bool:
        """Whether an agent's tool entry `name` is this kind's (the first kind that claims it
        binds it). By default: a tools.d manifest whose implementation is this kind's."""
        tool = project.tools.get(name)
        return tool is not None and tool.spec.implementation.kind == self.name

    def check_tools(self, tools: list[Loaded[ToolManifest]], project: Project) -> list[Diagnostic]:
        """Problems of this kind's tools.d manifests (the checks every tool gets ran already)."""
        return []

    def check_entry(self, entry: EntryRef) -> list[Diagnostic]:
        """Problems of an agent's entry for a tool of this kind: its config and entry keys."""
        ...

    def agents_called(self, name: str, project: Project) -> list[str]:
        """The agents a call of the entry `name` runs (the step graph and cycle checks)."""
        return []

    def process_policy(
        self, name: str, config: dict[str, object], where: SandboxQuery
    ) -> SandboxPolicy | None:
        """The sandbox the processes of this entry's tool run under; None: it starts none."""
        return None

    def imports(self, tool: Loaded[ToolManifest]) -> list[str]:
        """Python modules a check of this tool imports (the check cache watches them)."""
        return []


# ---------------------------------------------------------------- step kinds


@dataclass(frozen=True, slots=True)
class Template:
    """A Jinja2 template a step holds, at `parts` below the step."""

    text: str
    parts: YamlPath
    expression: bool = False  # a bare expression (`until`), not a template
    path: bool = False  # renders to a path in the run folder (workdir, output, file, collect)


@dataclass(frozen=True, slots=True)
class Nested:
    """A step inside another (a loop's body, a parallel branch, a foreach's step)."""

    step: StepSpec
    parts: YamlPath  # below the enclosing step
    names: frozenset[str] = frozenset()  # template names it adds for the nested step


@dataclass(frozen=True, slots=True)
class StepAt:
    """A step of a workflow, wherever it is nested, with its YAML path and the template names
    the steps around it add."""

    step: StepSpec
    parts: YamlPath
    names: frozenset[str]


class StepKindSide(Protocol):
    """A kind of workflow step, tagged by its key (`agent:`, `loop:`, ...)."""

    name: str  # the key that tags the step
    spec: type[StepSpec]

    def children(self, step: Any) -> Iterator[Nested]:
        """The steps nested in this one."""
        return iter(())

    def agents(self, step: Any) -> Iterator[tuple[str, YamlPath]]:
        """The agents this step itself runs, with the path of the key that names each."""
        return iter(())

    def repeats(self, step: StepSpec, inputs: Mapping[str, object]) -> float:
        """At most how many times its nested steps run per run of it (the cost preview): a
        loop's max_iterations, a foreach's items when the inputs hold them; inf when only the
        run knows."""
        return 1.0

    def templates(self, step: Any) -> Iterator[Template]:
        """This step's own templates (not those of nested steps; `if:` is everyone's)."""
        return iter(())

    def check(self, step: Any, at: StepAt, wf: Loaded[WorkflowManifest]) -> list[Diagnostic]:
        """Problems the schema cannot see (a foreach's list source, branches sharing a folder)."""
        return []


# ---------------------------------------------------------------- context strategies


class ContextSide(Protocol):
    """An agent's `context:` strategy, tagged by `strategy`."""

    name: str
    spec: type[StrategySpec]

    def check(self, agent: Loaded[AgentManifest], project: Project) -> list[Diagnostic]:
        return []

    def tool_defaults(self, spec: Any) -> dict[str, object]:
        """Config every tool of such an agent gets where its own config leaves the key unset
        (the dashboards, for update_dashboard)."""
        return {}

    def template_vars(self, spec: Any) -> dict[str, Any]:
        """Names the agent's prompt template gets."""
        return {}


# ---------------------------------------------------------------- graders

# (message, hint, code) of an error, or (message, hint, code, "warning"): a problem of a grader,
# placed by its caller (a grader may be written in the eval set or in a dataset's row)
Problem = tuple[str, str, str] | tuple[str, str, str, Severity]


class GraderSide(Protocol):
    """A kind of an eval set's grader, tagged by its key (`output:`, `status:`, ...)."""

    name: str  # the key that tags the grader
    spec: type[GraderBase]

    def check(self, grader: Any, at: Any) -> list[Problem]:
        """Problems `validate` finds in one grader; `at` is where it is checked
        (checks/eval_files.py `GraderAt`: the eval set's folder, its workflow and tools)."""
        return []

    def files(self, grader: Any) -> list[str]:
        """Files the grader names, relative to the eval set (the check cache watches them)."""
        return []


# ---------------------------------------------------------------- the registry

_TOOLS: dict[str, ToolKindSide] = {}
_STEPS: dict[str, StepKindSide] = {}
_CONTEXTS: dict[str, ContextSide] = {}
_GRADERS: dict[str, GraderSide] = {}
# what flowrun itself registers; anything beyond makes the committed schema files incomplete
_BUILTIN: set[tuple[str, str]] = {("provider", n) for n in PROVIDERS} | {("preset", n) for n in PRESETS}


def install(
    tools: Iterable[ToolKindSide] = (),
    steps: Iterable[StepKindSide] = (),
    contexts: Iterable[ContextSide] = (),
    graders: Iterable[GraderSide] = (),
    builtin: bool = False,
) -> None:
    """Register kinds (runtime/kinds.py and evals/grader_kinds.py do it for the built-in ones, at
    import). A kind of a name already registered replaces it."""
    tools, steps, contexts, graders = list(tools), list(steps), list(contexts), list(graders)
    _TOOLS.update((k.name, k) for k in tools)
    _STEPS.update((k.name, k) for k in steps)
    _CONTEXTS.update((k.name, k) for k in contexts)
    _GRADERS.update((k.name, k) for k in graders)
    if builtin:
        _BUILTIN.update(("tool", k.name) for k in tools)
        _BUILTIN.update(("step", k.name) for k in steps)
        _BUILTIN.update(("context", k.name) for k in contexts)
        _BUILTIN.update(("grader", k.name) for k in graders)
    _sync()


def uninstall(family: str, name: str) -> None:
    """Take a kind out again (a test's throw-away kind); `provider` and `preset`: after the
    name was taken out of its table, the models forget it."""
    tables: dict[str, dict[str, Any]] = {
        "tool": _TOOLS,
        "step": _STEPS,
        "context": _CONTEXTS,
        "grader": _GRADERS,
    }
    tables.get(family, {}).pop(name, None)
    _sync()


def refresh() -> None:
    """A provider or preset was registered: the models take its name."""
    _sync()


def _names() -> set[tuple[str, str]]:
    tables: dict[str, Iterable[str]] = {
        "tool": _TOOLS,
        "step": _STEPS,
        "context": _CONTEXTS,
        "grader": _GRADERS,
        "provider": PROVIDERS,
        "preset": PRESETS,
    }
    return {(family, name) for family, names in tables.items() for name in names}


def _sync() -> None:
    """The manifest unions and choices follow the registries; models already built are built
    again."""
    extension = bool(_names() - _BUILTIN)
    before = unions.generation()
    implementations = {k.name: k.implementation for k in _TOOLS.values() if k.implementation is not None}
    if _TOOLS or _STEPS or _CONTEXTS:
        unions.set_members("implementation", implementations, extension)
        unions.set_members("step", {k.name: k.spec for k in _STEPS.values()}, extension)
        unions.set_members("context", {k.name: k.spec for k in _CONTEXTS.values()}, extension)
    if _GRADERS:
        unions.set_members("grader", {k.name: k.spec for k in _GRADERS.values()}, extension)
    unions.set_choices("provider", PROVIDERS, extension)
    unions.set_choices("preset", PRESETS, extension)
    if unions.generation() != before and any(_built(m) for m in _models()):
        models = _models()
        unions.rebuild(models)
        unions.rebuild(models)  # a model holds the schemas of those inside it: twice settles all


def _models() -> list[type[BaseModel]]:
    found: list[type[BaseModel]] = []
    todo: list[type[BaseModel]] = [Strict]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.append(sub)
                todo.append(sub)
    return found


def _built(model: type[BaseModel]) -> bool:
    return bool(model.__dict__.get("__pydantic_complete__", False))


def tool_kinds() -> list[ToolKindSide]:
    """In the order they are asked to claim a tool name."""
    unions.ensure("implementation")
    return list(_TOOLS.values())


def step_kinds() -> list[StepKindSide]:
    unions.ensure("step")
    return list(_STEPS.values())


def context_kinds() -> list[ContextSide]:
    unions.ensure("context")
    return list(_CONTEXTS.values())


def grader_kinds() -> list[GraderSide]:
    unions.ensure("grader")
    return list(_GRADERS.values())


def tool_kind_for(name: str, project: Project) -> ToolKindSide | None:
    """The kind that binds an agent's tool entry `name`; None: no tool, agent or MCP server has
    that name."""
    return next((kind for kind in tool_kinds() if kind.claims(name, project)), None)


def step_kind(step: StepSpec) -> StepKindSide:
    return _STEPS[step.kind]  # a parsed step: its kind is registered


def context_kind(spec: StrategySpec) -> ContextSide:
    return _CONTEXTS[spec.strategy]


def grader_kind(grader: GraderBase) -> GraderSide:
    return _GRADERS[grader.kind]  # a parsed grader: its kind is registered
