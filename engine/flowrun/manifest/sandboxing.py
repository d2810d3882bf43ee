"""The effective sandbox of a tool as one agent uses it, and an entry's approval mode: what the
runtime applies and what `flowrun validate --explain` shows, computed in one place.

Layers, later ones win key by key: the workflow's `sandbox:`, the agent's, the tool manifest's,
the agent's entry for the tool (`{execute_shell: {sandbox: {network: allow}}}`), then the
command line's `--sandbox MODE` for the mode. Binds and env names add up. Unset keys fall back
to SandboxPolicy's defaults: required, network deny."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from flowrun.manifest.diagnostics import Diagnostic
from flowrun.manifest.graph import run_agents, tool_entries
from flowrun.manifest.kinds import SandboxQuery, tool_kind_for
from flowrun.manifest.project import Project
from flowrun.manifest.specs import (
    ENTRY_KEYS,
    AgentManifest,
    Approve,
    SandboxMode,
    SandboxSpec,
    WorkflowManifest,
    sandbox_spec,
)
from flowrun.manifest.yaml_source import Source
from flowrun.redaction import is_secret_name
from flowrun.tools.sandbox import Mode, SandboxPolicy

DEFAULT_APPROVE: Approve = "always"


@dataclass(frozen=True, slots=True)
class Entry:
    """One tool entry of an agent, its flowrun-level keys taken out of the tool's config."""

    name: str
    config: dict[str, Any]  # the tool's own config
    sandbox: SandboxSpec | None
    approve: Approve


def split_entry(name: str, config: Mapping[str, object]) -> Entry:
    """An entry's config without `sandbox` and `approve` (validation has checked them)."""
    own = {k: v for k, v in config.items() if k not in ENTRY_KEYS}
    sandbox = parse_setting(config["sandbox"]) if "sandbox" in config else None
    approve = cast(Approve, config.get("approve", DEFAULT_APPROVE))
    return Entry(name, own, sandbox, approve)


def parse_setting(value: object) -> SandboxSpec:
    """A `sandbox:` value from a tool entry: a mode or a mapping (raises ValueError, or
    pydantic's ValidationError, which is one)."""
    if isinstance(value, dict):
        return SandboxSpec.model_validate(value)
    mode = "off" if value is False else value
    if mode not in ("required", "auto", "off"):
        raise ValueError(f"sandbox must be required, auto, off or a mapping, not {value!r}")
    return SandboxSpec(mode=mode)


def secret_env_names(spec: SandboxSpec | None) -> list[str]:
    """Names in `env` that the sandbox never passes (validation reports them)."""
    return [name for name in (spec.env if spec else []) if is_secret_name(name)]


def effective_policy(
    workflow: WorkflowManifest,
    agent: AgentManifest | None,
    layers: tuple[SandboxSpec | None, ...],
    base: Path,
    override: Mode | None = None,
) -> SandboxPolicy:
    """The policy of a tool of `agent`: `layers` are the tool manifest's and the entry's (no
    agent: the workflow's own, as a run's hooks get it)."""
    own = sandbox_spec(agent.sandbox) if agent is not None else None
    specs = [s for s in (sandbox_spec(workflow.sandbox), own, *layers) if s]
    policy = SandboxPolicy()
    mode, network = policy.mode, policy.network
    for spec in specs:
        mode = spec.mode if spec.mode is not None else mode
        network = spec.network if spec.network is not None else network
    return SandboxPolicy(
        mode=override if override is not None else mode,
        network=network,
        ro_binds=_paths(base, (p for s in specs for p in s.ro_binds)),
        rw_binds=_paths(base, (p for s in specs for p in s.rw_binds)),
        env=tuple(dict.fromkeys(n for s in specs for n in s.env if not is_secret_name(n))),
    )


def _paths(base: Path, paths: Any) -> tuple[str, ...]:
    return tuple(dict.fromkeys(str((base / Path(p).expanduser()).resolve()) for p in paths))


def tool_layers(project: Project, entry: Entry) -> tuple[SandboxSpec | None, ...]:
    loaded = project.tools.get(entry.name)
    return (sandbox_spec(loaded.spec.sandbox) if loaded else None, entry.sandbox)


def entry_policy(name: str, config: Mapping[str, object], where: SandboxQuery) -> SandboxPolicy:
    """The sandbox of a declared tool's processes as `where.agent` lists it (`config`: the entry's)."""
    entry = split_entry(name, config)
    layers = tool_layers(where.project, entry)
    return effective_policy(where.workflow, where.agent, layers, where.base, where.override)


def process_policies(
    project: Project, workflow: WorkflowManifest, base: Path, override: Mode | None = None
) -> list[tuple[str, str, SandboxPolicy]]:
    """(agent, tool, policy) for every tool that starts processes, of every agent a run of
    `workflow` may start."""
    found: list[tuple[str, str, SandboxPolicy]] = []
    for name in sorted(run_agents(workflow, project)):
        loaded = project.agents.get(name)
        if loaded is None:
            continue
        where = SandboxQuery(project, workflow, loaded.spec, base, override)
        for _, tool, config in tool_entries(loaded.spec):
            kind = tool_kind_for(tool, project)
            policy = kind.process_policy(tool, config, where) if kind is not None else None
            if policy is not None:
                found.append((name, tool, policy))
    return found


def explain(
    project: Project, workflow: WorkflowManifest, base: Path, override: Mode | None = None
) -> list[str]:
    """Per agent a run may start: its sandbox, each tool that starts processes with the policy
    it runs under, and each entry that needs approval."""
    confined: dict[str, list[str]] = {}
    for agent, tool, policy in process_policies(project, workflow, base, override):
        confined.setdefault(agent, []).append(f"  {tool}: {policy.describe()}")
    lines: list[str] = []
    for name in sorted(run_agents(workflow, project)):
        loaded = project.agents.get(name)
        if loaded is None:
            continue
        lines.append(
            f"{name}: sandbox {effective_policy(workflow, loaded.spec, (), base, override).describe()}"
        )
        lines += confined.get(name, ["  (no tool of this agent starts processes)"])
        entries = [split_entry(tool, config) for _, tool, config in tool_entries(loaded.spec)]
        lines += [f"  {e.name}: approve {e.approve}" for e in entries if e.approve != DEFAULT_APPROVE]
    return lines


# ---------------------------------------------------------------- validation


def check_setting(
    src: Source, parts: tuple[str | int, ...], setting: SandboxMode | SandboxSpec | None
) -> list[Diagnostic]:
    """A `sandbox:` of a workflow, agent or tool: env names the sandbox would never pass."""
    return [
        src.diag(
            (*parts, "env"),
            f"'{name}' looks like a secret: the sandbox never passes it to a tool",
            "secrets stay out of tools; give the tool what it needs another way",
            "secret-env",
        )
        for name in secret_env_names(sandbox_spec(setting))
    ]


def check_entry_keys(src: Source, index: int, name: str, config: dict[str, Any]) -> list[Diagnostic]:
    """`approve` and `sandbox` of one tool entry."""
    from pydantic import ValidationError

    where: tuple[str | int, ...] = ("tools", index, name)
    out: list[Diagnostic] = []
    if "approve" in config and config["approve"] not in ("ask", "always", "never"):
        message = f"approve must be ask, always or never, not {config['approve']!r}"
        out.append(src.diag((*where, "approve"), message, "", "bad-config"))
    if "sandbox" not in config:
        return out
    try:
        spec = parse_setting(config["sandbox"])
    except ValidationError as e:
        for err in e.errors():
            out.append(src.diag((*where, "sandbox", *err["loc"]), f"sandbox: {err['msg']}", "", "bad-config"))
        return out
    except ValueError as e:
        return [*out, src.diag((*where, "sandbox"), str(e), "", "bad-config")]
    return out + check_setting(src, (*where, "sandbox"), spec)
