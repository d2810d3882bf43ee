"""Load a project: every manifest on the search path (the folder of the workflow first, then
the built-ins), with `extends:` resolved and all problems collected as diagnostics."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from flowrun.manifest.check_cache import cached_check
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.ecosystem import mcp_config
from flowrun.manifest.eval_specs import EvalSetManifest
from flowrun.manifest.extends import extended
from flowrun.manifest.schema.check import check_schema, detect_kind
from flowrun.manifest.schema.salvage import ANY_NAME, salvage, unreadable
from flowrun.manifest.semantics import problems
from flowrun.manifest.specs import (
    KINDS,
    A2aAgentSpec,
    AgentManifest,
    FlowTestManifest,
    HooksSpec,
    McpServerSpec,
    ModelsManifest,
    ModelSpec,
    ScriptManifest,
    Strict,
    ToolManifest,
    WorkflowManifest,
)
from flowrun.manifest.yaml_source import Source, load_source
from flowrun.paths import MANIFEST_DIRS as MANIFEST_DIRS  # (re-exported: other modules import them from here)
from flowrun.paths import display_path as display_path
from flowrun.paths import is_builtin_root, is_dir, is_file
from flowrun.paths import search_roots as search_roots

T = TypeVar("T", bound=Strict)


@dataclass(slots=True)
class Loaded(Generic[T]):
    """A checked manifest (or one model of a `models` manifest) and where it came from."""

    spec: T
    source: Source
    root: Path
    builtin: bool


@dataclass
class Project:
    roots: list[Path]
    agents: dict[str, Loaded[AgentManifest]] = field(default_factory=dict)  # effective (extends resolved)
    agent_layers: dict[str, list[Loaded[AgentManifest]]] = field(default_factory=dict)  # winning first
    tools: dict[str, Loaded[ToolManifest]] = field(default_factory=dict)
    models: dict[str, Loaded[ModelSpec]] = field(default_factory=dict)  # from models.d
    default_model: str | None = None
    default_model_source: Source | None = None  # the models.d file whose `default_model` it is
    # models written in models.d whose entries a schema error made unreadable: they exist
    unreadable_models: set[str] = field(default_factory=set)
    workflows: list[Loaded[WorkflowManifest]] = field(default_factory=list)
    scripts: list[Loaded[ScriptManifest]] = field(default_factory=list)
    tests: list[Loaded[FlowTestManifest]] = field(default_factory=list)  # `flowrun test` files
    evalsets: list[Loaded[EvalSetManifest]] = field(default_factory=list)  # `flowrun eval` files
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # names of manifests that exist but failed to load: not reported again as "unknown"
    broken: set[str] = field(default_factory=set)
    # agents.d and tools.d files that did not load at all: file (as diagnostics name it) ->
    # (kind, the name it is known by: its `name:` or its file name)
    unloaded: dict[str, tuple[str, str]] = field(default_factory=dict)
    # MCP servers: the project's .mcp.json, with each workflow's `mcp_servers:` over it
    mcp_servers: dict[str, Loaded[McpServerSpec]] = field(default_factory=dict)
    # remote A2A agents: each workflow's `a2a_agents:`, then those declared in agents' tool
    # entries (`NAME: {a2a: {...}}`), with the YAML path of each declaration
    a2a_agents: dict[str, Loaded[A2aAgentSpec]] = field(default_factory=dict)
    a2a_paths: dict[str, tuple[str | int, ...]] = field(default_factory=dict)
    # the hooks of the project's .claude/settings.json and settings.local.json
    settings_hooks: list[Loaded[HooksSpec]] = field(default_factory=list)
    _prompt_dirs: list[Path] | None = field(default=None, repr=False, compare=False)

    def prompt_dirs(self) -> list[Path]:
        """The roots' prompts/ folders, looked for once (every agent instance's prompt asks)."""
        if self._prompt_dirs is None:
            self._prompt_dirs = [root / "prompts" for root in self.roots if is_dir(root / "prompts")]
        return list(self._prompt_dirs)

    def find_prompt(self, name: str) -> Path | None:
        for folder in self.prompt_dirs():
            candidate = folder / name
            if is_file(candidate):
                return candidate
        return None

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]


def parse_manifest(
    path: Path, folder_kind_hint: str = "", trusted: bool = False
) -> tuple[str | None, Strict | None, Source, list[Diagnostic]]:
    """YAML → schema check → typed spec. Returns (kind, spec or None, source, diagnostics).
    `trusted` (the built-ins, checked by flowrun's own tests) skips the JSON Schema pass; the
    typed specs still validate them. The steps before the typed spec are cached by the file's
    content (check_cache)."""
    kind, src, diags, passed = cached_check(path, display_path(path), folder_kind_hint, trusted, check_source)
    if not passed or kind is None:
        return kind, None, src, diags
    spec, typed_diags = typed_spec(kind, src, {**src.data, "kind": kind})
    return kind, spec, src, diags + typed_diags


def check_source(
    path: Path, display: str, folder_kind_hint: str, trusted: bool
) -> tuple[str | None, Source, list[Diagnostic], bool]:
    """YAML → kind → JSON Schema → cross-key rules: (kind, source, diagnostics, passed)."""
    src, diags = load_source(path, display)
    if src.data is None:
        return None, src, diags, False
    kind, kind_diags = detect_kind(src, folder_kind_hint)
    diags += kind_diags
    if kind is None:
        return None, src, diags, False
    schema_diags = [] if trusted else check_schema(src, kind)
    diags += schema_diags
    if schema_diags or any(d.severity == "error" for d in diags):
        return kind, src, diags, False
    rules = problems(kind, src)
    return kind, src, diags + rules, not rules


def readable_manifest(
    path: Path, folder_kind_hint: str = "", trusted: bool = False
) -> tuple[str | None, Strict | None, Source, list[Diagnostic]]:
    """`parse_manifest`, and for a file with problems, what of it can still be checked: its
    data without the values the schema errors are about (schema/salvage.py), with the cross-key
    rules run over it; the source then records what was cut (`Source.cut`)."""
    kind, spec, src, diags = parse_manifest(path, folder_kind_hint, trusted)
    if spec is not None or kind is None:
        return kind, spec, src, diags
    spec, src = salvage(kind, src)
    if spec is not None:  # the rules did not run on a file the schema refused
        diags = diags + [d for d in problems(kind, src) if d not in diags]
    return kind, spec, src, diags


def typed_spec(kind: str, src: Source, data: Mapping[str, object]) -> tuple[Strict | None, list[Diagnostic]]:
    """`data` (already past the JSON Schema) as its pydantic model. The schema is generated
    from the models, so a failure here means a trusted file that skipped the schema pass is
    broken; it is reported like any other problem."""
    from pydantic import ValidationError

    try:
        return KINDS[kind].model_validate(data), []
    except ValidationError as e:
        return None, [
            src.diag(tuple(p for p in err["loc"] if isinstance(p, str | int)), err["msg"], "", "schema")
            for err in e.errors()
        ]


def _manifest_files(folder: Path) -> list[Path]:
    if not is_dir(folder):
        return []
    return sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and is_file(p))


def load_project(project_root: Path, workflow_files: list[Path] | None = None) -> Project:
    """Load the manifests of `project_root` and the built-ins (the engine's, then the examples').
    `workflow_files` default to the workflow manifests directly in `project_root`. The built-ins
    skip the JSON Schema pass (flowrun's own tests check them); a built-in folder that is
    `project_root` itself is the project's own and checked like any."""
    project = Project(roots=search_roots(project_root))
    failed: list[tuple[str, list[Diagnostic]]] = []  # Claude Code agent files that did not load
    # the last root first, so a manifest of the same name further up the search path overrides it
    for root in reversed(project.roots):
        is_builtin = is_builtin_root(root, project_root)
        for folder in MANIFEST_DIRS:
            seen: dict[tuple[str, str], Source] = {}
            for path in _manifest_files(root / folder):
                _add_manifest(project, path, folder, root, is_builtin, seen, trusted=is_builtin)
        if not is_builtin:
            _add_claude_agents(project, root, failed)
    if workflow_files is None:
        workflow_files = _manifest_files(project_root)
    for path in workflow_files:
        if not _add_foreign(project, path):
            _add_top_file(project, path, project_root)
    _add_mcp_servers(project, project_root)
    _add_settings_hooks(project, project_root)
    _settle_skipped_agents(project, failed)
    _claude_model_names(project)
    _resolve_extends(project)
    _add_a2a_agents(project)
    return project


def _add_top_file(project: Project, path: Path, project_root: Path) -> None:
    """A file next to the workflow: a workflow, a script, a test or an eval set."""
    kind, spec, src, diags = readable_manifest(path)
    if kind in (None, "workflow", "script", "test", "evalset") or diags:
        project.diagnostics += diags
    if isinstance(spec, WorkflowManifest):
        project.workflows.append(Loaded(spec, src, project_root, False))
        # servers and remote agents it declares that a schema error made unreadable exist
        project.broken |= unreadable(src, "mcp_servers") | unreadable(src, "a2a_agents")
    elif isinstance(spec, ScriptManifest):
        project.scripts.append(Loaded(spec, src, project_root, False))
    elif isinstance(spec, FlowTestManifest):
        project.tests.append(Loaded(spec, src, project_root, False))
    elif isinstance(spec, EvalSetManifest):
        project.evalsets.append(Loaded(spec, src, project_root, False))


def _add_foreign(project: Project, path: Path) -> bool:
    """Another framework's file (CrewAI, ADK, docker-agent, ...) named as the workflow: its
    manifests, checked like flowrun's own; False when `path` is no such file."""
    from flowrun.manifest.foreign.registry import convert, detect

    found = detect(path)
    if found is None:
        return False
    conversion = convert(found)
    project.diagnostics += conversion.diagnostics
    for piece in conversion.pieces:
        diags = [] if conversion.errors else check_schema(piece.source, piece.kind)
        diags += problems(piece.kind, piece.source) if not diags else []
        spec, typed = typed_spec(piece.kind, piece.source, piece.data) if not diags else (None, [])
        project.diagnostics += diags + typed
        loaded = Loaded(spec, piece.source, piece.root, False) if spec is not None else None
        if loaded is None:
            project.broken.add(piece.name)
        elif isinstance(loaded.spec, WorkflowManifest):
            project.workflows.append(loaded)  # type: ignore[arg-type]
        elif isinstance(loaded.spec, ToolManifest):
            project.tools[piece.name] = loaded  # type: ignore[assignment]
        elif isinstance(loaded.spec, AgentManifest):
            project.agent_layers.setdefault(piece.name, []).insert(0, loaded)  # type: ignore[arg-type]
    return True


def claude_agent_files(root: Path) -> list[Path]:
    """Claude Code subagent files of a project: `agents.d/*.md` and `.claude/agents/*.md`."""
    found: list[Path] = []
    for folder in (root / "agents.d", root / ".claude" / "agents"):
        if is_dir(folder):
            found += sorted(p for p in folder.iterdir() if p.suffix == ".md" and is_file(p))
    return found


def _add_claude_agents(project: Project, root: Path, failed: list[tuple[str, list[Diagnostic]]]) -> None:
    """The Claude Code agent files of `root`; those that do not load go to `failed`."""
    from flowrun.manifest.ecosystem.claude_agents import load_claude_agent

    for path in claude_agent_files(root):
        spec, src, servers, diags = load_claude_agent(path, display_path(path))
        if any(d.code == "no-front-matter" for d in diags) and path.name.upper().startswith("README"):
            continue  # a folder's README is not an agent
        if spec is None:
            name = src.data.get("name") if isinstance(src.data, dict) else None
            failed.append((name if isinstance(name, str) else path.stem, diags))
            continue
        project.diagnostics += diags
        layers = project.agent_layers.get(spec.name, [])
        if layers and not layers[0].builtin:
            other = layers[0].source.display
            message = f"duplicate agent name '{spec.name}' (also in {other})"
            project.diagnostics.append(src.diag(("name",), message, "rename one", "duplicate-name"))
            continue
        project.agent_layers.setdefault(spec.name, []).insert(0, Loaded(spec, src, root, False))
        for name, server in servers.items():
            project.mcp_servers.setdefault(name, Loaded(server, src, root, False))


def _settle_skipped_agents(project: Project, failed: list[tuple[str, list[Diagnostic]]]) -> None:
    """Claude Code agent files that did not load (collections hold such files): next to a
    workflow, the errors of one that no workflow or agent here names become warnings and the
    agent is skipped; the others' (and all of them where no workflow is loaded: `validate` of
    Claude Code files alone) stay errors."""
    used = _named_agents(project)
    for name, diags in failed:
        project.broken.add(name)
        errors = [d for d in diags if d.severity == "error"]
        if name in used or not errors or not project.workflows:
            project.diagnostics += diags
            continue
        project.diagnostics += [d for d in diags if d.severity != "error"] + [
            dataclasses.replace(
                d,
                severity="warning",
                code="skipped-agent",
                message=f"Claude Code agent '{name}' skipped: {d.message}",
                hint="; ".join(filter(None, [d.hint, "flowrun skips it: nothing here uses it"])),
            )
            for d in errors
        ]


def _named_agents(project: Project) -> set[str]:
    """Every name a workflow's `entry` or steps (`agent:` at any depth) or an agent's tools
    list: what may be an agent a run uses."""
    found: set[str] = set()
    for wf in project.workflows:
        found |= {wf.spec.entry} if wf.spec.entry else set()
        found |= _agent_values(wf.source.data.get("steps") if isinstance(wf.source.data, dict) else None)
    for layers in project.agent_layers.values():
        for loaded in layers:
            found |= {e if isinstance(e, str) else next(iter(e)) for e in loaded.spec.tool_list}
    return found


def _agent_values(data: object) -> set[str]:
    if isinstance(data, list):
        return set().union(*(_agent_values(item) for item in data))
    if not isinstance(data, dict):
        return set()
    own = {data["agent"]} if isinstance(data.get("agent"), str) else set()
    return own.union(*(_agent_values(value) for value in data.values()))


def _claude_model_names(project: Project) -> None:
    """A Claude Code agent's `model: sonnet` (or opus, haiku) names the project's or a
    workflow's model of that name when there is one, else Anthropic's model."""
    from flowrun.manifest.ecosystem.claude_agents import MODEL_ALIASES

    named = set(project.models) | {name for wf in project.workflows for name in wf.spec.models}
    for layers in project.agent_layers.values():
        for i, loaded in enumerate(layers):
            meta = loaded.source.data if loaded.source.path.suffix == ".md" else None
            alias = meta.get("model") if isinstance(meta, dict) else None
            if alias in MODEL_ALIASES and alias in named:
                spec = loaded.spec.model_copy(update={"model": alias})
                layers[i] = Loaded(spec, loaded.source, loaded.root, loaded.builtin)


def _add_mcp_servers(project: Project, root: Path) -> None:
    """A project's servers: its `.mcp.json`, then each workflow's `mcp_servers:` over it."""
    path = root / mcp_config.MCP_FILE
    if is_file(path):
        servers, src, diags = mcp_config.load_mcp_file(path, display_path(path))
        project.diagnostics += diags
        for name, spec in servers.items():
            project.mcp_servers[name] = Loaded(spec, src, root, False)
    for wf in project.workflows:
        for name, spec in wf.spec.mcp_servers.items():
            project.mcp_servers[name] = Loaded(spec, wf.source, wf.root, False)


def _add_a2a_agents(project: Project) -> None:
    """A project's remote A2A agents: each workflow's `a2a_agents:` (a later one wins), then
    those the agents' tool entries declare."""
    from flowrun.manifest.ecosystem.a2a_config import inline_agents

    for wf in project.workflows:
        for name, a2a in wf.spec.a2a_agents.items():
            project.a2a_agents[name] = Loaded(a2a, wf.source, wf.root, False)
            project.a2a_paths[name] = ("a2a_agents", name)
    own = [(a.spec, a.source, a.root) for a in project.agents.values() if not a.builtin]
    found, diags = inline_agents(own, project.a2a_agents)
    project.diagnostics += diags
    for name, inline in found.items():
        project.a2a_agents[name] = Loaded(inline.spec, inline.source, inline.root, False)
        project.a2a_paths[name] = inline.where


def _add_settings_hooks(project: Project, root: Path) -> None:
    """The hooks of Claude Code's settings files next to the workflow."""
    from flowrun.manifest.hooks import load_settings_hooks

    found, diags = load_settings_hooks(root)
    project.diagnostics += diags
    project.settings_hooks = [Loaded(spec, src, root, False) for spec, src in found]


def _add_manifest(
    project: Project,
    path: Path,
    folder: str,
    root: Path,
    builtin: bool,
    seen: dict[tuple[str, str], Source],
    trusted: bool = False,
) -> None:
    expected = {"agents.d": "agent", "tools.d": "tool", "models.d": "models"}[folder]
    kind, spec, src, diags = readable_manifest(path, folder, trusted=trusted)
    project.diagnostics += diags
    if spec is None:
        _unloaded(project, src, path.stem, expected)
        return
    if kind != expected:
        project.diagnostics.append(
            src.diag(
                ("kind",),
                f"a {kind} manifest in {folder}/",
                f"move it, or set `kind: {expected}`",
                "wrong-folder",
            )
        )
        return
    if isinstance(spec, ModelsManifest):
        _add_models(project, spec, Loaded(spec, src, root, builtin))
        return
    assert isinstance(spec, AgentManifest | ToolManifest)
    if (expected, spec.name) in seen:
        other = seen[(expected, spec.name)]
        project.diagnostics.append(
            src.diag(
                ("name",),
                f"duplicate {kind} name '{spec.name}' (also in {other.display})",
                "rename one",
                "duplicate-name",
            )
        )
        return
    seen[(expected, spec.name)] = src
    if path.stem != spec.name:
        project.diagnostics.append(
            src.diag(
                ("name",),
                f"{kind} '{spec.name}' is in a file named {path.name}",
                f"name the file {spec.name}.yaml so overrides by file name work as expected",
                "name-mismatch",
                severity="warning",
            )
        )
    if isinstance(spec, ToolManifest):
        project.tools[spec.name] = Loaded(spec, src, root, builtin)
    else:
        project.agent_layers.setdefault(spec.name, []).insert(0, Loaded(spec, src, root, builtin))


def _unloaded(project: Project, src: Source, stem: str, kind: str) -> None:
    """A manifest of agents.d/, tools.d/ or models.d/ that did not load. Its name (or, failing
    that, its file name) is known: references to it are not "unknown"; the models a models.d
    file names exist (any may, when they cannot be read)."""
    name = src.data.get("name") if isinstance(src.data, dict) else None
    name = name if isinstance(name, str) else stem
    project.broken.add(name)
    if kind == "models":
        names = {str(p[1]) for p in src.keys if len(p) == 2 and p[0] == "models"}
        project.unreadable_models |= names or {ANY_NAME}
    else:
        project.unloaded[src.display] = (kind, name)


def _add_models(project: Project, spec: ModelsManifest, loaded: Loaded[ModelsManifest]) -> None:
    for name, model in spec.models.items():
        project.models[name] = Loaded(model, loaded.source, loaded.root, loaded.builtin)
    project.unreadable_models |= unreadable(loaded.source, "models")
    if spec.default_model:
        project.default_model, project.default_model_source = spec.default_model, loaded.source


def _resolve_extends(project: Project) -> None:
    for name in list(project.agent_layers):
        resolved = _resolve_agent(project, name, 0, ())
        if resolved is not None:
            project.agents[name] = resolved


def _resolve_agent(
    project: Project, name: str, layer: int, chain: tuple[str, ...]
) -> Loaded[AgentManifest] | None:
    layers = project.agent_layers.get(name, [])
    if layer >= len(layers):
        return None
    loaded = layers[layer]
    spec = loaded.spec
    if spec.extends is None:
        return loaded
    key = f"{name}@{layer}"
    if key in chain:
        project.diagnostics.append(
            loaded.source.diag(
                ("extends",),
                "extends cycle: " + " -> ".join((*chain, key)),
                "break the cycle",
                "extends-cycle",
            )
        )
        return None
    if spec.extends == name:
        parent = _resolve_agent(project, name, layer + 1, (*chain, key))
        missing = f"'{name}' extends '{name}' but no other '{name}' is further down the search path"
    else:
        parent = _resolve_agent(project, spec.extends, 0, (*chain, key))
        missing = f"'{name}' extends unknown agent '{spec.extends}'"
    if parent is None:
        project.broken.add(name)
        if not any(d.code == "extends-cycle" for d in project.diagnostics):
            from flowrun.manifest.schema.check import did_you_mean

            if spec.extends == name:
                hint = "remove `extends:`, or extend a built-in or another agent by its name"
            else:
                hint = did_you_mean(spec.extends, set(project.agent_layers) - {name}) or "check the name"
            project.diagnostics.append(loaded.source.diag(("extends",), missing, hint, "unknown-agent"))
        return None
    effective, remap, problems = extended(parent.spec, spec, loaded.source)
    project.diagnostics += problems
    source = dataclasses.replace(loaded.source, remap={**loaded.source.remap, **remap})
    return Loaded(effective, source, loaded.root, loaded.builtin)


def find_agent_prompt(loaded: Loaded[AgentManifest], project: Project) -> Path | None:
    """The template file of an agent's `prompt_file`: a project agent looks on the whole search
    path, a built-in agent only among the built-ins (so a project cannot break it by accident)."""
    if loaded.spec.prompt_file is None:
        return None
    roots = [loaded.root] if loaded.builtin else project.roots
    for root in roots:
        folder = (root / "prompts").resolve()
        candidate = (folder / loaded.spec.prompt_file).resolve()
        if candidate.is_relative_to(folder) and is_file(candidate):
            return candidate
    return None
