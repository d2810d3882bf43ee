"""MCP servers for the tests, written with the official `mcp` package (`MCPServer`).

    python mcp_test_server.py [--marker TOKEN]   a stdio server with the tools below
    python mcp_test_server.py --crash            dies at start with a line on stderr
    python mcp_test_server.py --silent           reads its input and never answers
        [--eof-file F]                               then writes F: its age when its input closed
                                                     (or SIGTERM came)
    python mcp_test_server.py --many N           a server with N tools (deferred tools)
    python mcp_test_server.py --notice TEXT      also a tool `notice`, described by TEXT and answering it

`serve_http()` runs the same tools over streamable HTTP on 127.0.0.1 in a thread of the test
process (on a socket bound to port 0, so parallel tests never collide)."""

from __future__ import annotations

import base64
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import AcceptedElicitation, Elicit, ElicitationResult, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ImageContent, TextContent, ToolAnnotations
from pydantic import BaseModel

PNG_1PX = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()


PROCESS_TOKEN = os.urandom(8).hex()  # a restarted server has another


def build(name: str = "test-tools") -> MCPServer:
    server = MCPServer(name)

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def lookup(key: str) -> str:
        """Read a value (the server says: read-only, safe to repeat)."""
        return f"value of {key}"

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return f"echo: {text}"

    @server.tool()
    def secret_tool() -> str:
        """A tool the allowlist hides."""
        return "SHOULD-NEVER-BE-CALLED"

    @server.tool()
    async def sleep_forever() -> str:
        """Never returns."""
        await anyio.sleep(10**6)
        return "woke up"

    @server.tool()
    def report(city: str) -> dict[str, Any]:
        """Structured weather for a city."""
        return {"city": city, "temperature_c": 21, "sky": "clear"}

    @server.tool()
    def picture() -> list[Any]:
        """An image with a caption."""
        return [
            TextContent(type="text", text="a red pixel"),
            ImageContent(type="image", data=PNG_1PX, mime_type="image/png"),
        ]

    @server.tool()
    def fail(reason: str = "no reason") -> str:
        """Always fails."""
        raise ToolError(f"refused: {reason}")

    @server.tool()
    def where() -> str:
        """Where the server runs: its working folder and whether it sees $HOME."""
        import os

        env = os.environ
        return f"cwd={os.getcwd()} home={env.get('HOME', '')} secret={env.get('MCP_TEST_SECRET', '')}"

    _lifecycle_tools(server)

    @server.tool()
    def record(text: str) -> str:
        """Append the text to calls.log in the server's folder (a tool with an effect)."""
        with open("calls.log", "a", encoding="utf-8") as f:
            f.write(text + "\n")
        return "recorded"

    server.tool()(tamper)
    _asking_tools(server)
    _resources_and_prompts(server)
    return server


class Seats(BaseModel):
    seats: int


def _ask_seats(show: str) -> Elicit[Seats]:
    return Elicit(f"How many seats for {show}?", Seats)


def _asking_tools(server: MCPServer) -> None:
    # elicitation as the SDK does it in either protocol era (a request mid-call, or an
    # InputRequiredResult the client answers and retries with)
    @server.tool()
    async def book(show: str, answer: Annotated[ElicitationResult[Seats], Resolve(_ask_seats)]) -> str:
        """Book seats for a show: asks the user how many (elicitation)."""
        if isinstance(answer, AcceptedElicitation):
            return f"booked {answer.data.seats} seats for {show}"
        return f"booking {answer.action}"


def _resources_and_prompts(server: MCPServer) -> None:
    @server.resource(
        "notes://guide", name="guide", description="The team's guide.", mime_type="text/markdown"
    )
    def guide() -> str:
        return "# Guide\n\nAlways cite your sources."

    @server.resource("notes://day/{day}", name="day", description="The notes of one day.")
    def day(day: str) -> str:
        return f"notes of {day}"

    @server.prompt()
    def reviewer(topic: str, tone: str = "brief") -> str:
        """A reviewer's instructions for a topic."""
        return f"You are the MCP test worker, reviewing {topic}. Be {tone}."


ENGINE_FILES = ("events.jsonl", "run.json", "usage.json", "run.lock", "prompts/worker.md", "prompts/new.md")


def _lifecycle_tools(server: MCPServer) -> None:
    """Tools about the server process itself: which one it is, and a crash on demand."""

    @server.tool()
    def pid() -> str:
        """A token of this server process (the sandbox's pid namespace makes every pid 2)."""
        return PROCESS_TOKEN

    @server.tool()
    def die() -> str:
        """The server process exits in the middle of the call, as a crash would."""
        import os

        print("fatal: the test server was told to die", file=sys.stderr, flush=True)
        os._exit(3)


def tamper(folder: str) -> str:
    """Try to change the engine's files in a run folder; say which attempts worked."""
    changed = []
    for name in ENGINE_FILES:
        try:
            with open(f"{folder}/{name}", "a") as f:
                f.write("forged\n")
            changed.append(name)
        except OSError:
            pass
    return "changed: " + (", ".join(changed) or "nothing")


class HttpServer:
    """The tools over streamable HTTP on 127.0.0.1, in a thread; `url` is the endpoint."""

    def __init__(self) -> None:
        import uvicorn

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        app = build("http-tools").streamable_http_app()
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


TOPICS = ("weather", "invoice", "calendar", "ticket", "repository", "customer", "shipment", "payroll")
VERBS = ("get", "list", "create", "update", "delete")


def build_many(count: int) -> MCPServer:
    """A server with `count` tools, `TOPIC_VERB_N`, each with its own description and schema
    (what a large SaaS server looks like); `weather_get_0` answers with the city it got."""
    server = MCPServer("many-tools")
    for i in range(count):
        topic, verb = TOPICS[i % len(TOPICS)], VERBS[(i // len(TOPICS)) % len(VERBS)]
        name = f"{topic}_{verb}_{i}"

        server.add_tool(
            _answers_as(name), name=name, description=f"{verb.capitalize()} {topic} records (variant {i})."
        )
    return server


def _answers_as(tool: str) -> Any:
    def handler(city: str) -> str:
        return f"{tool} for {city}"

    return handler


def process_age() -> float:
    """Seconds since this process started (/proc: its imports and the sandbox's set-up included)."""
    started = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
    return float(Path("/proc/uptime").read_text().split()[0]) - started / os.sysconf("SC_CLK_TCK")


def main(argv: list[str]) -> None:
    if "--crash" in argv:
        print("fatal: cannot read the config file tools.toml", file=sys.stderr, flush=True)
        sys.exit(3)
    if "--silent" in argv:
        stopped = Path(argv[argv.index("--eof-file") + 1]) if "--eof-file" in argv else None

        def told_to_stop(*_: object) -> None:
            if stopped is not None:  # how long after it started it was stopped, by the kernel's clock
                stopped.write_text(f"{process_age():.3f}")
            os._exit(0)

        # stopped by its input closing, or (an SDK that does not wait for that) by SIGTERM
        signal.signal(signal.SIGTERM, told_to_stop)
        for _ in sys.stdin:
            pass
        told_to_stop()
    if "--many" in argv:
        build_many(int(argv[argv.index("--many") + 1])).run()
        return
    server = build()
    if "--notice" in argv:  # a server whose own words carry an instruction (tests/test_foreign_text.py)
        text = argv[argv.index("--notice") + 1]

        def notice() -> str:
            return f"Today's notice: {text}"

        server.tool(name="notice", description=f"Read the notice board. {text}")(notice)
    server.run()


if __name__ == "__main__":
    main(sys.argv[1:])
