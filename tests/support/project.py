"""The project builder: a workflow, its agents and any other files written into a folder as a
user lays them out (`wf.yaml`, `agents.d/NAME.yaml`, `script.yaml`, ...).

    wf = write_project(tmp_path, workflow(model("openai"), entry="boss", task="Go."),
                       {"boss": ["write_file"]})

An agent's prompt is "You are the NAME." unless given: `wire_script` matches the wire server's
replies to agents by it, and `who` reads it back. A file given as a mapping or list is written as
YAML in the order given, a string dedented (a test whose point is the YAML text writes that
text), bytes as they are."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from support.wire_server import Reply, Script, WireRequest

# the scripted provider, its replies in script.yaml (see `script_manifest`)
SCRIPTED: dict[str, Any] = {"provider": "scripted", "model": "s", "script": "script.yaml"}


def prompt_of(name: str) -> str:
    return f"You are the {name}."


def who(request: WireRequest) -> str:
    """The agent a model request is from, read back from its prompt (`prompt_of`)."""
    return request.system.removeprefix("You are the ").split(".", 1)[0]


def model(wire: str, **keys: Any) -> dict[str, Any]:
    """A `models:` entry of `wire`'s provider ("anthropic", "openai"), model id "m", then `keys`."""
    return {"provider": wire, "model": "m", **keys}


def workflow(model_entry: Mapping[str, Any] = SCRIPTED, **keys: Any) -> dict[str, Any]:
    """A workflow manifest named "wf" whose one model, `m`, is `model_entry`, then `keys`; a key
    given None is left out."""
    spec = {"version": 1, "kind": "workflow", "name": "wf", "models": {"m": dict(model_entry)}}
    spec |= {"default_model": "m", **keys}
    return {key: value for key, value in spec.items() if value is not None}


def agent(name: str, **keys: Any) -> dict[str, Any]:
    """An agent manifest: its name, the prompt "You are the NAME.", then `keys`."""
    return {"version": 1, "kind": "agent", "name": name, "prompt": prompt_of(name), **keys}


def write_files(root: Path, files: Mapping[str, Any]) -> Path:
    """Each file (a path relative to `root`) with its folders: a mapping or list as YAML, a
    string dedented, bytes as they are; `root` back."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(textwrap.dedent(content), encoding="utf-8")
        else:
            path.write_text(yaml.safe_dump(content, sort_keys=False), encoding="utf-8")
    return root


def write_project(
    root: Path,
    manifest: Mapping[str, Any] | str,
    agents: Mapping[str, Any] | None = None,
    files: Mapping[str, Any] | None = None,
    *,
    name: str = "wf.yaml",
) -> Path:
    """The workflow `manifest` (or its YAML text) as `root/NAME`, an agents.d file per agent
    (name: its keys over `agent(name)`, or just its tools) and `files`; the workflow's path."""
    manifests = {
        f"agents.d/{n}.yaml": agent(n, **({"tools": keys} if isinstance(keys, list) else keys))
        for n, keys in (agents or {}).items()
    }
    write_files(root, {name: manifest, **manifests, **(files or {})})
    return root / name


def script_manifest(replies: Mapping[str, Any]) -> dict[str, Any]:
    """The scripted provider's script.yaml: per agent, its replies (`{"text": ...}`,
    `{"tool_calls": [{"name": ..., "arguments": ...}]}`) in order."""
    return {"version": 1, "kind": "script", "agents": dict(replies)}


def scripted_project(root: Path, agents: Mapping[str, Any], replies: Mapping[str, Any], **keys: Any) -> Path:
    """A project on the scripted model: `agents` (as `write_project` takes them), their
    `replies` (see `script_manifest`), the workflow's `keys` over the entry "boss"; the
    workflow file's path."""
    spec = workflow(SCRIPTED, **{"entry": "boss", **keys})
    return write_project(root, spec, agents, {"script.yaml": script_manifest(replies)})


def wire_script(replies: dict[str, list[Reply]]) -> Script:
    """The wire server's script of the agents `replies` names, each known by its prompt."""
    return Script(replies, {name: prompt_of(name) for name in replies})
