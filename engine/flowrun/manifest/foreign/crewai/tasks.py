"""CrewAI tasks as flowrun steps, in the order the crew runs them: each an agent step whose task
is CrewAI's task prompt (description, expected output, the markdown rule, the context of
earlier tasks' outputs) and whose answer is written to its `output_file` (else
`crew/<task>.md`, which later tasks read as their context). `async_execution` tasks in a row
run as one `parallel:` step; `human_input`, `guardrail` and a task's own `tools` make a copy
of its agent with `ask_user`, a judge guardrail or those tools."""

from __future__ import annotations

from flowrun.manifest.foreign import placeholders
from flowrun.manifest.foreign.conversion import Doc, flowrun_name
from flowrun.manifest.foreign.crewai.agents import MANAGER, judge_guardrails, tool_entries
from flowrun.manifest.foreign.crewai.build import Build, Draft
from flowrun.manifest.foreign.crewai.definition import Layers
from flowrun.manifest.foreign.keys import KeyTable, sort_keys, strings
from flowrun.manifest.yaml_source import PathKey
from flowrun.paths import safe_relative

DIVIDERS = "\n\n----------\n\n"  # between earlier outputs in a task's context (CrewAI's formatter)
EXPECTED = (
    "\nThis is the expected criteria for your final answer: {}\n"
    "you MUST return the actual complete content as the final answer, not a summary."
)
MARKDOWN = (
    "Your final answer MUST be formatted in Markdown syntax.\nFollow these guidelines:\n"
    "- Use # for headers\n- Use ** for bold text\n- Use * for italic text\n- Use - or * for bullet "
    "points\n- Use `code` for inline code\n- Use ```language for code blocks"
)
HUMAN_INPUT = (
    "\n\nBefore you give your final answer, show it to the person with ask_user and ask for their "
    'feedback (they answer "looks good" to accept it); apply their feedback until they accept it.'
)
PYTHON_ONLY = "it names Python that flowrun does not run"

TASK_KEYS = KeyTable(
    "a CrewAI task",
    used=(
        "name",
        "description",
        "expected_output",
        "agent",
        "context",
        "output_file",
        "human_input",
        "guardrail",
        "guardrails",
        "guardrail_max_retries",
        "async_execution",
        "tools",
        "markdown",
    ),
    cosmetic=("create_directory", "verbose"),
    dropped={
        "output_json": "structured output needs the Python model; give the agent an `output_schema`",
        "output_pydantic": "structured output needs the Python model; give the agent an `output_schema`",
        "response_model": "structured output needs the Python model; give the agent an `output_schema`",
        "converter_cls": PYTHON_ONLY,
        "callback": "Python callbacks are not run",
        "type": "a ConditionalTask's condition is Python; the task always runs",
        "condition": "a ConditionalTask's condition is Python; the task always runs",
        "input_files": "give the files to the run (`workspace.copy`) and the agent read_file",
        "security_config": "flowrun's sandbox and approvals govern what tools may do",
        "allow_crewai_trigger_context": "CrewAI's trigger payloads do not reach flowrun",
    },
)


def add_steps(build: Build, hierarchical: bool) -> tuple[list[Doc], dict[PathKey, PathKey], str | None]:
    """The workflow's steps, where each was written (in the tasks' file), and its output file."""
    outputs: dict[str, tuple[str, str]] = {}  # task key -> (output template, its read expression)
    steps: list[Doc] = []
    where: dict[PathKey, PathKey] = {}
    parallel: list[Doc] = []
    for i, layers in enumerate(build.crew.tasks):
        for part in layers.parts:
            sort_keys(build.conv, part.src, part.base, part.data, TASK_KEYS)
        step = _step(build, layers, i, outputs, hierarchical)
        if step is None:
            continue
        if layers.value("async_execution") is True and i < len(build.crew.tasks) - 1:
            parallel.append(step)
            continue
        if parallel:
            steps.append({"parallel": parallel} if len(parallel) > 1 else parallel[0])
            parallel = []
        where[("steps", len(steps))] = layers.main.base
        steps.append(step)
    last = steps[-1] if steps else None
    output = (
        last.get("output") if isinstance(last, dict) and "{" not in str(last.get("output", "{")) else None
    )
    return steps, where, output


def _step(
    build: Build, layers: Layers, index: int, outputs: dict[str, tuple[str, str]], hierarchical: bool
) -> Doc | None:
    conv, main = build.conv, layers.main
    found = layers.texts(conv, ("description", "expected_output"), "task")
    if found is None and not layers.main.data:
        return None  # no entry at all: said once
    texts = {key: build.template(value) for key, value in (found or {}).items()}
    agent = _agent_of(build, layers, hierarchical)
    if len(texts) < 2 or agent is None:
        return None
    text = "Current Task: " + texts["description"] + EXPECTED.format(texts["expected_output"])
    if layers.value("markdown") is True:
        text += "\n" + MARKDOWN
    if build.agents[agent].inject_date:
        text += "\n\nCurrent Date: {{ date }}"
    text += _context(build, layers, index, outputs)
    output, read = _output(build, layers)
    outputs[layers.key] = (output, read)
    agent, extra = _variant(build, layers, agent)
    conv.note(main.src, main.base, f"step {index + 1}: agent {agent}, its answer written to {output}")
    return {"agent": agent, "task": text + extra, "output": output}


def _agent_of(build: Build, layers: Layers, hierarchical: bool) -> str | None:
    if hierarchical:
        return MANAGER if MANAGER in build.agents else None
    found = layers.find("agent")
    if found is None or not isinstance(found.value, str):
        where = layers.main
        hint = "name one of the crew's agents (a hierarchical crew's manager needs none)"
        if build.crew.shape == "yaml" and build.crew.code is None:
            hint = "crew.py, which would say which agent runs it, is not next to config/: add `agent:` here"
        build.conv.problem(
            where.src, where.base, f"CrewAI task '{layers.key}' names no `agent`", hint, "missing-key"
        )
        return None
    name = build.names.get(found.value)
    if name is None:
        from flowrun.manifest.schema.check import did_you_mean

        hint = did_you_mean(found.value, build.crew.agents) or "agents: " + ", ".join(build.crew.agents)
        build.conv.problem(
            found.src,
            found.where,
            f"task '{layers.key}' names unknown agent '{found.value}'",
            hint,
            "unknown-agent",
        )
        return None
    return name if name in build.agents else None


def _context(build: Build, layers: Layers, index: int, outputs: dict[str, tuple[str, str]]) -> str:
    """CrewAI's context: every earlier output when `context` is not given, the outputs of the
    tasks it names, or none for an empty list."""
    found = layers.find("context")
    earlier = [t.key for t in build.crew.tasks[:index] if t.key in outputs]
    if found is None:
        named = earlier
    else:
        named = []
        for i, key in enumerate(strings(build.conv, found.src, found.where, found.value, "`context`")):
            if key in outputs:
                named.append(key)
            elif key in {t.key for t in build.crew.tasks}:
                build.conv.problem(
                    found.src,
                    (*found.where, i),
                    f"context task '{key}' runs after '{layers.key}'",
                    "a task's context is the output of tasks before it",
                    "bad-context",
                )
            else:
                from flowrun.manifest.schema.check import did_you_mean

                hint = did_you_mean(key, [t.key for t in build.crew.tasks]) or ""
                build.conv.problem(
                    found.src, (*found.where, i), f"context names unknown task '{key}'", hint, "unknown-task"
                )
        build.conv.note(
            found.src, found.where, "the named tasks' outputs, read from their files, in the task's text"
        )
    if not named:
        return ""
    reads = [f"{{{{ workspace.read({outputs[key][1]}) }}}}" for key in named]
    return "\n\nThis is the context you're working with:\n" + DIVIDERS.join(reads)


def _output(build: Build, layers: Layers) -> tuple[str, str]:
    """The file a task's answer is written to (a template) and the expression that names it."""
    found = layers.find("output_file")
    default = f"crew/{flowrun_name(layers.key)}.md"
    if found is None:
        return default, repr(default)
    value = found.value
    if not isinstance(value, str) or not safe_relative(value.lstrip("./") or value):
        message = f"output_file {value!r} is not a path inside the run folder; the answer goes to {default}"
        build.conv.problem(
            found.src, found.where, message, "a relative path without '..'", "bad-path", severity="warning"
        )
        return default, repr(default)
    path = value.removeprefix("./")
    build.conv.note(found.src, found.where, f"the step's output {path}, in the run folder", "approximated")
    template = build.template(path)
    return template, placeholders.expression(path, placeholders.CREWAI)


def _variant(build: Build, layers: Layers, agent: str) -> tuple[str, str]:
    """The agent that runs this task and text added to its task: the crew's agent, or a copy
    with the task's tools, `ask_user` for `human_input`, or its guardrails."""
    tools = layers.find("tools")
    human = layers.find("human_input")
    guardrails = [f for f in (layers.find("guardrail"), layers.find("guardrails")) if f is not None]
    if tools is None and (human is None or human.value is not True) and not guardrails:
        return agent, ""
    base = build.agents[agent]
    data = {**base.data, "name": flowrun_name(f"{agent}-{layers.key}")}
    extra = ""
    if tools is not None:
        data["tools"] = tool_entries(build, tools, data["name"])
        build.conv.note(
            tools.src, tools.where, f"agent {data['name']}: a copy of {agent} with these tools", "mapped"
        )
    if human is not None and human.value is True:
        data["tools"] = [*data.get("tools", []), "ask_user"]
        extra = HUMAN_INPUT
        build.conv.note(
            human.src,
            human.where,
            "ask_user: the agent asks for feedback before it answers (a decision the run waits for)",
            "approximated",
        )
    if guardrails:
        checks = judge_guardrails(build, guardrails, layers.value("guardrail_max_retries"))
        data["guardrails"] = {"output": [*data.get("guardrails", {}).get("output", []), *checks]}
    build.agents[data["name"]] = Draft(data, base.src, base.base, base.where, base.inject_date)
    return data["name"], extra
