"""What the sandbox must show for a stdio MCP server's program to start, found from where the
program is installed, so that a server works where users install it without a bind of their
whole home:

- the command is looked up on the PATH the server gets (a pyenv shim is replaced by the
  program of the pyenv version it selects);
- every step of its symlink chain, the interpreter its `#!` line names (`#!/usr/bin/env node`
  looked up on PATH) and, for a Python virtual environment, the base interpreter its
  `pyvenv.cfg` names are each shown by their own install folder, read-only: the venv, the
  pyenv version, the node install (nvm, asdf, /opt/...), i.e. the nearest folder above the
  program that is a venv or holds both `bin/` and `lib/` - never the home folder, `~/.local`
  or `/`;
- a program directly in `~/.local/bin` (pip --user, pipx, uv tool) is shown as that one file,
  with the user site of its Python (`~/.local/lib/pythonX.Y`, and PYTHONUSERBASE) when it is a
  Python script;
- `npx` gets npm's cache shown over a scratch layer (what it holds is used, what npx writes
  is dropped with the sandbox) and is told to prefer it; a package that is not in it needs the
  network, and without one the server is refused with that reason instead of waiting for npm.

A program in any other folder the sandbox does not show is refused with the exact `sandbox:`
line that shows it (ProgramNotShown): which folders a server may read is the user's call. For a
script of a node package that folder is the one node finds the package's dependencies in
(node_package), not the script's own."""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

MAX_DEPTH = 6  # interpreters of interpreters (a #! script run by a venv's python ...)
SHEBANG_BYTES = 512
ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


class ProgramNotShown(Exception):
    """The program cannot start in the sandbox: why, and the `sandbox:` keys that would let it
    (`{"ro_binds": [FOLDER]}`, `{"network": "allow"}`), when some would."""

    def __init__(self, message: str, add: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.add = add


@dataclass(slots=True)
class Needs:
    """What the sandbox shows for the program, and the command as it runs there."""

    argv: list[str]
    ro_binds: list[str] = field(default_factory=list)  # folders and files, read-only
    overlays: list[str] = field(default_factory=list)  # shown over a scratch layer (npm's cache)
    env: dict[str, str] = field(default_factory=dict)
    hint: str = ""  # what to try when the server does not start anyway

    def bind(self, path: Path) -> None:
        text = str(path)
        if any(text == b or text.startswith(b.rstrip("/") + "/") for b in self.ro_binds):
            return
        self.ro_binds = [b for b in self.ro_binds if not b.startswith(text.rstrip("/") + "/")]
        self.ro_binds.append(text)


@dataclass(frozen=True, slots=True)
class Where:
    """What the lookups need: the folder the server starts in, its PATH, whether a path is
    already shown (system folders, the run folder, the declared binds), its network, flowrun's
    environment (HOME, PYENV_VERSION, npm's settings) and the sandbox's abilities."""

    cwd: Path
    path: str
    shown: Callable[[Path], bool]
    network: bool
    environ: Mapping[str, str]
    overlay_ok: Callable[[], bool]

    @property
    def home(self) -> Path | None:
        home = self.environ.get("HOME")
        return Path(home) if home else None


def program_needs(argv: list[str], where: Where) -> Needs:
    """The binds, environment and command for `argv` (ProgramNotShown when it cannot start)."""
    needs = Needs([])
    found = _unshimmed(locate(argv[0], where), where, needs)
    needs.argv = [str(found), *argv[1:]]
    _program(found, where, needs, 0)
    if found.name == "npx" or found.resolve().name == "npx-cli.js":
        _npx(argv[1:], where, needs)
    return needs


def locate(command: str, where: Where) -> Path:
    """The program a command names: a path (relative to the server's folder), else the first
    executable of that name on PATH (not resolved: a venv's python must keep its path)."""
    if not command:
        raise ProgramNotShown("its `command` is empty")
    if "/" in command or command.startswith("~"):
        path = Path(os.path.expanduser(command))
        path = path if path.is_absolute() else where.cwd / path
        if not path.is_file():
            raise ProgramNotShown(f"its command {path} does not exist")
        return Path(os.path.normpath(path))
    for folder in where.path.split(os.pathsep):
        if folder:
            candidate = Path(folder) / command
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return Path(os.path.normpath(candidate if candidate.is_absolute() else where.cwd / candidate))
    raise ProgramNotShown(
        f"its command '{command}' is not on PATH: install it, or give its full path in `command`"
    )


# ---------------------------------------------------------------- pyenv shims


def _unshimmed(path: Path, where: Where, needs: Needs) -> Path:
    """A pyenv shim as the program of the version pyenv selects (the shim itself needs pyenv,
    its root and HOME: the program does not). That program's folder goes first on the
    sandbox's PATH, so what it starts by name (`python3`) is found there, not as the shim."""
    root = path.parent.parent
    if path.parent.name != "shims" or not (root / "versions").is_dir():
        return path
    try:
        if b"pyenv" not in path.read_bytes()[:2000]:
            return path
    except OSError:
        return path
    versions = _pyenv_versions(root, where)
    for version in versions:
        if version == "system":
            rest = where.path.split(os.pathsep)
            later = rest[rest.index(str(path.parent)) + 1 :] if str(path.parent) in rest else rest
            try:
                return locate(path.name, replace(where, path=os.pathsep.join(later)))
            except ProgramNotShown:
                continue
        candidate = root / "versions" / version / "bin" / path.name
        if candidate.is_file():
            folders = needs.env.get("PATH", where.path).split(os.pathsep)
            needs.env["PATH"] = os.pathsep.join(dict.fromkeys([str(candidate.parent), *folders]))
            return Path(os.path.normpath(candidate))
    chosen = ", ".join(versions) or "none"
    raise ProgramNotShown(
        f"its command {path} is a pyenv shim, and the pyenv version it selects ({chosen}) has no "
        f"{path.name}: give the full path of the interpreter in `command`"
    )


def _pyenv_versions(root: Path, where: Where) -> list[str]:
    """The versions pyenv selects: PYENV_VERSION, else the nearest `.python-version` from the
    server's folder up, else the global `version` file."""
    chosen = where.environ.get("PYENV_VERSION")
    if chosen:
        return [v for v in re.split(r"[:\s]+", chosen) if v]
    files = [folder / ".python-version" for folder in (where.cwd, *where.cwd.parents)]
    for file in [*files, root / "version"]:
        try:
            text = file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        names = [w for line in text.splitlines() for w in line.split() if not line.startswith("#")]
        if names:
            return names
    return ["system"]


# ---------------------------------------------------------------- a program and its interpreters


def _program(path: Path, where: Where, needs: Needs, depth: int) -> None:
    """Show `path`, every step of its symlink chain, and what runs it."""
    if depth > MAX_DEPTH:
        return
    for hop in _symlink_chain(path):
        _show(hop, where, needs)
    real = path.resolve()
    venv = _venv_of(path) or _venv_of(real)
    if venv is not None:
        _base_of(venv, where, needs, depth)
    interpreter = _shebang(real, where, needs)
    if interpreter is not None:
        _program(interpreter, where, needs, depth + 1)
        _user_site(path, interpreter, where, needs)


def _symlink_chain(path: Path) -> list[Path]:
    """The path, each symlink it passes through, and the file at the end (each normalised,
    not resolved)."""
    chain = [path]
    current = path
    for _ in range(40):
        if not current.is_symlink():
            break
        target = Path(os.readlink(current))
        current = Path(os.path.normpath(target if target.is_absolute() else current.parent / target))
        chain.append(current)
    return chain


def _show(path: Path, where: Where, needs: Needs) -> None:
    """Bind the install folder of one file the program needs, unless it is shown already."""
    if where.shown(path) or any(path == Path(b) or path.is_relative_to(b) for b in needs.ro_binds):
        return
    home = where.home
    if home is not None and path.parent == home / ".local" / "bin":
        needs.bind(path)
        return
    root = install_root(path, home)
    if root is None:
        package = node_package(path, home)
        if package is not None:  # its folder alone would not do: node reads its dependencies
            raise ProgramNotShown(
                f"its program {path} is part of the node package {package}, which the sandbox does "
                "not show (node finds the package's dependencies in it)",
                {"ro_binds": [str(package)]},
            )
        raise ProgramNotShown(
            f"its program {path} is in a folder the sandbox does not show", {"ro_binds": [str(path.parent)]}
        )
    needs.bind(root)


def install_root(path: Path, home: Path | None) -> Path | None:
    """The nearest folder above `path` that is a Python venv or holds both `bin/` and `lib/`
    (a pyenv version, a node install), below the home folder, `~/.local` and `/`."""
    stops = {Path("/")}
    if home is not None:
        stops |= {home, home / ".local", *home.parents}
    for folder in path.parents:
        if folder in stops:
            return None
        if (folder / "pyvenv.cfg").is_file():
            return folder
        if (folder / "bin").is_dir() and (folder / "lib").is_dir():
            return folder
    return None


NODE_SUFFIXES = (".js", ".mjs", ".cjs")


def _node_script(path: Path) -> bool:
    """Whether node runs this file: a JavaScript file, or a script whose `#!` line names node."""
    if path.suffix in NODE_SUFFIXES:
        return True
    try:
        with path.open("rb") as f:
            head = f.read(SHEBANG_BYTES)
    except OSError:
        return False
    return head.startswith(b"#!") and b"node" in head.split(b"\n", 1)[0]


def node_package(path: Path, home: Path | None) -> Path | None:
    """The folder a node script's imports resolve in, for a script inside a node package:
    the outermost `node_modules` it lies in (an install, flat or nested), else its package
    folder (the nearest holding `package.json`) when that has its own `node_modules`, else the
    nearest folder above that holds one (a workspace's hoisted dependencies), else the package
    folder; below the home folder, `~/.local` and `/`. None: not a node script (a JavaScript
    file, or one whose `#!` line names node) in a node package."""
    if not _node_script(path):
        return None
    path = path.resolve()  # node resolves imports from where the script really is
    stops = {Path("/")}
    if home is not None:
        stops |= {home, home / ".local", *home.parents}
    below = list(itertools.takewhile(lambda folder: folder not in stops, path.parents))
    installs = [folder for folder in below if folder.name == "node_modules"]
    if installs:
        return installs[-1]
    package = next((folder for folder in below if (folder / "package.json").is_file()), None)
    if package is None:
        return None
    upward = below[below.index(package) :]
    return next((folder for folder in upward if (folder / "node_modules").is_dir()), package)


def _venv_of(path: Path) -> Path | None:
    folder = path.parent.parent
    return folder if path.parent.name == "bin" and (folder / "pyvenv.cfg").is_file() else None


def _base_of(venv: Path, where: Where, needs: Needs, depth: int) -> None:
    """A venv's base interpreter (its `pyvenv.cfg` says where): the venv's python may be a copy."""
    try:
        text = (venv / "pyvenv.cfg").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return
    found = re.search(r"^\s*home\s*=\s*(.+?)\s*$", text, re.MULTILINE)
    if found is None:
        return
    home = Path(found.group(1))
    candidates = sorted(home.glob("python3*")) + sorted(home.glob("python"))
    base = next((c for c in candidates if c.is_file()), None)
    if base is not None:
        _program(base, where, needs, depth + 1)


def _shebang(path: Path, where: Where, needs: Needs) -> Path | None:
    """The interpreter a script's `#!` line names (`env NAME` looked up on PATH)."""
    try:
        with path.open("rb") as f:
            head = f.read(SHEBANG_BYTES)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", errors="replace").split()
    if not words:
        return None
    interpreter = Path(words[0])
    if interpreter.name == "env":
        names = [w for w in words[1:] if not w.startswith("-") and not ENV_ASSIGNMENT.match(w)]
        if not names:
            return None
        try:
            found = locate(names[0], where)
        except ProgramNotShown:
            raise ProgramNotShown(f"{path} runs `{names[0]}` (its #! line), which is not on PATH") from None
        return _unshimmed(found, where, needs)
    if not interpreter.is_file():
        raise ProgramNotShown(f"{path} runs {interpreter} (its #! line), which does not exist")
    return interpreter


def _user_site(script: Path, interpreter: Path, where: Where, needs: Needs) -> None:
    """A Python script in ~/.local/bin run by a Python outside a venv (pip install --user):
    its packages are in the user site of that Python's version."""
    home = where.home
    if home is None or script.parent != home / ".local" / "bin" or _venv_of(interpreter):
        return
    version = re.match(r"^python(\d+\.\d+)", interpreter.resolve().name)
    if version is None:
        return
    site = home / ".local" / "lib" / f"python{version.group(1)}"
    if site.is_dir() and not where.shown(site):
        needs.bind(site)
        needs.env["PYTHONUSERBASE"] = str(home / ".local")


# ---------------------------------------------------------------- npx


def npm_cache(environ: Mapping[str, str]) -> Path | None:
    """npm's cache folder: npm_config_cache, else `cache=` in ~/.npmrc, else ~/.npm."""
    configured = environ.get("npm_config_cache") or environ.get("NPM_CONFIG_CACHE")
    home = environ.get("HOME")
    if not configured and home:
        try:
            rc = (Path(home) / ".npmrc").read_text(encoding="utf-8", errors="replace")
        except OSError:
            rc = ""
        found = re.search(r"^\s*cache\s*=\s*(.+?)\s*$", rc, re.MULTILINE)
        configured = found.group(1) if found else str(Path(home) / ".npm")
    if not configured:
        return None
    path = Path(os.path.expanduser(configured))
    return path if path.is_dir() else None


def npx_packages(args: list[str]) -> list[str]:
    """The packages an npx command line runs: each `--package`, else its first argument."""
    packages: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-p", "--package") and i + 1 < len(args):
            packages.append(args[i + 1])
            i += 2
            continue
        if arg.startswith("--package="):
            packages.append(arg.split("=", 1)[1])
        elif arg == "--":
            return packages or args[i + 1 : i + 2]
        elif not arg.startswith("-"):
            return packages or [arg]
        i += 1
    return packages


def npx_cached(cache: Path, package: str) -> bool:
    """Whether npx installed `package` before (its `_npx/*/package.json` names it)."""
    name = _package_name(package)
    for manifest in (cache / "_npx").glob("*/package.json"):
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            continue
        listed = (data.get("_npx") or {}).get("packages") or []
        if package in listed or (name == package and name in (data.get("dependencies") or {})):
            return True
    return False


def _local_package(spec: str, cwd: Path) -> bool:
    """A package npx takes from a folder or a tarball here, not from the registry."""
    if spec.startswith(("file:", "./", "../", "/", "~")):
        return True
    return spec.endswith((".tgz", ".tar.gz")) and (cwd / spec).is_file()


def _package_name(spec: str) -> str:
    """`@scope/name@1.2` -> `@scope/name`, `name@latest` -> `name`."""
    head, at, _ = spec[1:].partition("@") if spec.startswith("@") else spec.partition("@")
    return ("@" + head if spec.startswith("@") else head) if at else spec


def _npx(args: list[str], where: Where, needs: Needs) -> None:
    packages = npx_packages(args)
    cache = npm_cache(where.environ)
    usable = cache is not None and where.overlay_ok()
    if usable and cache is not None:  # npm writes to its cache even when all it needs is there
        needs.overlays.append(str(cache))
        needs.env |= {
            "npm_config_cache": str(cache),
            "npm_config_prefer_offline": "true",
            "npm_config_update_notifier": "false",
        }
    missing = [
        p
        for p in packages
        if not _local_package(p, where.cwd) and not (usable and cache is not None and npx_cached(cache, p))
    ]
    if missing and not where.network:
        why = "is not in npm's cache" if usable else "cannot come from npm's cache here"
        raise ProgramNotShown(
            f"npx would download {', '.join(missing)} first, which {why}, and the sandbox has no "
            "network (npx needs it for the first install)",
            {"network": "allow"},
        )
    needs.hint = (
        "npx needs npm's cache and, for a package it has not installed yet, the network "
        "(`network: allow` in the server's `sandbox:`)"
    )
