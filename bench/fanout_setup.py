"""The fan-out scenario the benches share (the issue's): an orchestrator ("boss") calls a helper
agent 3 times in one step; each helper makes 5 tool steps (a list_directory call each) and then
answers, 6 model calls; then the boss answers: 2 + 3 x 6 = 20 model calls. Every call is answered
by the scripted wire server (tests/wire_server.py) after `latency_s`, through the real `openai`
SDK. The longest chain is boss 1 + helper 6 + boss 1 = 8 calls: the ideal wall time of one run is
8 x latency.

`SDK_SCRIPT` is the same work as a plain script with the `openai` SDK and no flowrun: the same
requests (system prompts, tools, messages), the helpers concurrent with asyncio.gather, the
list_directory calls answered with os.listdir."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from wire_server import Reply, Script, ToolCallSpec  # noqa: E402

LATENCY_S = 0.2
HELPERS = 3
HELPER_CALLS = 6
MODEL_CALLS = 2 + HELPERS * HELPER_CALLS
CHAIN = 1 + HELPER_CALLS + 1  # model calls on the longest path

WORKFLOW = """\
version: 1
kind: workflow
name: fanout
models:
  bench: {provider: openai, model: bench, api_key_env: BENCH_KEY, stream: false}
default_model: bench
entry: boss
"""
BOSS = """\
version: 1
kind: agent
name: boss
prompt: You are the boss of the fan-out bench.
tools: [helper]
"""
HELPER = """\
version: 1
kind: agent
name: helper
description: Lists the folder a few times.
prompt: You are a helper of the fan-out bench.
max_steps: 10
tools: [list_directory]
"""


def make_project(folder: Path) -> Path:
    """The workflow and its two agents in `folder`; returns the workflow file."""
    (folder / "agents.d").mkdir(parents=True, exist_ok=True)
    (folder / "fanout.yaml").write_text(WORKFLOW)
    (folder / "agents.d" / "boss.yaml").write_text(BOSS)
    (folder / "agents.d" / "helper.yaml").write_text(HELPER)
    return folder / "fanout.yaml"


def script(latency_s: float = LATENCY_S) -> Script:
    helpers = [ToolCallSpec("helper", {"task": f"part {i}"}) for i in range(HELPERS)]
    listing = Reply(tool_calls=[ToolCallSpec("list_directory", {"path": "."})], delay_s=latency_s)
    return Script(
        {
            "boss": [Reply(tool_calls=helpers, delay_s=latency_s), Reply(text="done", delay_s=latency_s)],
            "helper": [*[listing] * (HELPER_CALLS - 1), Reply(text="listed", delay_s=latency_s)],
        },
        {"boss": "You are the boss", "helper": "You are a helper"},
    )


SDK_SCRIPT = '''\
"""The fan-out with the bare openai SDK: what flowrun is compared with."""
import asyncio, json, os, sys
import openai

HELPER_TOOLS = [{"type": "function", "function": {"name": "list_directory",
    "description": "List a folder.", "parameters": {"type": "object",
    "properties": {"path": {"type": "string"}}}}}]
BOSS_TOOLS = [{"type": "function", "function": {"name": "helper",
    "description": "Lists the folder a few times.", "parameters": {"type": "object",
    "properties": {"task": {"type": "string"}}, "required": ["task"]}}}]


async def helper(client, task):
    messages = [{"role": "system", "content": "You are a helper of the fan-out bench."},
                {"role": "user", "content": task}]
    while True:
        answer = await client.chat.completions.create(
            model="bench", messages=messages, tools=HELPER_TOOLS, max_tokens=4096)
        message = answer.choices[0].message
        if not message.tool_calls:
            return message.content
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            path = json.loads(call.function.arguments).get("path", ".")
            listing = "\\n".join(sorted(os.listdir(path)))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": listing})


async def main():
    client = openai.AsyncOpenAI(api_key=os.environ["BENCH_KEY"], max_retries=0)
    messages = [{"role": "system", "content": "You are the boss of the fan-out bench."},
                {"role": "user", "content": "Begin."}]
    while True:
        answer = await client.chat.completions.create(
            model="bench", messages=messages, tools=BOSS_TOOLS, max_tokens=4096)
        message = answer.choices[0].message
        if not message.tool_calls:
            print(message.content)
            break
        messages.append(message.model_dump(exclude_none=True))
        tasks = [json.loads(call.function.arguments)["task"] for call in message.tool_calls]
        results = await asyncio.gather(*(helper(client, task) for task in tasks))
        for call, result in zip(message.tool_calls, results):
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    await client.close()


asyncio.run(main())
'''
