"""A checked project, cached: what `flowrun validate` reports for one project folder, and the
loaded project plus its cross-reference diagnostics for a run, answered from the check cache
(check_cache.py) while no file the check reads has changed. In one process, loading the same
unchanged workflow again returns the same parsed project.

A wrapper around loading, not a second loader: a miss runs `load_project` and `check_project`
unchanged. The heavy modules (pydantic, jsonschema, jinja2) are imported only on a miss."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from flowrun.manifest import check_cache
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.paths import builtin_root, display_path, is_builtin_file, is_dir, is_file, search_roots

if TYPE_CHECKING:
    from flowrun.manifest.project import Project
    from flowrun.manifest.yaml_source import Source

Probe = tuple[str, str, str]  # (python module, search root, what was found there)
_LOADED: OrderedDict[str, tuple[tuple[Project, list[Diagnostic]], list[Probe]]] = OrderedDict()
KEEP_LOADED = 16  # projects kept in memory per process


# ---------------------------------------------------------------- validate


def check_root(
    root: Path, files: list[Path] | None, focus: set[str] | None = None
) -> tuple[list[Diagnostic], set[str]]:
    """Every diagnostic `validate` reports for one project folder (built-ins only when the
    folder is the built-in one), and the files it checked (as absolute paths). With `focus`
    (the files named on the command line), only the problems of those files and of what they
    use (focus.py)."""
    purpose = "validate" if focus is None else "validate|" + "|".join(sorted(focus))
    uncached = any(foreign(f) for f in files or [])
    key = None if uncached else check_cache.fingerprint(purpose, search_roots(root), files)
    if key is not None and (hit := _restore_check(check_cache.load(key))) is not None:
        return hit
    project, found, probes = _check_root(root, files)
    if focus is not None:
        from flowrun.manifest.checks.focus import focused

        found = focused(project, focus, found)
    checked = _checked_files(project, root)
    checked.update(os.path.abspath(d.file) for d in found)
    checked.update(os.path.abspath(f) for f in files or [])  # named or found top-level files
    if key is not None:
        check_cache.store(key, (_plain(found), sorted(checked), probes))
    return found, checked


def _check_root(root: Path, files: list[Path] | None) -> tuple[Project, list[Diagnostic], list[Probe]]:
    from flowrun.manifest.checks.crossref import check_project
    from flowrun.manifest.checks.relevance import unused_as_warnings
    from flowrun.manifest.ecosystem import skill_lint
    from flowrun.manifest.project import load_project

    project = load_project(root, files)
    own_builtins = root.resolve() == builtin_root().resolve()
    found: list[Diagnostic] = []
    for library in skill_lint.skill_libraries(root):
        found += skill_lint.lint_index(library, display_path(library / skill_lint.INDEX_FILE))
    for folder in skill_lint.skill_folders(root):
        display = display_path(folder / skill_lint.SKILL_FILE)
        found += [d for d in skill_lint.lint_skill(folder, display) if d not in found]
    found += project.diagnostics + check_project(project, include_builtins=own_builtins)
    found = unused_as_warnings(project, [d for d in found if not is_builtin_file(d.file, root)])
    return project, found, python_probes(project)


def _checked_files(project: Project, root: Path) -> set[str]:
    own_builtins = root.resolve() == builtin_root().resolve()
    loaded: list[_Sourced] = [*project.workflows, *project.scripts]
    for layers in project.agent_layers.values():
        loaded += layers
    loaded += list(project.tools.values()) + list(project.models.values())
    files = {os.path.abspath(x.source.display) for x in loaded if own_builtins or not x.builtin}
    files.update(os.path.abspath(m.source.display) for m in project.mcp_servers.values())
    from flowrun.manifest.ecosystem import skill_lint

    files |= {os.path.abspath(lib / skill_lint.INDEX_FILE) for lib in skill_lint.skill_libraries(root)}
    return files | {os.path.abspath(folder / "SKILL.md") for folder in skill_lint.skill_folders(root)}


class _Sourced(Protocol):
    """A loaded manifest, as far as the check cache needs it."""

    @property
    def source(self) -> Source: ...
    @property
    def builtin(self) -> bool: ...


def _restore_check(entry: object) -> tuple[list[Diagnostic], set[str]] | None:
    if not isinstance(entry, tuple | list) or len(entry) != 3:
        return None
    try:
        diagnostics, checked, probes = entry
        if not probes_hold(probes):
            return None
        return _diagnostics(diagnostics), set(checked)
    except (TypeError, ValueError):
        return None


def foreign(path: Path) -> bool:
    """Another framework's file: its project reads files the fingerprint does not cover (a
    crew's agents/, an ADK agent's sub-agent files), so its checks are not cached."""
    from flowrun.manifest.foreign.registry import detect

    return detect(path) is not None


# ---------------------------------------------------------------- runs and the API


def checked_project(workflow: Path) -> tuple[Project, list[Diagnostic]]:
    """The project of a workflow file and all its diagnostics (loading and cross-references).
    The same Project object comes back while its files are unchanged (in this process); the
    cross-reference pass is answered from the cache."""
    from flowrun.manifest.project import load_project

    root = workflow.parent
    key = None if foreign(workflow) else check_cache.fingerprint("load", search_roots(root), [workflow])
    if key is not None and key in _LOADED:
        loaded, variables = _LOADED[key]
        if probes_hold(variables):  # the `${VAR}`s its models name are as they were
            _LOADED.move_to_end(key)
            return loaded
    project = load_project(root, [workflow])
    cross: list[Diagnostic] | None = None
    if key is not None and (entry := check_cache.load(key)) is not None:
        cross = _restore_cross(entry)
    if cross is None:
        from flowrun.manifest.checks.crossref import check_project  # a miss: checked again

        cross = check_project(project)
        if key is not None:
            check_cache.store(key, (_plain(cross), python_probes(project)))
    result = (project, project.diagnostics + cross)
    if key is not None:
        variables = [(ENV_PROBE, name, env_state(name)) for name in sorted(_model_variables(project))]
        _LOADED[key] = (result, variables)
        while len(_LOADED) > KEEP_LOADED:
            _LOADED.popitem(last=False)
    return result


def _restore_cross(entry: object) -> list[Diagnostic] | None:
    if not isinstance(entry, tuple | list) or len(entry) != 2:
        return None
    try:
        diagnostics, probes = entry
        return _diagnostics(diagnostics) if probes_hold(probes) else None
    except (TypeError, ValueError):
        return None


# ---------------------------------------------------------------- python tool modules


def python_probes(project: Project) -> list[Probe]:
    """What each Python tool's module resolves to now: a check that found (or missed) it holds
    only while that stays the same, wherever the module lives."""
    from flowrun.manifest.kinds import tool_kind_for

    probes: set[Probe] = set()
    for name, tool in project.tools.items():
        kind = tool_kind_for(name, project)
        for module in kind.imports(tool) if kind is not None else []:
            probes.add((module, str(tool.root), module_state(module, tool.root)))
    for wf in project.workflows:  # `workspace.copy` names paths next to the workflow
        for rel in wf.spec.workspace.copy_paths:
            named = wf.source.path.parent / rel
            probes.add((FILE_PROBE, str(named), file_state(named)))
    for test in project.tests:  # `kind: test` files name a workflow and a cassette
        here = test.source.path.parent
        for named in (here / test.spec.workflow, here / test.spec.cassette):
            probes.add((FILE_PROBE, str(named), file_state(named)))
    from flowrun.manifest.checks.eval_files import evalset_files

    for evalset in project.evalsets:  # `kind: evalset` files name a workflow, a dataset, rubrics
        here = evalset.source.path.parent
        for rel in evalset_files(evalset.spec):
            probes.add((FILE_PROBE, str(here / rel), file_state(here / rel)))
    for variable in _model_variables(project):  # `${VAR}` in model settings: set or not
        probes.add((ENV_PROBE, variable, env_state(variable)))
    from flowrun.manifest.checks.memory import index_probes

    probes.update((MEMORY_PROBE, where, state) for where, state in index_probes(project))
    return sorted(probes)


def _model_variables(project: Project) -> set[str]:
    from flowrun.manifest.env_refs import referenced

    specs = [m.spec for m in project.models.values()] + [
        model for wf in project.workflows for model in wf.spec.models.values()
    ]
    return {name for spec in specs for name in referenced(spec)}


def probes_hold(probes: list[Probe]) -> bool:
    return all(_probe_state(kind, where) == state for kind, where, state in probes)


def _probe_state(kind: str, where: str) -> str:
    if kind == FILE_PROBE:
        return file_state(Path(where))
    if kind == ENV_PROBE:
        return env_state(where)
    if kind == MEMORY_PROBE:
        from flowrun.tools.memory.folder import index_state  # (light: no manifest code)

        return index_state(where)
    return module_state(kind, Path(where))


MEMORY_PROBE = ":memory"  # a memory's MEMORY.md: within its caps or over them (not its content)
ENV_PROBE = ":env"  # a variable a check read: whether it is set (a digest of its value, never the value)


def env_state(name: str) -> str:
    value = os.environ.get(name) or ""
    return hashlib.sha256(value.encode()).hexdigest()[:16] if value else "unset"


FILE_PROBE = ":file"  # a probe of a path a check looked at, wherever it is


def file_state(path: Path) -> str:
    """Whether a path exists, and as what (a cassette is a run folder or an events file)."""
    events = path / "events.jsonl"
    return (
        "dir+events" if is_file(events) else "dir" if is_dir(path) else "file" if is_file(path) else "missing"
    )


def module_state(module: str, root: Path) -> str:
    """'missing', or where the module's source is and a digest of it."""
    added = str(root) not in sys.path
    if added:
        sys.path.insert(0, str(root))
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    finally:
        if added:
            sys.path.remove(str(root))
    if spec is None:
        return "missing"
    origin = spec.origin or ""
    try:
        return f"{origin}:{hashlib.sha256(Path(origin).read_bytes()).hexdigest()}"
    except OSError:
        return origin or "namespace"


# ---------------------------------------------------------------- stored diagnostics


def _plain(diagnostics: list[Diagnostic]) -> list[tuple[Any, ...]]:
    """Diagnostics with absolute file names, so an entry serves any current folder."""
    return [
        (os.path.abspath(d.file), d.line, d.column, d.path, d.message, d.hint, d.code, d.severity)
        for d in diagnostics
    ]


def _diagnostics(stored: list[tuple[Any, ...]]) -> list[Diagnostic]:
    return [Diagnostic(display_path(Path(file)), *rest) for file, *rest in stored]
