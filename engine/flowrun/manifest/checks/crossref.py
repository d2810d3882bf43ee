"""Cross-reference checks over a loaded project: names that must exist, prompts that must
render, models that must resolve, agent-as-tool cycles. Every problem becomes a Diagnostic."""

from __future__ import annotations

import itertools
import re
from collections.abc import Set as AbstractSet
from pathlib import Path

from flowrun.manifest.checks.costs import check_costs
from flowrun.manifest.checks.eval_files import check_evalsets
from flowrun.manifest.checks.memory import check_memory, index_over_cap
from flowrun.manifest.checks.relevance import reach_known
from flowrun.manifest.checks.step_checks import StepTemplate, check_steps, step_templates
from flowrun.manifest.checks.test_files import check_test_files
from flowrun.manifest.checks.tools import default_warnings, schema_problems, unknown_entry
from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.ecosystem.a2a_refs import name_problems as a2a_name_problems
from flowrun.manifest.ecosystem.project_instructions import cap_warnings as instruction_cap_warnings
from flowrun.manifest.env_refs import unset_diagnostics
from flowrun.manifest.graph import (
    YamlPath,
    agent_callees,
    reachable_agents,
    tool_entries,
    workflow_agents,
)
from flowrun.manifest.guardrails.checks import check_guardrails
from flowrun.manifest.kinds import EntryRef, context_kind, tool_kind_for, tool_kinds
from flowrun.manifest.model_config import reference_problem
from flowrun.manifest.output_schemas import output_schema_diagnostics
from flowrun.manifest.project import Loaded, Project, find_agent_prompt
from flowrun.manifest.sandboxing import check_setting
from flowrun.manifest.schema.check import did_you_mean
from flowrun.manifest.schema.salvage import among, follow_ons, unreadable
from flowrun.manifest.specs import (
    AgentManifest,
    McpPromptSpec,
    ModelSpec,
    ToolManifest,
    WorkflowManifest,
    seed,
)
from flowrun.manifest.templates import PROMPT_BUILTINS, WORKFLOW_BUILTINS, analyse, analyse_expression
from flowrun.manifest.yaml_source import PathKey, Source
from flowrun.paths import (
    copy_source,
    display_path,
    is_builtin_file,
    is_dir,
    is_file,
    long_name,
    safe_relative,
)
from flowrun.regexes import compile_regex


def check_project(project: Project, include_builtins: bool = False) -> list[Diagnostic]:
    """Cross-reference diagnostics. Built-in manifests are tested with flowrun itself, so they
    are re-checked only when asked (validating the built-in folders)."""
    out: list[Diagnostic] = []
    checked = [tool for tool in project.tools.values() if include_builtins or not tool.builtin]
    out += _check_tools(checked, project)
    for agent in project.agents.values():
        if include_builtins or not agent.builtin:
            out += _check_agent(agent, project)
    out += _check_cycles(project)
    out += _check_server_names(project)
    out += a2a_name_problems(project)
    out += instruction_cap_warnings(project)
    out += check_test_files(project)
    out += check_evalsets(project)
    reachable: set[str] = set()
    uses: ModelUses = {}
    for wf in project.workflows:
        out += _check_workflow(wf, project, reachable, uses)
    out += _model_use_problems(project, uses)
    if project.workflows:
        out += _check_shared_models(project)
    out += shadowed_prompts(project, reachable)
    if project.workflows and reach_known(project):
        out += _unreachable(project, reachable)
    return unique(follow_ons(_cuts(project), out))


def unique(found: list[Diagnostic]) -> list[Diagnostic]:
    """Each diagnostic once (a check that runs per workflow finds the same problem of a shared
    file in each)."""
    seen: set[tuple[object, ...]] = set()
    out: list[Diagnostic] = []
    for d in found:
        key = (d.file, d.line, d.column, d.path, d.message, d.hint, d.code, d.severity)
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def _cuts(project: Project) -> dict[str, tuple[PathKey, ...]]:
    """Each file with values a schema error made unreadable, and their paths."""
    sources = [wf.source for wf in project.workflows] + [t.source for t in project.tools.values()]
    sources += [layer.source for layers in project.agent_layers.values() for layer in layers]
    sources += [m.source for m in project.models.values()]
    return {src.display: src.cut for src in sources if src.cut}


def _unreachable(project: Project, reachable: set[str]) -> list[Diagnostic]:
    return [
        loaded.source.diag(
            ("name",),
            f"agent '{name}' is not reachable from any workflow here",
            "add it to an agent's `tools`, a workflow's `entry` or `steps`, or delete it",
            "unreachable",
            severity="warning",
        )
        for name, loaded in project.agents.items()
        if name not in reachable and not loaded.builtin
    ]


# ---------------------------------------------------------------- tools


def _check_tools(tools: list[Loaded[ToolManifest]], project: Project) -> list[Diagnostic]:
    """What every tools.d manifest gets, then what its kind adds."""
    out: list[Diagnostic] = []
    for tool in tools:
        out += schema_problems(tool) + default_warnings(tool)
        out += check_setting(tool.source, ("sandbox",), tool.spec.sandbox)
    for kind in tool_kinds():
        own = [tool for tool in tools if tool.spec.implementation.kind == kind.name]
        if own:
            out += kind.check_tools(own, project)
    return out


# ---------------------------------------------------------------- agents


def _check_agent(loaded: Loaded[AgentManifest], project: Project) -> list[Diagnostic]:
    spec, src = loaded.spec, loaded.source
    out: list[Diagnostic] = []
    if spec.prompt is None and spec.prompt_file is None:
        if not (src.was_cut(("prompt",)) or src.was_cut(("prompt_file",))):  # else its schema error says it
            message = f"agent '{spec.name}' has no prompt"
            out.append(src.diag(("name",), message, "add `prompt:` or `prompt_file:`", "missing-prompt"))
    else:
        out += [d for d in _prompt_diagnostics(loaded, project, None) if d.code != "undefined-variable"]
    out += _check_tool_entries(loaded, project)
    out += check_setting(src, ("sandbox",), spec.sandbox)
    out += output_schema_diagnostics(loaded, project)
    if spec.stop and spec.stop.pattern:
        try:
            compile_regex(spec.stop.pattern)
        except re.error as e:
            hint = "quote the pattern with single quotes in YAML so backslashes stay"
            out.append(src.diag(("stop", "pattern"), f"invalid regex: {e}", hint, "bad-regex"))
    out += context_kind(spec.context).check(loaded, project)
    out += check_guardrails(loaded, project)
    out += check_memory(loaded, project)
    return out


def shadowed_by_server(name: str, project: Project) -> str | None:
    """What else an MCP server's name names (a tool or an agent, which an agent's entry of that
    name means), or None."""
    if name not in project.mcp_servers:
        return None
    found = project.tools.get(name) or project.agents.get(name)
    if found is None:
        return None
    what = "tool" if name in project.tools else "agent"
    where = "" if found.builtin else f" ({found.source.display})"
    return f"{'built-in ' if found.builtin else ''}{what} '{name}'{where}"


def _check_server_names(project: Project) -> list[Diagnostic]:
    """An MCP server named like a tool or an agent: an agent's entry of that name means the tool
    or agent, never the server (a use is an error at the entry)."""
    out = []
    for name, loaded in project.mcp_servers.items():
        if (other := shadowed_by_server(name, project)) is not None:
            key = "mcpServers" if loaded.source.path.suffix in (".json", ".md") else "mcp_servers"
            message = (
                f"MCP server '{name}' has the name of the {other}, which an agent's `{name}` entry means"
            )
            hint = f"rename the server (e.g. {name}-mcp), or name its tools `{name}.TOOL`"
            out.append(loaded.source.diag((key, name), message, hint, "ambiguous-name", severity="warning"))
    return out


def _check_tool_entries(loaded: Loaded[AgentManifest], project: Project) -> list[Diagnostic]:
    """Each entry of the agent's `tools`: listed once, and checked by the kind that claims it."""
    src = loaded.source
    out: list[Diagnostic] = []
    seen: set[str] = set()
    for i, name, config in tool_entries(loaded.spec):
        if name in seen:
            out.append(
                src.diag(("tools", i), f"tool '{name}' is listed twice", "keep one entry", "duplicate-tool")
            )
        seen.add(name)
        if (other := shadowed_by_server(name, project)) is not None:
            server = project.mcp_servers[name].source.display
            message = f"'{name}' names both the {other} and the MCP server '{name}' ({server})"
            hint = f"rename the MCP server (e.g. {name}-mcp); `{name}.TOOL` names one tool of the server"
            out.append(src.diag(("tools", i), message, hint, "ambiguous-name"))
            continue
        if among(name, project.broken):  # its file (or the servers it may be) did not load
            continue
        kind = tool_kind_for(name, project)
        if kind is None:
            out.append(unknown_entry(src, i, name, project))
        else:
            out += kind.check_entry(EntryRef(src, i, name, config, project))
    return out


def _prompt_source(
    loaded: Loaded[AgentManifest], project: Project
) -> tuple[str, str, int, Path | None] | None:
    """(template text, display file, line offset, template path) of an agent's prompt."""
    spec, src = loaded.spec, loaded.source
    if isinstance(spec.prompt, McpPromptSpec):  # an MCP server's text: checked by _mcp_prompt
        return None
    if spec.prompt is not None:
        line, _ = src.position(("prompt",))
        text_line = src.text.splitlines()[line - 1] if src.text else ""
        block = bool(re.search(r":\s*[|>][+-]?\d*\s*(#.*)?$", text_line))
        return spec.prompt, src.display, line - 1 + int(block), None
    if spec.prompt_file is None:
        return None
    path = find_agent_prompt(loaded, project)
    if path is None:
        return None
    return path.read_text(encoding="utf-8"), display_path(path), 0, path


def _mcp_prompt(prompt: McpPromptSpec, src: Source, project: Project) -> list[Diagnostic]:
    """An agent's `prompt: {mcp: SERVER, ...}` names a declared server; its arguments are
    templates that compile (`validate --connect` does not fetch it)."""
    out = []
    if prompt.mcp not in project.mcp_servers:
        servers = sorted(project.mcp_servers)
        hint = did_you_mean(prompt.mcp, servers) or (
            f"declared servers: {', '.join(servers)}"
            if servers
            else "declare it in `mcp_servers:` or .mcp.json"
        )
        out.append(src.diag(("prompt", "mcp"), f"unknown MCP server '{prompt.mcp}'", hint, "unknown-server"))
    for key, value in prompt.arguments.items():
        info = analyse(value)
        if info.error:
            where = ("prompt", "arguments", key)
            out.append(src.diag(where, f"Jinja2 syntax error: {info.error}", "", "template-syntax"))
    return out


def _prompt_diagnostics(
    loaded: Loaded[AgentManifest], project: Project, inputs: set[str] | None
) -> list[Diagnostic]:
    spec, src = loaded.spec, loaded.source
    if isinstance(spec.prompt, McpPromptSpec):
        return _mcp_prompt(spec.prompt, src, project)
    found = _prompt_source(loaded, project)
    if found is None:
        if spec.prompt_file is not None:
            dirs = ", ".join(display_path(p) for p in project.prompt_dirs()) or "(no prompts/ folder)"
            return [
                src.diag(
                    ("prompt_file",),
                    f"prompt file '{spec.prompt_file}' not found",
                    f"looked in {dirs}",
                    "missing-prompt",
                )
            ]
        return []
    text, display, offset, _ = found
    provided = PROMPT_BUILTINS | set(spec.vars) | unreadable(src, "vars") | (inputs or set())
    return _template_problems(text, display, offset, project, provided, f"agent '{spec.name}'")


def _template_problems(
    text: str, display: str, offset: int, project: Project, provided: AbstractSet[str], where: str
) -> list[Diagnostic]:
    """A prompt template's problems: its syntax, the templates it includes that are missing,
    and the variables it uses that nothing `provided` (`where`: whose prompt it is)."""
    info = analyse(text)
    if info.error:
        return [
            Diagnostic(
                display,
                offset + info.error_line,
                1,
                "",
                f"Jinja2 syntax error: {info.error}",
                "check {{ }} and {% %} pairs",
                "template-syntax",
            )
        ]
    out = []
    for inc in info.includes:
        if project.find_prompt(inc) is None:
            out.append(
                Diagnostic(
                    display,
                    offset + 1,
                    1,
                    "",
                    f"included template '{inc}' not found",
                    "put it under prompts/",
                    "missing-prompt",
                )
            )
    for var, line in info.variables.items():
        if not among(var, provided):
            hint = (
                did_you_mean(var, provided) or "declare it under the agent's `vars:` or as a workflow input"
            )
            out.append(
                Diagnostic(
                    display,
                    offset + line,
                    1,
                    "",
                    f"{where}: prompt uses '{{{{ {var} }}}}' which nothing provides",
                    hint,
                    "undefined-variable",
                )
            )
    return out


def _check_cycles(project: Project) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    state: dict[str, int] = {}  # 1 visiting, 2 done
    reported: set[frozenset[str]] = set()

    def visit(name: str, stack: list[str]) -> None:
        state[name] = 1
        for callee in agent_callees(project, name):
            if state.get(callee) == 1:
                cycle = [*stack[stack.index(callee) :], callee]
                key = frozenset(cycle)
                if key not in reported:
                    reported.add(key)
                    loaded = project.agents[name]
                    idx = next(i for i, n, _ in tool_entries(loaded.spec) if n == callee)
                    out.append(
                        loaded.source.diag(
                            ("tools", idx),
                            "agent-as-tool cycle: " + " -> ".join(cycle),
                            "an agent may not (indirectly) call itself; remove one of these tool entries",
                            "agent-cycle",
                        )
                    )
            elif callee not in state:
                visit(callee, [*stack, callee])
        state[name] = 2

    for name in sorted(project.agents):
        if name not in state:
            visit(name, [name])
    return out


# ---------------------------------------------------------------- workflows


def _check_workflow(
    wf: Loaded[WorkflowManifest], project: Project, reachable: set[str], uses: ModelUses
) -> list[Diagnostic]:
    spec, src = wf.spec, wf.source
    models = workflow_models(wf, project)
    out = _check_workflow_templates(wf) + check_setting(src, ("sandbox",), spec.sandbox) + check_steps(wf)
    for name, model in spec.models.items():
        out += _check_fallback(src, name, model, models) + unset_diagnostics(src, name, model)
    if spec.default_model and (problem := reference_problem(spec.default_model, models)):
        hint = did_you_mean(spec.default_model, models) or "define it under `models:`"
        out.append(src.diag(("default_model",), problem, hint, "unknown-model"))
    out += _check_workspace_paths(wf) + _check_copy_paths(wf)
    starts = workflow_agents(spec)
    for name, parts in starts:
        if name not in project.agents and name not in project.broken:
            hint = did_you_mean(name, set(project.agents)) or "add agents.d/" + name + ".yaml"
            out.append(src.diag(parts, f"unknown agent '{name}'", hint, "unknown-agent"))
    seen = reachable_agents([n for n, _ in starts if n in project.agents], project)
    reachable |= seen
    inputs = set(spec.inputs) | unreadable(src, "inputs")
    for name in sorted(seen):
        out += _check_agent_in_workflow(project.agents[name], project, wf, models, inputs, uses)
        out += index_over_cap(project.agents[name], wf.source.path.parent)
    out += _no_model(wf, project, seen)
    if not any(d.severity == "error" for d in out) and not src.cut_within(("limits",)):
        out += check_costs(wf, project, seen)
    return out


def workflow_models(wf: Loaded[WorkflowManifest], project: Project) -> set[str]:
    """The model names a workflow's agents may use: its own, the project's models.d ones, and
    those written in either that a schema error made unreadable (they exist)."""
    own = set(wf.spec.models) | unreadable(wf.source, "models")
    return own | set(project.models) | project.unreadable_models


def _check_shared_models(project: Project) -> list[Diagnostic]:
    """The project's models.d models (their fallbacks name models every workflow here has) and
    its `default_model` (for the workflows that set none): each checked once."""
    out: list[Diagnostic] = []
    shared = set.intersection(*(workflow_models(wf, project) for wf in project.workflows))
    for name, loaded_model in project.models.items():
        if not loaded_model.builtin:
            model_src, model = loaded_model.source, loaded_model.spec
            out += _check_fallback(model_src, name, model, shared) + unset_diagnostics(model_src, name, model)
    default, where = project.default_model, project.default_model_source
    if default is None or where is None or is_builtin_file(where.display, project.roots[0]):
        return out
    for wf in project.workflows:
        models = workflow_models(wf, project)
        if not wf.spec.default_model and (problem := reference_problem(default, models)):
            hint = did_you_mean(default, models) or "define it under `models:`"
            return [*out, where.diag(("default_model",), problem, hint, "unknown-model")]
    return out


def builtin_prompt_names(loaded: Loaded[AgentManifest]) -> list[str]:
    """The templates a built-in agent's prompt reads from its own prompts/ folder: its
    prompt_file and what that includes (recursively)."""
    if loaded.spec.prompt_file is None:
        return []
    folder = loaded.root / "prompts"
    names: list[str] = []
    todo = [loaded.spec.prompt_file]
    while todo:
        name = todo.pop()
        path = folder / name
        if name in names or not is_file(path):
            continue
        names.append(name)
        todo += analyse(path.read_text(encoding="utf-8")).includes
    return names


def shadowed_prompts(project: Project, used: set[str]) -> list[Diagnostic]:
    """A file of the project's prompts/ named like a template a built-in agent the workflows
    use reads: the built-in keeps its own (so a project never changes it by accident), so the
    file would be silently ignored; one warning per file says how to use it."""
    folder = project.roots[0] / "prompts"
    readers: dict[str, list[str]] = {}
    if not is_dir(folder):
        return []
    for name in sorted(used):
        loaded = project.agents.get(name)
        if loaded is not None and loaded.builtin:
            for template in builtin_prompt_names(loaded):
                if is_file(folder / template):
                    readers.setdefault(template, []).append(name)
    out: list[Diagnostic] = []
    for template, names in sorted(readers.items()):
        quoted = ", ".join(f"'{n}'" for n in names)
        agents = (
            f"the built-in agent {quoted} reads" if len(names) == 1 else f"the built-in agents {quoted} read"
        )
        message = f"prompts/{template} is not used: {agents} the built-in {template}"
        if len(names) == 1:
            hint = f"to use it, override the agent in this project: `flowrun new agent {names[0]}`"
        else:
            hint = "to use it, override them in this project: `flowrun new agent NAME` for " + ", ".join(
                names
            )
        path = display_path(folder / template)
        out.append(Diagnostic(path, 1, 1, "", message, hint, "shadowed", "warning"))
    return out


def _check_workspace_paths(wf: Loaded[WorkflowManifest]) -> list[Diagnostic]:
    """The seeds' paths and the output stay in the workspace, with names a filesystem takes."""
    spec, src = wf.spec, wf.source
    paths: list[tuple[YamlPath, str, bool]] = [
        (("workspace", "files", p), p, True) for p in spec.workspace.files
    ]
    if spec.output:
        paths.append((("output",), spec.output, False))
    out: list[Diagnostic] = []
    for parts, path, key in paths:
        if not safe_relative(path):
            message = f"'{path}' leaves the workspace"
            out.append(src.diag(parts, message, "use a relative path without '..'", "bad-path", key=key))
        elif (too_long := long_name(path)) is not None:
            out.append(src.diag(parts, too_long, "shorten it", "bad-path", key=key))
    return out


def _check_copy_paths(wf: Loaded[WorkflowManifest]) -> list[Diagnostic]:
    """Each `workspace.copy` entry exists next to the workflow (or is the shipped corpus)."""
    here = wf.source.path.parent
    out: list[Diagnostic] = []
    for i, rel in enumerate(wf.spec.workspace.copy_paths):
        if (too_long := long_name(rel)) is not None:
            out.append(
                wf.source.diag(
                    ("workspace", "copy", i), f"workspace.copy: {too_long}", "shorten it", "bad-path"
                )
            )
        elif copy_source(here, rel) is None:
            nearby = {"corpus", *(p.name for p in _listing(here / rel))}
            hint = did_you_mean(rel.rstrip("/").rpartition("/")[2], nearby) or (
                f"give a path next to the workflow ({display_path(here)}); `corpus` is the shipped corpus"
            )
            message = f"workspace.copy: '{rel}' not found"
            out.append(wf.source.diag(("workspace", "copy", i), message, hint, "missing-path"))
    return out


def _listing(path: Path, limit: int = 1000) -> list[Path]:
    """Up to `limit` entries of the folder that should hold `path` (for a did-you-mean)."""
    try:
        return list(itertools.islice(path.parent.iterdir(), limit))
    except OSError:
        return []


def _check_fallback(src: Source, name: str, model: ModelSpec, models: set[str]) -> list[Diagnostic]:
    """A model's `fallback` entries name other models that exist."""
    out: list[Diagnostic] = []
    for i, ref in enumerate(model.fallback):
        where = ("models", name, "fallback", i)
        if ref == name:
            out.append(src.diag(where, f"model '{name}' lists itself as a fallback", "remove it", "invalid"))
        elif problem := reference_problem(ref, models):
            hint = did_you_mean(ref, models) or "define it under `models:`"
            out.append(src.diag(where, f"fallback of '{name}': {problem}", hint, "unknown-model"))
    return out


def _workflow_templates(spec: WorkflowManifest) -> list[StepTemplate]:
    """Every template in a workflow (steps: with the names a foreach adds for its body)."""
    found: list[StepTemplate] = []
    if spec.task:
        found.append(StepTemplate(spec.task, ("task",), False))
    for path, value in spec.workspace.files.items():
        where: YamlPath = ("workspace", "files", path)
        if isinstance(value, str):
            found.append(StepTemplate(value, where, False))
        else:
            found.append(StepTemplate(seed(value).content, (*where, "content"), False))
    if spec.workspace.dir:
        found.append(StepTemplate(spec.workspace.dir, ("workspace", "dir"), False))
    return found + step_templates(spec.steps)


def _check_workflow_templates(wf: Loaded[WorkflowManifest]) -> list[Diagnostic]:
    src = wf.source
    out: list[Diagnostic] = []
    for template in _workflow_templates(wf.spec):
        text, parts = template.text, template.parts
        provided = set(wf.spec.inputs) | unreadable(src, "inputs") | WORKFLOW_BUILTINS | template.names
        info = analyse_expression(text) if template.expression else analyse(text)
        if info.error:
            message = f"Jinja2 syntax error: {info.error}"
            out.append(src.diag(parts, message, "check {{ }} and {% %} pairs", "template-syntax"))
        for var in info.variables:
            if not among(var, provided):
                hint = did_you_mean(var, provided) or "declare it under `inputs:`"
                message = f"template uses '{var}' which nothing provides"
                out.append(src.diag(parts, message, hint, "undefined-variable"))
    return out


# (agent, what is wrong with the model it names) -> the workflows it is wrong in, and a hint
ModelUses = dict[tuple[str, str], tuple[list[str], str]]


def _check_agent_in_workflow(
    loaded: Loaded[AgentManifest],
    project: Project,
    wf: Loaded[WorkflowManifest],
    models: set[str],
    inputs: set[str],
    uses: ModelUses,
) -> list[Diagnostic]:
    """An agent's prompt variables and models in one workflow that runs it. A model it names
    that is wrong is kept in `uses`, reported once for all workflows (`_model_use_problems`);
    the workflow's default model is checked with the workflow."""
    spec, src = loaded.spec, loaded.source
    out: list[Diagnostic] = []
    if not loaded.builtin:  # built-in prompts use only the engine's variables (tested)
        out = [d for d in _prompt_diagnostics(loaded, project, inputs) if d.code == "undefined-variable"]
    if spec.model and (problem := reference_problem(spec.model, models)):
        hint = did_you_mean(spec.model, models) or (
            f"define '{spec.model}' under the workflow's `models:` ({wf.source.display})"
        )
        uses.setdefault((spec.name, problem), ([], hint))[0].append(wf.spec.name)
    for i, ref in enumerate(spec.model_choices):
        if problem := reference_problem(ref, models):
            out.append(
                src.diag(("selectable_models", i), problem, did_you_mean(ref, models), "unknown-model")
            )
    return out


def _model_use_problems(project: Project, uses: ModelUses) -> list[Diagnostic]:
    """Each agent's wrong `model:` once, naming the workflows it is wrong in."""
    out: list[Diagnostic] = []
    for (agent, problem), (workflows, hint) in uses.items():
        names = ", ".join(f"'{name}'" for name in workflows)
        where = f"workflow {names}" if len(workflows) == 1 else f"workflows {names}"
        message = f"{problem} (used by agent '{agent}' in {where})"
        out.append(project.agents[agent].source.diag(("model",), message, hint, "unknown-model"))
    return out


def _no_model(wf: Loaded[WorkflowManifest], project: Project, agents: set[str]) -> list[Diagnostic]:
    """One problem for the agents of a workflow that name no model when it has no default."""
    src = wf.source
    if wf.spec.default_model or project.default_model or src.was_cut(("default_model",)):
        return []
    names = [
        name
        for name in sorted(agents)
        if not project.agents[name].spec.model and not project.agents[name].source.was_cut(("model",))
    ]
    if not names:
        return []
    listed = ", ".join(f"'{n}'" for n in names)
    who = f"agent {listed} names" if len(names) == 1 else f"agents {listed} name"
    return [
        src.diag(
            ("models",),
            f"{who} no model and the workflow has no `default_model`",
            "set `default_model:` in the workflow or `model:` in the agent",
            "no-model",
        )
    ]
