"""An ADK agent tree as a flowrun workflow: the root agent's tree as steps. An LlmAgent is an
agent step (its answer kept in its `output_key`'s state file, which later instructions read),
a SequentialAgent its sub-agents' steps in order, a LoopAgent a `loop:` that ends after
`max_iterations` or when an agent calls exit_loop, a ParallelAgent a `parallel:` step. Each
step's task is the user's message with what the earlier agents said, as ADK shows an agent the
session's conversation (`include_contents: none`: only ADK's fixed request)."""

from __future__ import annotations

from flowrun.manifest.foreign.adk.agents import llm_agent
from flowrun.manifest.foreign.adk.build import STATE_DIR, Build, output_path
from flowrun.manifest.foreign.adk.tree import LLM, LOOP, SEQUENTIAL, Node
from flowrun.manifest.foreign.conversion import Doc

DEFAULT_ITERATIONS = 10  # a LoopAgent without max_iterations: flowrun's loops are bounded
NO_CONTENTS = "Handle the requests as specified in the System Instruction."  # ADK's, without history
MAX_LLM_CALLS = 500  # ADK's RunConfig.max_llm_calls: the model calls one run may make
MESSAGE = {"description": "The user's message to the agent.", "type": "string"}

History = list[tuple[str, str]]  # (agent, the file its answer is in), in the order they ran


def mark_loops(build: Build, node: Node, marker: str | None = None) -> None:
    """Which loop each LlmAgent runs in (the nearest LoopAgent above it): its exit_loop ends that one."""
    if node.cls == LOOP:
        marker = f"{STATE_DIR}/.exit_loop_{node.name}"
    if node.cls == LLM and marker is not None:
        build.loops.setdefault(node.name, marker)
    for child in node.children if node.cls != LLM else []:
        mark_loops(build, child, marker)


def steps_of(build: Build, node: Node, history: History) -> list[Doc]:
    if node.cls == LLM:
        return [_agent_step(build, node, history)]
    if node.cls == SEQUENTIAL:
        build.conv.note(node.src, (), f"SequentialAgent {node.name}: its sub-agents' steps in order")
        return [step for child in node.children for step in steps_of(build, child, history)]
    if node.cls == LOOP:
        return [_loop(build, node, history)]
    return _parallel(build, node, history)


def _agent_step(build: Build, node: Node, history: History) -> Doc:
    llm_agent(build, node)
    path = output_path(node)
    if node.value("include_contents") == "none":
        task = NO_CONTENTS
        build.conv.note(
            node.src,
            ("include_contents",),
            "the step's task is ADK's fixed request, without the conversation",
        )
    else:
        said = [f"[{agent}] said: {{{{ workspace.read({where!r}) }}}}" for agent, where in history]
        task = "{{ message }}" + ("\n\nFor context:\n" + "\n".join(said) if said else "")
    history.append((node.name, path))
    key = node.value("output_key")
    if isinstance(key, str):
        build.conv.note(
            node.src,
            ("output_key",),
            f"the step's answer kept in {path}, which instructions read as {{{key}}}",
        )
    return {"agent": node.name, "task": task, "output": path}


def _loop(build: Build, node: Node, history: History) -> Doc:
    marker = f"{STATE_DIR}/.exit_loop_{node.name}"
    body = [step for child in node.children for step in steps_of(build, child, history)]
    guard = f"not workspace.exists({marker!r})"
    iterations = node.value("max_iterations")
    if not isinstance(iterations, int) or isinstance(iterations, bool) or not 1 <= iterations <= 1000:
        message = (
            f"LoopAgent '{node.name}' has no max_iterations (1-1000); "
            f"flowrun stops it after {DEFAULT_ITERATIONS}"
        )
        build.conv.problem(node.src, (), message, "set max_iterations", "unbounded-loop", severity="warning")
        iterations = DEFAULT_ITERATIONS
    build.conv.note(
        node.src, (), f"LoopAgent {node.name}: a loop of {iterations} iterations at most, ended by exit_loop"
    )
    steps = [{**step, "if": guard} for step in body]
    return {"loop": {"max_iterations": iterations, "until": f"workspace.exists({marker!r})", "steps": steps}}


def _parallel(build: Build, node: Node, history: History) -> list[Doc]:
    branches: list[Doc] = []
    after: History = []
    for i, child in enumerate(node.children):
        if child.cls != LLM:
            message = (
                f"{child.cls} '{child.name}' in ParallelAgent '{node.name}': "
                "flowrun's parallel branches are agents"
            )
            build.conv.problem(
                node.src,
                ("sub_agents", i),
                message,
                "run that pipeline before or after the ParallelAgent",
                "unsupported",
            )
            continue
        own = list(history)  # a branch does not see its siblings' answers (ADK's branches)
        branches.append(_agent_step(build, child, own))
        after.append(own[-1])
    history.extend(after)
    build.conv.note(node.src, (), f"ParallelAgent {node.name}: its sub-agents at the same time")
    return [{"parallel": branches}] if branches else []


def workflow(build: Build) -> Doc:
    """The workflow manifest of the tree (its agents go to `build.agents`)."""
    mark_loops(build, build.root)
    steps = steps_of(build, build.root, [])
    description = build.root.value("description")
    data: Doc = {"version": 1, "kind": "workflow", "name": build.root.name}
    if isinstance(description, str) and description.strip():
        data["description"] = description.strip()
    data["inputs"] = {"message": dict(MESSAGE), **build.inputs}
    data |= {"models": build.models, "default_model": "adk-default", "steps": steps}
    data["limits"] = {"max_total_steps": MAX_LLM_CALLS}
    if build.servers:
        data["mcp_servers"] = build.servers
    last = steps[-1] if steps else None
    if isinstance(last, dict) and "output" in last:
        data["output"] = last["output"]
    return data
