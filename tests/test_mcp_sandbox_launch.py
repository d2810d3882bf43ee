"""Stdio MCP servers start in the sandbox where users install them, with no `ro_binds` of their
own: a console script in a real virtual environment (whose python links to a base interpreter
elsewhere), the same program through a `~/.local/bin` link and through a pyenv shim, and
`npx -y PACKAGE` as Claude Code's `.mcp.json` writes it. A program the sandbox cannot show is
refused in one line that names the folder and the exact `sandbox:` line to add, by a run and by
`validate --connect --sandbox required` alike; so is a launcher that is not installed and an
npx package that would need the network."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement
from support.cli import run_cli
from support.env import WIRES, model_env
from support.paths import TESTS
from support.project import model, workflow, write_project
from support.wire_server import Reply, Script, ToolCallSpec, WireServer

from flowrun.foreign_text import inner

WORKER = "You are the MCP launch worker"


# ---------------------------------------------------------------- a venv outside the project


def _closure(name: str) -> list[importlib.metadata.Distribution]:
    """The installed distribution `name` and everything it requires (with the extras asked for)."""
    found: dict[str, importlib.metadata.Distribution] = {}
    seen: set[tuple[str, str]] = set()
    todo: list[tuple[str, str]] = [(name, "")]
    while todo:
        wanted, extra = todo.pop()
        key = re.sub(r"[-_.]+", "-", wanted).lower()
        if (key, extra) in seen:
            continue
        seen.add((key, extra))
        try:
            dist = found.get(key) or importlib.metadata.distribution(wanted)
        except importlib.metadata.PackageNotFoundError:
            continue
        found[key] = dist
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": extra}):
                todo += [(req.name, "")] + [(req.name, e) for e in req.extras]
    return list(found.values())


@pytest.fixture(scope="session")
def server_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A real venv made by `python -m venv` (its python a link to this interpreter's base), with
    the `mcp` package and the test server installed in it and a console script
    `mcp-test-server`, as `pip install` would leave them."""
    venv = tmp_path_factory.mktemp("installed") / "server-env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = next((venv / "lib").glob("python3*/site-packages"))
    for dist in _closure("mcp"):
        for file in dist.files or []:
            if file.parts[0] == "..":
                continue  # scripts and data outside site-packages
            source = Path(str(dist.locate_file(file)))
            if source.is_file():
                (site / file).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, site / file)
    shutil.copy(TESTS / "mcp_test_server.py", site / "mcp_test_server.py")
    script = venv / "bin" / "mcp-test-server"
    script.write_text(
        f"#!{venv}/bin/python\nimport sys\nfrom mcp_test_server import main\nmain(sys.argv[1:])\n"
    )
    script.chmod(0o755)
    yield venv


def launch_project(tmp_path: Path, servers: dict[str, Any], tools: list[str]) -> Path:
    claude = model("anthropic", model="claude-test", api_key_env="ANTHROPIC_API_KEY")
    inputs: dict[str, Any] = {"question": {}}
    spec = workflow(
        claude, name="launch_demo", inputs=inputs, entry="worker", sandbox="required", mcp_servers=servers
    )
    agents = {"worker": {"prompt": WORKER + ".", "tools": tools}}
    return write_project(tmp_path, spec, agents, name="launch_demo.yaml")


def on_path(*folders: Path) -> dict[str, str]:
    return {"PATH": os.pathsep.join([*(str(f) for f in folders), os.environ.get("PATH", "")])}


def run(
    tmp_path: Path, workflow: Path, server: WireServer, provider: str, env: dict[str, str]
) -> tuple[int, str, Path]:
    env = {"FLOWRUN_RETRY_BASE_S": "0.01", **env}
    args = [str(workflow), "--question", "q", "--runs-dir", str(tmp_path / "runs"), "--run-id", "r1"]
    env |= model_env(server, provider)
    if provider == "openai":
        args += ["--model", "openai:gpt-test"]
    proc = run_cli(args, cwd=tmp_path, env=env, timeout=180)
    return proc.returncode, proc.stdout + proc.stderr, tmp_path / "runs" / "r1"


def validate_connect(tmp_path: Path, env: dict[str, str]) -> tuple[int, str]:
    proc = run_cli(["validate", "--connect", "--sandbox", "required", str(tmp_path)], cwd=tmp_path, env=env)
    return proc.returncode, proc.stdout + proc.stderr


# ---------------------------------------------------------------- a venv's console script


@pytest.mark.parametrize("provider", WIRES)
def test_venv_server_answers_in_the_sandbox(tmp_path: Path, provider: str, server_venv: Path) -> None:
    workflow = launch_project(tmp_path, {"calc": {"command": "mcp-test-server"}}, ["calc.add"])
    script = Script(
        {WORKER: [Reply(tool_calls=[ToolCallSpec("calc__add", {"a": 2, "b": 3})]), Reply(text="5")]}
    )
    with WireServer(script) as server:
        code, out, run_dir = run(tmp_path, workflow, server, provider, on_path(server_venv / "bin"))
    assert code == 0, out
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    results = [e["result"] for e in events if e["type"] == "tool_result" and e["tool"] == "calc__add"]
    assert [r["status"] for r in results] == ["success"] and inner(results[0]["text"]) == "5"


def test_local_bin_and_pyenv_shim_are_found(tmp_path: Path, server_venv: Path) -> None:
    """`~/.local/bin/NAME` linking into a venv (pipx, uv tool), a script there with its packages
    in the user site (pip install --user), and `python3` through a pyenv shim whose version is
    a virtualenv (pyenv-virtualenv), as the command and as a script's `#!/usr/bin/env python3`:
    all start with nothing declared."""
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "mcp-test-server").symlink_to(server_venv / "bin" / "mcp-test-server")
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    user_site = home / ".local" / "lib" / version / "site-packages"
    shutil.copytree(next((server_venv / "lib").glob("python3*/site-packages")), user_site)
    base = Path(sys.base_prefix) / "bin" / version
    user_script = home / ".local" / "bin" / "mcp-user-server"
    user_script.write_text(f"#!{base}\nimport sys\nfrom mcp_test_server import main\nmain(sys.argv[1:])\n")
    user_script.chmod(0o755)
    pyenv = tmp_path / "pyenv"
    (pyenv / "shims").mkdir(parents=True)
    (pyenv / "versions").mkdir()
    (pyenv / "versions" / "server-env").symlink_to(server_venv)
    (pyenv / "version").write_text("server-env\n")
    shim = pyenv / "shims" / "python3"
    shim.write_text(
        f'#!/usr/bin/env bash\nexport PYENV_ROOT="{pyenv}"\nexec "{pyenv}/libexec/pyenv" exec "$@"\n'
    )
    shim.chmod(0o755)
    project = tmp_path / "project"
    project.mkdir()
    (project / "serve.py").write_text("#!/usr/bin/env python3\nfrom mcp_test_server import main\nmain([])\n")
    (project / "serve.py").chmod(0o755)
    servers = {
        "local": {"command": "mcp-test-server"},
        "user": {"command": "mcp-user-server"},
        "shimmed": {"command": "python3", "args": ["-m", "mcp_test_server"]},
        "script": {"command": "./serve.py"},
    }
    launch_project(project, servers, ["local.add", "user.echo", "shimmed.lookup", "script.add"])
    env = {"HOME": str(home), **on_path(home / ".local" / "bin", pyenv / "shims")}
    code, out = validate_connect(project, env)
    assert code == 0, out
    assert "0 error(s)" in out


# ---------------------------------------------------------------- what cannot be shown


def test_program_in_an_unknown_folder_names_the_line_to_add(tmp_path: Path, server_venv: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "launch").symlink_to(server_venv / "bin" / "mcp-test-server")
    project = tmp_path / "project"
    project.mkdir()
    workflow = launch_project(project, {"calc": {"command": str(outside / "launch")}}, ["calc.add"])
    line = f"sandbox: {{ro_binds: [{outside}]}}"

    with WireServer(Script({WORKER: [Reply(text="never asked")]})) as server:
        code, out, _ = run(project, workflow, server, "anthropic", {})
        assert server.requests == []
    assert code == 1 and "Traceback" not in out, out
    errors = [row for row in out.splitlines() if row.startswith("error:")]
    assert len(errors) == 1, out
    assert f"its program {outside}/launch is in a folder the sandbox does not show" in errors[0]
    assert f"add `{line}` to its declaration, or `sandbox: off` to run it unconfined" in errors[0]

    code, out = validate_connect(project, {})
    assert code == 1, out
    assert "launch_demo.yaml:" in out and f"add `{line}`" in out

    # the line as printed makes it start
    data = yaml.safe_load(workflow.read_text())
    data["mcp_servers"]["calc"] |= yaml.safe_load(line)
    workflow.write_text(yaml.safe_dump(data, sort_keys=False))
    code, out = validate_connect(project, {})
    assert code == 0, out


def test_launcher_that_is_not_installed_is_one_line(tmp_path: Path) -> None:
    workflow = launch_project(tmp_path, {"gone": {"command": "no-such-mcp-launcher"}}, ["gone"])
    with WireServer(Script({WORKER: [Reply(text="never asked")]})) as server:
        code, out, _ = run(tmp_path, workflow, server, "openai", {})
    assert code == 1 and "Traceback" not in out, out
    errors = [row for row in out.splitlines() if row.startswith("error:")]
    assert len(errors) == 1, out
    assert "MCP server 'gone'" in errors[0] and "'no-such-mcp-launcher' is not on PATH" in errors[0]
    assert "execvp" not in out


# ---------------------------------------------------------------- npx, as Claude Code writes it

NODE_SERVER = """#!/usr/bin/env node
// a stdio MCP server without dependencies: initialize, tools/list, tools/call of `add`
const rl = require("readline").createInterface({ input: process.stdin });
const send = (msg) => process.stdout.write(JSON.stringify(msg) + "\\n");
rl.on("line", (line) => {
  const req = JSON.parse(line);
  if (req.id === undefined) return;
  const ok = (result) => send({ jsonrpc: "2.0", id: req.id, result });
  if (req.method === "initialize") {
    ok({ protocolVersion: req.params.protocolVersion, capabilities: { tools: {} },
         serverInfo: { name: "node-test", version: "1.0.0" } });
  } else if (req.method === "tools/list") {
    ok({ tools: [{ name: "add", description: "Add two integers.", inputSchema: { type: "object",
         properties: { a: { type: "integer" }, b: { type: "integer" } }, required: ["a", "b"] } }] });
  } else if (req.method === "tools/call") {
    ok({ content: [{ type: "text", text: String(req.params.arguments.a + req.params.arguments.b) }] });
  } else {
    send({ jsonrpc: "2.0", id: req.id, error: { code: -32601, message: "no such method" } });
  }
});
"""


def npm_package(folder: Path) -> Path:
    """A tarball like `npm pack` makes, of a package whose bin is the node server."""
    source = folder / "package-src"
    (source / "bin").mkdir(parents=True)
    manifest = {"name": "flowrun-test-mcp", "version": "1.0.0", "bin": {"flowrun-test-mcp": "bin/server.js"}}
    (source / "package.json").write_text(json.dumps(manifest))
    (source / "bin" / "server.js").write_text(NODE_SERVER)
    (source / "bin" / "server.js").chmod(0o755)
    tarball = folder / "flowrun-test-mcp-1.0.0.tgz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(source, arcname="package")
    shutil.rmtree(source)
    return tarball


@pytest.mark.skipif(shutil.which("npx") is None, reason="npx (node) is not installed")
def test_npx_servers_as_claude_code_writes_them(tmp_path: Path) -> None:
    cache = tmp_path / "npm-cache"
    cache.mkdir()
    tarball = npm_package(tmp_path)
    npm_env = {"npm_config_cache": str(cache)}
    servers = {
        "local": {"type": "stdio", "command": "npx", "args": ["-y", f"./{tarball.name}"], "env": npm_env},
        "fresh": {
            "type": "stdio",
            "command": "npx",
            "args": ["-y", "flowrun-never-published-mcp"],
            "env": npm_env,
        },
        "crash": {"type": "stdio", "command": "node", "args": ["-e", "throw new Error('boom at start')"]},
    }
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": servers}, indent=2))
    code, out = validate_connect(tmp_path, {})
    assert code == 1, out
    lines = [row for row in out.splitlines() if "error[" in row]
    assert len(lines) == 2, out  # `local` started (offline, from the tarball) and listed `add`
    fresh = next(row for row in lines if "'fresh'" in row)
    assert "npx would download flowrun-never-published-mcp first" in fresh
    assert 'add `"sandbox": {"network": "allow"}` to its declaration' in fresh
    crash = next(row for row in lines if "'crash'" in row)
    assert "its stderr ends: Error: boom at start" in crash and "Node.js v" not in crash
    # npx wrote its install over a scratch layer: the user's npm cache is as it was
    assert list(cache.iterdir()) == []


# ---------------------------------------------------------------- a node package checked out elsewhere

ESM_SERVER = '#!/usr/bin/env node\nimport { name } from "@modelcontextprotocol/sdk";\n' + NODE_SERVER.split(
    "\n", 1
)[1].replace(
    'const rl = require("readline").createInterface',
    'import { createInterface } from "readline";\nconst rl = createInterface',
).replace('name: "node-test"', "name")


def node_checkout(folder: Path) -> Path:
    """A server built from source as its README says (`npm install && npm run build`): its
    script in `dist/`, its dependency `@modelcontextprotocol/sdk` in the package's own
    node_modules. Returns the script."""
    package = folder / "weather-server"
    sdk = package / "node_modules" / "@modelcontextprotocol" / "sdk"
    sdk.mkdir(parents=True)
    (sdk / "package.json").write_text(json.dumps({"name": "@modelcontextprotocol/sdk", "type": "module"}))
    (sdk / "index.js").write_text('export const name = "weather";\n')
    (package / "package.json").write_text(json.dumps({"name": "weather-server", "type": "module"}))
    (package / "dist").mkdir()
    script = package / "dist" / "index.js"
    script.write_text(ESM_SERVER)
    script.chmod(0o755)
    return script


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_a_node_server_outside_the_project_is_shown_as_its_whole_package(tmp_path: Path) -> None:
    """`node /src/weather-server/dist/index.js`, or the script as the command: the line to add
    shows the package folder, not `dist/` alone (where node would not find the SDK). A server
    declared with `dist/` bound already is told the same instead of only node's
    "Cannot find package"; the line as printed makes each start. A Python script of the same
    checkout is no node script: its own folder is named."""
    script = node_checkout(tmp_path / "src")
    dist = script.parent
    package = dist.parent
    (package / "scripts").mkdir()
    (package / "scripts" / "serve.py").write_text("raise SystemExit('not a server')\n")
    project = tmp_path / "project"
    project.mkdir()
    servers = {
        "byarg": {"command": "node", "args": [str(script)]},
        "byprog": {"command": str(script)},
        "halfbound": {"command": "node", "args": [str(script)], "sandbox": {"ro_binds": [str(dist)]}},
        "python": {"command": sys.executable, "args": [str(package / "scripts" / "serve.py")]},
    }
    launch_project(project, servers, [f"{name}.add" for name in servers])
    code, out = validate_connect(project, {})
    assert code == 1 and "Traceback" not in out, out
    lines = {name: row for row in out.splitlines() for name in servers if f"'{name}'" in row}
    assert len(lines) == 4, out
    line = f"sandbox: {{ro_binds: [{package}]}}"
    for name in ("byarg", "byprog", "halfbound"):
        assert f"add `{line}` to its declaration" in lines[name], lines[name]
        assert f"part of the node package {package}" in lines[name]
    assert "Cannot find package '@modelcontextprotocol/sdk'" in lines["halfbound"]
    assert f"add `sandbox: {{ro_binds: [{package / 'scripts'}]}}`" in lines["python"], lines["python"]

    node = {name: servers[name] | yaml.safe_load(line) for name in ("byarg", "byprog", "halfbound")}
    launch_project(project, node, [f"{name}.add" for name in node])
    code, out = validate_connect(project, {})
    assert code == 0, out
