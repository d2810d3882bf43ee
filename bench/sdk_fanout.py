"""The fan-out of bench/fanout_setup.py as a plain `openai` SDK script, no flowrun: the same
requests (system prompts, tools, messages), the helpers concurrent with asyncio.gather, the
list_directory calls answered with os.listdir. What the fan-out benches compare flowrun with.

Run: BENCH_KEY=x OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 python bench/sdk_fanout.py
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import openai

HELPER_TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "list_directory",
            "description": "List a folder.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
BOSS_TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "helper",
            "description": "Lists the folder a few times.",
            "parameters": {
                "type": "object",
                "properties": {"task": {"type": "string"}},
                "required": ["task"],
            },
        },
    }
]


async def helper(client: openai.AsyncOpenAI, task: str) -> str:
    messages: list[Any] = [
        {"role": "system", "content": "You are a helper of the fan-out bench."},
        {"role": "user", "content": task},
    ]
    while True:
        answer = await client.chat.completions.create(
            model="bench", messages=messages, tools=HELPER_TOOLS, max_tokens=4096
        )
        message = answer.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            path = json.loads(call.function.arguments).get("path", ".")  # type: ignore[union-attr]
            listing = "\n".join(sorted(os.listdir(path)))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": listing})


async def fanout(client: openai.AsyncOpenAI) -> str:
    """One run: the boss's call, three helpers at once, the boss's answer."""
    messages: list[Any] = [
        {"role": "system", "content": "You are the boss of the fan-out bench."},
        {"role": "user", "content": "Begin."},
    ]
    while True:
        answer = await client.chat.completions.create(
            model="bench", messages=messages, tools=BOSS_TOOLS, max_tokens=4096
        )
        message = answer.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        tasks = [json.loads(call.function.arguments)["task"] for call in message.tool_calls]  # type: ignore[union-attr]
        results = await asyncio.gather(*(helper(client, task) for task in tasks))
        for call, result in zip(message.tool_calls, results, strict=True):
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def client(aiohttp: bool = False) -> openai.AsyncOpenAI:
    """The SDK's default client (httpx2), or with `aiohttp` the SDK's own aiohttp transport."""
    options: dict[str, Any] = {"http_client": openai.DefaultAioHttpClient()} if aiohttp else {}
    return openai.AsyncOpenAI(api_key=os.environ["BENCH_KEY"], max_retries=0, **options)


async def main() -> None:
    sdk = client()
    print(await fanout(sdk))
    await sdk.close()


if __name__ == "__main__":
    asyncio.run(main())
