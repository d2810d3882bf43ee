"""Reading a CrewAI crew's files into a `Crew`: the YAML pair with its `crew.py` (which methods
are agents and tasks, in which order, with which keyword arguments), or `crew.jsonc` with one
file per agent under `agents/`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from flowrun.manifest.foreign.conversion import Conversion
from flowrun.manifest.foreign.crewai.code import CrewCode, MethodRef, read_crew_code
from flowrun.manifest.foreign.crewai.definition import Crew, Layers, Part, config_key
from flowrun.manifest.foreign.jsonc import load_jsonc
from flowrun.manifest.foreign.keys import mapping, strings
from flowrun.manifest.foreign.registry import Detected
from flowrun.manifest.yaml_source import Source, load_source
from flowrun.paths import display_path


def load_crew(found: Detected) -> tuple[Crew | None, Conversion]:
    conv = Conversion("crewai", found.entry, found.root)
    if found.entry.suffix in (".jsonc", ".json"):
        return _json_crew(found, conv), conv
    return _yaml_crew(found, conv), conv


def _source(conv: Conversion, path: Path) -> Source | None:
    """A YAML or JSONC file of the crew, or None (its problems are in `conv`)."""
    conv.read(path)
    loader = load_jsonc if path.suffix in (".jsonc", ".json") else load_source
    src, problems = loader(path, display_path(path))
    conv.diagnostics += problems
    return src if src.data is not None and not problems else None


# ---------------------------------------------------------------- config/*.yaml and crew.py


def _yaml_crew(found: Detected, conv: Conversion) -> Crew | None:
    config = found.entry.parent
    agents_file = next(p for p in (config / "agents.yaml", config / "agents.yml") if p.is_file())
    agents_src, tasks_src = _source(conv, agents_file), _source(conv, found.entry)
    if agents_src is None or tasks_src is None:
        return None
    code = _crew_code(found.root, conv)
    crew = Crew(name=found.root.resolve().name, shape="yaml", code=code)
    agents = mapping(conv, agents_src, (), agents_src.data, "agents.yaml")
    tasks = mapping(conv, tasks_src, (), tasks_src.data, "tasks.yaml")
    methods = code.section("agents") if code else {}
    for key in _ordered(agents, methods, code, "agents"):
        crew.agents[key] = _layers(key, agents, agents_src, methods, code, "agents")
    task_methods = code.section("tasks") if code else {}
    for key in _ordered(tasks, task_methods, code, "tasks"):
        crew.tasks.append(_layers(key, tasks, tasks_src, task_methods, code, "tasks"))
    if code is not None:
        crew.settings.parts.append(Part(code.section("crew"), code.source, ("crew",)))
    return crew


def _crew_code(root: Path, conv: Conversion) -> CrewCode | None:
    """The `@CrewBase` class of the crew's folder: `crew.py`, else the first `*.py` that has one."""
    candidates = sorted(root.glob("*.py"), key=lambda p: (p.name != "crew.py", p.name))
    for path in candidates:
        try:
            if "CrewBase" not in path.read_text(encoding="utf-8", errors="replace"):
                continue
        except OSError:
            continue
        code, problems = read_crew_code(path, display_path(path))
        conv.read(path)
        conv.diagnostics += problems
        if code is not None:
            return code
    return None


def _ordered(
    config: Mapping[str, object], methods: Mapping[str, object], code: CrewCode | None, what: str
) -> list[str]:
    """The keys of the crew's agents or tasks in order: crew.py's methods (tasks in the order
    they are defined, which is the order they run), else the YAML file's order."""
    if code is None or not methods:
        return [str(k) for k in config]
    order = code.order if what == "tasks" else list(methods)
    return [config_key(m, _kwargs(methods.get(m))) for m in order]


def _kwargs(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _layers(
    key: str,
    config: Mapping[str, object],
    src: Source,
    methods: Mapping[str, object],
    code: CrewCode | None,
    section: str,
) -> Layers:
    layers = Layers(key)
    method = next(
        (m for m, kw in methods.items() if isinstance(kw, Mapping) and config_key(m, kw) == key), None
    )
    if code is not None and method is not None:
        kwargs = {k: v for k, v in _kwargs(methods[method]).items() if k != "config"}
        layers.parts.append(Part(_resolved(kwargs, code), code.source, (section, method)))
    value = config.get(key)
    layers.parts.append(Part(value if isinstance(value, Mapping) else {}, src, (key,)))
    return layers


def _resolved(kwargs: Mapping[str, object], code: CrewCode) -> dict[str, object]:
    """`agent=self.researcher()` and `context=[self.research_task()]` as the YAML keys they name."""
    names = {
        m: config_key(m, kw)
        for s in ("agents", "tasks")
        for m, kw in code.section(s).items()
        if isinstance(kw, Mapping)
    }

    def resolve(value: object) -> object:
        if isinstance(value, MethodRef):
            return names.get(value.name, value.name)
        if isinstance(value, list):
            return [resolve(v) for v in value]
        return value

    return {k: resolve(v) if k in ("agent", "context", "manager_agent") else v for k, v in kwargs.items()}


# ---------------------------------------------------------------- crew.jsonc and agents/


def _json_crew(found: Detected, conv: Conversion) -> Crew | None:
    src = _source(conv, found.entry)
    if src is None:
        return None
    data = mapping(conv, src, (), src.data, "crew.jsonc")
    name = data.get("name")
    crew = Crew(
        name=str(name) if isinstance(name, str) and name.strip() else found.root.resolve().name, shape="json"
    )
    crew.settings.parts.append(Part(data, src, ()))
    for i, agent_id in enumerate(strings(conv, src, ("agents",), data.get("agents", []), "`agents`")):
        layers = _agent_file(found.root, agent_id, conv, src, ("agents", i))
        if layers is not None:
            crew.agents[agent_id] = layers
    manager = data.get("manager_agent")
    if isinstance(manager, str) and manager not in crew.agents:
        crew.manager = _agent_file(found.root, manager, conv, src, ("manager_agent",))
    tasks = data.get("tasks", [])
    if not isinstance(tasks, list):
        conv.problem(src, ("tasks",), "`tasks` must be a list of task objects", "", "wrong-type")
        tasks = []
    for i, task in enumerate(tasks):
        body = mapping(conv, src, ("tasks", i), task, "a task")
        key = body.get("name")
        crew.tasks.append(
            Layers(
                str(key) if isinstance(key, str) and key else f"task_{i + 1}", [Part(body, src, ("tasks", i))]
            )
        )
    return crew


def _agent_file(
    root: Path, agent_id: str, conv: Conversion, src: Source, where: tuple[str | int, ...]
) -> Layers | None:
    path = next(
        (
            root / "agents" / f"{agent_id}{ext}"
            for ext in (".jsonc", ".json")
            if (root / "agents" / f"{agent_id}{ext}").is_file()
        ),
        None,
    )
    if path is None:
        message = f"agent '{agent_id}' has no file agents/{agent_id}.jsonc"
        conv.problem(
            src, where, message, f"write agents/{agent_id}.jsonc (role, goal, backstory)", "unknown-agent"
        )
        return None
    agent_src = _source(conv, path)
    if agent_src is None:
        return None
    body = mapping(conv, agent_src, (), agent_src.data, f"agents/{path.name}")
    settings = body.get("settings")
    # CrewAI passes `settings` over the file's own keys; the file itself is the main part (last)
    parts = [Part(settings, agent_src, ("settings",))] if isinstance(settings, Mapping) else []
    return Layers(agent_id, [*parts, Part(body, agent_src, ())])
