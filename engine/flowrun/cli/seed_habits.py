"""Pointed answers to the command lines the designs flowrun was made from taught their users:
`flowrun instructor_worker.yaml "the task" -d ./project -r 5 -i MODEL` says which input and which
flowrun options mean the same (`--task "the task" --workdir ./project --set ...max_calls=5
--model instructor=MODEL`), all of them at once when every part has a match."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

import click

from flowrun.errors import UsageError

if TYPE_CHECKING:
    from flowrun.api import Workflow

WORKDIR_FLAGS = ("-d", "--dir", "--directory", "--project")
ROUND_FLAGS = ("-r", "--rounds", "--max-rounds")
MODEL_FLAGS = ("-i", "--instructor-model")
KEY_FLAGS = ("--api-key", "--auth-token")
RAW_FLAGS = ("--show-raw",)  # seed 001's chat script: every raw answer and call
PROVIDER_FLAGS = ("--provider",)  # seed 001: --provider zhipu --model GLM-4.7
# what the seeds called a provider, as flowrun names it (a preset or a provider)
PROVIDER_NAMES = {
    "zhipu": "glm",
    "zhipuai": "glm",
    "bigmodel": "glm",
    "dashscope": "qwen",
    "kimi": "moonshot",
}
# the long ones (a `--` option that is not an input's comes here when it is one of these)
LONG_FLAGS = tuple(
    f
    for f in WORKDIR_FLAGS + ROUND_FLAGS + MODEL_FLAGS + KEY_FLAGS + RAW_FLAGS + PROVIDER_FLAGS
    if f.startswith("--")
)


def habit_error(wf: Workflow, args: list[str], at: int) -> UsageError:
    """The error for `args[at]`, which is neither an input option nor a flowrun option."""
    arg = args[at]
    value = args[at + 1] if at + 1 < len(args) else None
    message, hint = _explained(wf, arg, value)
    words = translated(wf, args)
    if words is not None and len(words) > 2:  # more than the one this hint names
        hint += f"; all of them in flowrun's words: {shlex.join(words)}"
    return UsageError(message, hint)


def _explained(wf: Workflow, arg: str, value: str | None) -> tuple[str, str]:
    flag = arg.partition("=")[0]
    if not arg.startswith("-"):
        name = _text_input(wf)
        if name is not None:
            return (
                f"unexpected argument {_short(arg)!r}",
                f"give it as the workflow's input: --{name} {shlex.quote(arg)}",
            )
        return f"unexpected argument {_short(arg)!r}", "inputs are given as --name value: " + _inputs(wf)
    if flag in WORKDIR_FLAGS:
        return f"{flag} is not a flowrun option", "to run the agents in a folder of yours: --workdir DIR"
    if flag in ROUND_FLAGS:
        path = _round_limit(wf)
        return f"{flag} is not a flowrun option", f"a round limit is a manifest value: --set {path}=N"
    if flag in MODEL_FLAGS:
        return f"{flag} is not a flowrun option", f"one agent's model: --model {_entry(wf)}=MODEL"
    if flag in RAW_FLAGS:
        return (
            f"{flag} is not a flowrun option",
            "-v prints every model answer and tool call as it happens; `flowrun show RUN --messages` "
            "prints each agent's whole conversation afterwards",
        )
    if flag in PROVIDER_FLAGS:
        return (
            f"{flag} is not a flowrun option",
            f"the provider is part of the model: --model {_model(value)}",
        )
    if flag in KEY_FLAGS:
        return (
            f"{flag} is not a flowrun option",
            "keys are read from the environment (export ANTHROPIC_API_KEY=..., or a .env file next "
            "to the workflow), never from the command line",
        )
    return f"unexpected argument {arg!r}", "inputs are given as --name value: " + _inputs(wf)


def translated(wf: Workflow, args: list[str]) -> list[str] | None:
    """`args` in flowrun's words, or None when a part has no match."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        flag, eq, inline = arg.partition("=")
        value = inline if eq else (args[i + 1] if i + 1 < len(args) else None)
        step = 1 if eq or (flag.startswith("--") and not _takes_value(flag)) else 2
        if not arg.startswith("-"):
            name = _text_input(wf)
            if name is None:
                return None
            out += [f"--{name}", arg]
            i += 1
            continue
        if flag in RAW_FLAGS:
            out.append("-v")
            i += 1
            continue
        if flag in PROVIDER_FLAGS and value is not None:
            out += ["--model", _model(value)]
            i += 1 if eq else 2
            continue
        if flag in WORKDIR_FLAGS + ROUND_FLAGS + MODEL_FLAGS and value is not None:
            if flag in WORKDIR_FLAGS:
                out += ["--workdir", value]
            elif flag in ROUND_FLAGS:
                out += ["--set", f"{_round_limit(wf)}={value}"]
            else:
                out += ["--model", f"{_entry(wf)}={value}"]
            i += 1 if eq else 2
            continue
        if flag.startswith("--") and flag[2:] in _input_options(wf):
            out += args[i : i + step]
            i += step
            continue
        return None
    return out


def _takes_value(flag: str) -> bool:
    return flag not in ("--no-thinking", *RAW_FLAGS)


def _model(provider: str | None) -> str:
    """`PROVIDER:MODEL` for a `--provider` of the seeds, with the `--model` the command was
    given (`--provider zhipu --model GLM-4.7` is `--model glm:GLM-4.7`)."""
    name = PROVIDER_NAMES.get((provider or "").lower(), provider or "PROVIDER")
    ctx = click.get_current_context(silent=True)
    given = ctx.params.get("model") if ctx is not None else None  # (repeatable: a tuple)
    plain = [m for m in given if isinstance(m, str) and ":" not in m and "=" not in m] if given else []
    model = plain[-1] if plain else "MODEL"
    return f"{name}:{model}"


def _input_options(wf: Workflow) -> set[str]:
    return {name.replace("_", "-") for name in wf.inputs} | set(wf.inputs)


def _text_input(wf: Workflow) -> str | None:
    """The input a bare text is meant for: the only required one, else the only one."""
    required = [name for name, spec in wf.inputs.items() if spec.is_required]
    if len(required) == 1:
        return required[0]
    if not required and len(wf.inputs) == 1:
        return next(iter(wf.inputs))
    return None


def _inputs(wf: Workflow) -> str:
    return ", ".join(f"--{name}" for name in wf.inputs) or "(none)"


def _entry(wf: Workflow) -> str:
    return wf.spec.entry or "AGENT"


def _round_limit(wf: Workflow) -> str:
    """The `--set` path of the entry agent's round limit: the `max_calls` of the agent it calls
    (the instructor's worker), else its own `max_steps`."""
    from flowrun.manifest.graph import tool_entries

    entry = wf.spec.entry
    agent = wf.project.agents.get(entry) if entry else None
    if agent is None:
        return "agents.AGENT.max_steps"
    called = [name for _, name, config in tool_entries(agent.spec) if name in wf.project.agents]
    limited = [name for _, name, config in tool_entries(agent.spec) if "max_calls" in config]
    for name in limited + called:
        return f"agents.{entry}.tools.{name}.max_calls"
    return f"agents.{entry}.max_steps"


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
