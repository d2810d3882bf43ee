"""CrewAI agents as flowrun agents: role, goal and backstory become the system prompt as CrewAI
writes it ("You are {role}. {backstory}\\nYour personal goal is: {goal}"), `llm` the model,
`max_iter` the steps, `tools` flowrun's built-ins (builtin_tools.CREWAI) or Python tool entries,
and `allow_delegation` the crew's other agents offered as tools."""

from __future__ import annotations

from collections.abc import Mapping

from flowrun.manifest.foreign.builtin_tools import CREWAI, Equivalent
from flowrun.manifest.foreign.conversion import Doc, flowrun_name
from flowrun.manifest.foreign.crewai.build import Build, Draft
from flowrun.manifest.foreign.crewai.code import Python, ToolRef
from flowrun.manifest.foreign.crewai.definition import Found, Layers, config_key
from flowrun.manifest.foreign.keys import KeyTable, sort_keys

DEFAULT_MAX_ITER = 25  # CrewAI's Agent.max_iter
MANAGER = "crew_manager"
# CrewAI's hierarchical manager (translations/en.json, hierarchical_manager_agent)
MANAGER_ROLE = "Crew Manager"
MANAGER_GOAL = "Manage the team to complete the task in the best way possible."
MANAGER_BACKSTORY = (
    "You are a seasoned manager with a knack for getting the best out of your team.\nYou are also known "
    "for your ability to delegate work to the right people, and to ask the right questions to get the best "
    "out of your team.\nEven though you don't perform tasks by yourself, you have a lot of experience in "
    "the field, which allows you to properly evaluate the work of your team members."
)
NOT_RUN = "flowrun does not reproduce it"
GUARDRAIL_JUDGE = "crewai_guardrail"
DEFAULT_GUARDRAIL_RETRIES = 3  # CrewAI's Task.guardrail_max_retries
PYTHON_ONLY = "it names Python that flowrun does not run"
JUDGE_PROMPT = (
    "You check a task's output against a rule. Answer pass true when the output follows the rule, "
    "else pass false with what is wrong."
)

AGENT_KEYS = KeyTable(
    "a CrewAI agent",
    used=(
        "role",
        "goal",
        "backstory",
        "llm",
        "tools",
        "max_iter",
        "allow_delegation",
        "inject_date",
        "allow_code_execution",
        "settings",
        "guardrail",
        "guardrail_max_retries",
    ),
    cosmetic=("verbose", "date_format"),
    dropped={
        "function_calling_llm": "the agent's own model makes its tool calls",
        "max_rpm": "set `rate_limit` on its model in the workflow's `models:`",
        "max_execution_time": "bound the run with the workflow's `limits.max_wall_time_s`",
        "max_tokens": "set `max_tokens` on its model in the workflow's `models:`",
        "memory": "flowrun agents keep no memory across tasks",
        "cache": "tool results are not cached",
        "respect_context_window": "set the agent's `context:` strategy (e.g. compact) instead",
        "max_retry_limit": "model calls are retried by the provider's `max_retries`",
        "reasoning": "no planning step runs before the task",
        "max_reasoning_attempts": "no planning step runs before the task",
        "planning": "no planning step runs before the task",
        "planning_config": "no planning step runs before the task",
        "multimodal": "images are not passed to the agent",
        "knowledge_sources": "knowledge sources are not indexed; give the files to the agent's tools",
        "knowledge_config": "knowledge sources are not indexed",
        "embedder": "knowledge sources are not indexed",
        "use_system_prompt": "the prompt is always the system prompt",
        "system_template": "CrewAI's prompt templates are not read",
        "prompt_template": "CrewAI's prompt templates are not read",
        "response_template": "CrewAI's prompt templates are not read",
        "code_execution_mode": "code runs with the shell in flowrun's sandbox",
        "security_config": "flowrun's sandbox and approvals govern what tools may do",
        "step_callback": "Python callbacks are not run",
        "callbacks": "Python callbacks are not run",
        "type": "a custom Agent class is Python; the agent is a plain one",
        "cache_handler": "tool results are not cached",
        "skills": "CrewAI skills are not loaded",
    },
)


def add_agents(build: Build, hierarchical: bool) -> None:
    """A draft per crew agent (and the manager of a hierarchical crew) in `build.agents`."""
    for key in build.crew.agents:
        build.names[key] = flowrun_name(key)
    code = build.crew.code
    for method, kwargs in code.section("agents").items() if code else ():
        key = config_key(method, kwargs if isinstance(kwargs, Mapping) else {})
        if key in build.names:  # a task's `agent:` names the @agent method, as CrewAI looks it up
            build.names.setdefault(method, build.names[key])
    for key, layers in build.crew.agents.items():
        draft = _agent(build, layers)
        if draft is not None:
            build.agents[build.names[key]] = draft
    if hierarchical:
        _manager(build)
    else:
        _delegation(build)


def _agent(build: Build, layers: Layers) -> Draft | None:
    conv, main = build.conv, layers.main
    for part in layers.parts:
        sort_keys(conv, part.src, part.base, part.data, AGENT_KEYS)
    found = layers.texts(conv, ("role", "goal", "backstory"), "agent")
    if found is None:
        return None
    texts = {key: build.template(value) for key, value in found.items()}
    name = build.names[layers.key]
    role = str(layers.value("role")).strip()
    prompt = f"You are {texts['role']}. {texts['backstory']}\nYour personal goal is: {texts['goal']}"
    data: Doc = {
        "version": 1,
        "kind": "agent",
        "name": name,
        "description": role,
        "prompt": prompt,
    }
    draft = Draft(
        data, main.src, main.base, {("prompt",): main.at("role"), ("description",): main.at("role")}
    )
    conv.note(
        main.src,
        main.at("role"),
        f"agent {name}: role, goal and backstory make its system prompt as CrewAI writes it",
    )
    model = build.model(layers.find("llm"), name)
    if model is not None:
        data["model"] = model
    data["max_steps"] = _max_iter(build, layers)
    data["tools"] = tool_entries(build, layers.find("tools"), name)
    _code_execution(build, layers, data)
    draft.inject_date = layers.value("inject_date") is True
    guardrail = layers.find("guardrail")
    if guardrail is not None:
        data["guardrails"] = {
            "output": judge_guardrails(build, [guardrail], layers.value("guardrail_max_retries"))
        }
    return draft


def _max_iter(build: Build, layers: Layers) -> int:
    found = layers.find("max_iter")
    if found is None:
        return DEFAULT_MAX_ITER
    if isinstance(found.value, int) and not isinstance(found.value, bool) and found.value >= 1:
        build.conv.note(found.src, found.where, f"max_steps: {found.value}")
        return found.value
    build.conv.problem(
        found.src,
        found.where,
        f"`max_iter` must be a whole number of at least 1, not {found.value!r}",
        "",
        "wrong-type",
    )
    return DEFAULT_MAX_ITER


def _code_execution(build: Build, layers: Layers, data: Doc) -> None:
    found = layers.find("allow_code_execution")
    if found is not None and found.value is True:
        data["tools"].append("execute_shell")
        build.conv.note(
            found.src,
            found.where,
            "execute_shell: the agent runs code with the shell in flowrun's sandbox",
            "approximated",
        )


def tool_entries(build: Build, found: Found | None, owner: str) -> list[str]:
    """The flowrun tools of a `tools` list (an agent's or a task's)."""
    if found is None or found.value is None:
        return []
    if not isinstance(found.value, list):
        build.conv.problem(found.src, found.where, "`tools` must be a list", "", "wrong-type")
        return []
    out: list[str] = []
    for i, item in enumerate(found.value):
        for tool in _tool(build, item, found, i, owner):
            if tool not in out:
                out.append(tool)
    return out


def _tool(build: Build, item: object, found: Found, i: int, owner: str) -> tuple[str, ...]:
    conv, where = build.conv, (*found.where, i)
    code = build.crew.code
    if isinstance(item, str) and code is not None and item in code.section("tools"):
        item = code.section("tools")[item]  # a YAML name of a crew.py @tool method
    name = item.name if isinstance(item, ToolRef) else item if isinstance(item, str) else None
    if name is not None and name in CREWAI:
        return _equivalent(build, CREWAI[name], name, found, where)
    if isinstance(item, str) and not item.startswith("custom:") and ":" not in item and "." not in item:
        conv.note(found.src, where, "dropped: flowrun has no equivalent", "dropped")
        message = f"{owner}: CrewAI tool '{item}' has no flowrun equivalent; the agent runs without it"
        conv.problem(
            found.src,
            where,
            message,
            "the tools flowrun maps: docs/how-to/crewai.md#tools",
            "ignored-tool",
            severity="warning",
        )
        return ()
    from flowrun.manifest.foreign.python_refs import refuse_tool

    shown = item.text if isinstance(item, Python) else name or str(item)
    refuse_tool(conv, found.src, where, shown, flowrun_name(shown.rsplit(":", 1)[-1].rsplit(".", 1)[-1]))
    return ()


def _equivalent(
    build: Build, eq: Equivalent, name: str, found: Found, where: tuple[str | int, ...]
) -> tuple[str, ...]:
    became = ", ".join(eq.tools)
    build.conv.note(found.src, where, became + (f" ({eq.why})" if eq.why else ""), eq.how)
    return eq.tools


def _delegation(build: Build) -> None:
    """`allow_delegation: true`: the crew's other agents as tools. A coworker that delegates too
    is offered as a copy without its coworkers (CrewAI's delegated work gets no delegation
    tools), so no agent calls itself around a circle."""
    delegating = [k for k, layers in build.crew.agents.items() if layers.value("allow_delegation") is True]
    for key in delegating:
        found = build.crew.agents[key].find("allow_delegation")
        assert found is not None
        build.conv.note(
            found.src,
            found.where,
            "the crew's other agents offered as tools (CrewAI's delegate and ask tools)",
            "approximated",
        )
    plain: dict[str, str] = {}
    for key in delegating:
        name = build.names[key]
        if name in build.agents:
            plain[name] = flowrun_name(f"{name}-coworker")
            copy = Draft(
                dict(build.agents[name].data),
                build.agents[name].src,
                build.agents[name].base,
                dict(build.agents[name].where),
            )
            copy.data["name"] = plain[name]
            copy.data["tools"] = list(copy.data["tools"])
            build.agents[plain[name]] = copy
    for key in delegating:
        name = build.names[key]
        if name not in build.agents:
            continue
        others = [
            plain.get(n, n)
            for k, n in build.names.items()
            if n != name and n in build.agents and k in build.crew.agents
        ]
        build.agents[name].data["tools"] = [*build.agents[name].data["tools"], *others]


def _manager(build: Build) -> None:
    """A hierarchical crew's manager: `manager_agent` (an agent file of its own) or CrewAI's
    default manager on `manager_llm`, with the crew's agents as its tools."""
    settings, conv = build.crew.settings, build.conv
    coworkers = [n for n in build.names.values() if n in build.agents]
    manager = build.crew.manager
    if manager is not None:
        draft = _agent(build, manager)
        if draft is None:
            return
        draft.data["tools"] = [*draft.data["tools"], *coworkers]
        build.agents[MANAGER] = Draft({**draft.data, "name": MANAGER}, draft.src, draft.base, draft.where)
        return
    found = settings.find("manager_llm")
    if found is None:
        at = settings.find("process")
        if at is not None:
            conv.problem(
                at.src,
                at.where,
                "a hierarchical crew needs `manager_llm` or `manager_agent`",
                "add `manager_llm: openai/gpt-4o` (CrewAI refuses it too)",
                "missing-key",
            )
        return
    prompt = f"You are {MANAGER_ROLE}. {MANAGER_BACKSTORY}\nYour personal goal is: {MANAGER_GOAL}"
    data: Doc = {
        "version": 1,
        "kind": "agent",
        "name": MANAGER,
        "description": MANAGER_ROLE,
        "prompt": prompt,
    }
    model = build.model(found, MANAGER)
    if model is not None:
        data["model"] = model
    data["max_steps"] = DEFAULT_MAX_ITER
    data["tools"] = coworkers
    conv.note(found.src, found.where, f"agent {MANAGER}: CrewAI's manager, with the crew's agents as tools")
    build.agents[MANAGER] = Draft(data, found.src, found.part.base, {("model",): found.where})


def judge_guardrails(build: Build, found: list[Found], retries: object) -> list[Doc]:
    """Guardrails in text as checks by a judge agent; a guardrail in Python is not run."""
    count = (
        retries
        if isinstance(retries, int) and not isinstance(retries, bool) and 0 <= retries <= 20
        else DEFAULT_GUARDRAIL_RETRIES
    )
    out: list[Doc] = []
    for item in found:
        rules = item.value if isinstance(item.value, list) else [item.value]
        for i, rule in enumerate(rules):
            where = (*item.where, i) if isinstance(item.value, list) else item.where
            if isinstance(rule, str) and rule.strip():
                out.append(
                    {
                        "judge": GUARDRAIL_JUDGE,
                        "criteria": rule.strip(),
                        "on_fail": "retry",
                        "max_retries": count,
                    }
                )
                build.conv.note(
                    item.src,
                    where,
                    f"a guardrail judged by the agent {GUARDRAIL_JUDGE}, retried up to {count} times",
                )
                continue
            build.conv.note(item.src, where, f"not used: {PYTHON_ONLY}", "dropped")
            message = f"guardrail {rule!r} is Python, which flowrun does not run; the output is not checked"
            hint = "write the rule as text (CrewAI checks it with an LLM), or a flowrun python guardrail"
            build.conv.problem(item.src, where, message, hint, "ignored-guardrail", severity="warning")
    if out and GUARDRAIL_JUDGE not in build.agents:
        data = {
            "version": 1,
            "kind": "agent",
            "name": GUARDRAIL_JUDGE,
            "prompt": JUDGE_PROMPT,
            "max_steps": 3,
        }
        data["description"] = "Checks a task's output against a rule."
        build.agents[GUARDRAIL_JUDGE] = Draft(data, found[0].src, found[0].part.base)
    return out
