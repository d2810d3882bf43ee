"""The baseline of bench/batch.py: a plain `openai` SDK script doing what each batch item does
(a model call that asks for write_file, the file written, a second call with the tool's
result), for N items at most C at once, in one process on one event loop. It shows what the
machine allows an SDK script at that concurrency, next to the ideal.

Run: python bench/sdk_batch.py BASE_URL [--items 1000] [--concurrency 50] [--folder DIR]; it
prints one JSON line: items/s over the loop, and over the whole (`import openai` and the client made included,
as a batch's figure includes its start-up), CPU ms per item (the loop's), and the HTTP client
(FLOWRUN_HTTP's choice, as flowrun would make it: aiohttp when installed)."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Write a file in the workspace.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
            },
        },
    }
]


def http_client(openai: Any) -> Any:
    wanted = os.environ.get("FLOWRUN_HTTP") or ("aiohttp" if importlib.util.find_spec("aiohttp") else "httpx")
    return (openai.DefaultAioHttpClient() if wanted == "aiohttp" else None), wanted


async def run(base_url: str, items: int, concurrency: int, folder: Path) -> dict[str, Any]:
    begun = time.perf_counter()  # the whole: `import openai` and the client, as a batch pays them
    begun_cpu = time.process_time()
    import openai

    transport, name = http_client(openai)
    client = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0, http_client=transport)
    gate = asyncio.Semaphore(concurrency)

    async def item(number: int) -> None:
        async with gate:
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": "You answer questions."},
                {"role": "user", "content": f"Question: question {number}"},
            ]
            first = await client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
            call = first.choices[0].message.tool_calls[0]
            arguments = json.loads(call.function.arguments)
            (folder / f"{number}-{Path(arguments['path']).name}").write_text(arguments["content"])
            messages += [
                first.choices[0].message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": call.id, "content": "written"},
            ]
            await client.chat.completions.create(model="m", messages=messages, tools=TOOLS)

    start, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(item(n) for n in range(items)))
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    await client.close()
    whole, whole_cpu = time.perf_counter() - begun, time.process_time() - begun_cpu
    return {
        "items_per_s": items / wall,
        "whole_items_per_s": items / whole,
        "cpu_ms_per_item": cpu / items * 1000,
        "whole_cpu_ms_per_item": whole_cpu / items * 1000,
        "http": name,
    }


def in_fresh_process(base_url: str, items: int, concurrency: int, folder: Path) -> dict[str, Any]:
    """This script run in a fresh process (its `import openai` counted, as a batch's start-up
    is), its files written in `folder`: the JSON object it prints (bench/batch.py and
    bench/many_runs.py set it beside flowrun's figures)."""
    argv = [
        sys.executable,
        __file__,
        base_url + "/v1",
        "--items",
        str(items),
        "--concurrency",
        str(concurrency),
    ]
    done = subprocess.run([*argv, "--folder", str(folder)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the SDK script failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url")
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--folder", type=Path, help="where the files go (default: a temporary folder)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.folder) as tmp:
        print(json.dumps(asyncio.run(run(args.base_url, args.items, args.concurrency, Path(tmp)))))


if __name__ == "__main__":
    main()
