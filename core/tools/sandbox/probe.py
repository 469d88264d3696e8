"""Can code run sandboxed here? Find bubblewrap and its helpers, then try it once.

bwrap can be installed yet unusable (user namespaces switched off, a container's seccomp
profile refusing them): the probe runs the real sandbox once, with the configured
interpreter, its seccomp filter and its disk, and keeps bwrap's own words when it fails;
the code inside checks that it cannot make a user namespace. Answered once per process.
"""

from __future__ import annotations

import functools
import glob
import json
import os
import shutil
import site
import subprocess
import sys
from dataclasses import dataclass
from typing import Literal

from core.config_tools import SandboxSettings
from core.tools.sandbox import disk, seccomp
from core.tools.sandbox.layout import CODE_DIR, Interpreter, Tools, bwrap_command, sandbox_uid

INSTALL = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"
# Run inside by the probe: the sandbox works, and user namespaces are refused there.
_CHECK = (
    "import ctypes\n"
    "print('sandbox ok')\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "made = libc.unshare(0x10000000) == 0\n"  # CLONE_NEWUSER
    "print('userns', 'MADE' if made else 'REFUSED', ctypes.get_errno())\n"
)


@dataclass(frozen=True)
class Probe:
    """``ok``: code can run; ``detail``: bwrap's version, or why not in plain words;
    ``problem``: switched off, something missing, or installed but not working."""

    ok: bool
    detail: str
    tools: Tools | None = None
    interpreter: Interpreter | None = None
    problem: Literal["off", "missing", "broken"] | None = None
    # The disk cap is a tmpfs the kernel enforces (else ``disk_note`` says why not).
    tmpfs: bool = False
    disk_note: str = ""


def probe(settings: SandboxSettings) -> Probe:
    """Whether ``run_code`` can be offered with these settings (cached per process)."""
    if not settings.enabled:
        return Probe(False, "switched off in config (sandbox.enabled = false)", problem="off")
    return _probe(settings.bwrap, settings.python, settings.memory_mb, os.geteuid())


@functools.lru_cache(maxsize=8)
def _probe(bwrap: str, python: str, memory_mb: int, euid: int) -> Probe:
    if sys.platform != "linux":
        return Probe(False, f"bubblewrap needs Linux; this is {sys.platform}", problem="missing")
    found = shutil.which(bwrap)
    if found is None:
        return Probe(
            False,
            f"bubblewrap not found ({bwrap!r} is not on the PATH): {INSTALL}",
            problem="missing",
        )
    helpers = {name: shutil.which(name) for name in ("prlimit", "setpriv")}
    missing = [n for n, path in helpers.items() if path is None]
    if missing:
        return Probe(
            False, f"{', '.join(missing)} not found: install util-linux", problem="missing"
        )
    tools = Tools(bwrap=found, prlimit=str(helpers["prlimit"]), setpriv=str(helpers["setpriv"]))
    interp = interpreter(python)
    if isinstance(interp, str):
        return Probe(False, interp, problem="broken")
    try:
        seccomp.program()
    except seccomp.SeccompUnavailable as exc:
        return Probe(False, str(exc), problem="missing")
    version = _run([found, "--version"]).stdout.strip() or "bubblewrap"
    disk.sweep()  # the tmpfs of workers killed mid-call
    no_mount = disk.can_mount()
    check = SandboxSettings(memory_mb=max(memory_mb, 256), cpu_s=10, processes=16)
    uid = sandbox_uid() if euid == 0 else None
    box = disk.make_box(max_bytes=1 << 20, max_inodes=16, owner=uid, mount=no_mount is None)
    try:
        argv = [interp.executable, "-S", "-c", _CHECK]
        fd = seccomp.pipe_fd()
        cmd = bwrap_command(
            tools,
            check,
            interp,
            host_workdir=str(box.work),
            host_code_dir=str(box.code),
            argv=argv,
            uid=uid,
            host_tmp=str(box.tmp) if box.mounted else None,
            seccomp_fd=fd,
        )
        try:
            result = _run(cmd, pass_fds=(fd,))
        finally:
            os.close(fd)
    finally:
        disk.unmount(box)
        shutil.rmtree(box.root, ignore_errors=True)
    if result.returncode == 0 and "userns REFUSED" not in result.stdout:
        return Probe(
            False,
            f"the sandbox lets code make user namespaces here ({result.stdout.strip()}): "
            "run_code stays off rather than run without that wall",
            problem="broken",
        )
    if result.returncode != 0 or "sandbox ok" not in result.stdout:
        said = (result.stderr or result.stdout).strip()[-400:] or f"exit {result.returncode}"
        return Probe(
            False,
            f"{found} is installed but cannot make a sandbox here ({said}); user "
            "namespaces may be switched off (sysctl kernel.unprivileged_userns_clone=1) or "
            "refused by a container's seccomp profile",
            problem="broken",
        )
    return Probe(True, version, tools, interp, tmpfs=no_mount is None, disk_note=no_mount or "")


def interpreter(python: str) -> Interpreter | str:
    """The interpreter to bind (``""``: this one), or why it cannot be used."""
    if not python:
        prefix, base, site_dirs = sys.prefix, sys.base_prefix, site.getsitepackages()
        path = sys.executable
    else:
        found = shutil.which(python)
        if found is None:
            return f"sandbox.python {python!r} not found"
        path = found
        code = (
            "import json, site, sys; "
            "print(json.dumps([sys.prefix, sys.base_prefix, site.getsitepackages()]))"
        )
        result = _run([path, "-c", code])
        try:
            prefix, base, site_dirs = json.loads(result.stdout)
        except ValueError:
            return f"sandbox.python {python!r} does not run: {result.stderr.strip()[-200:]}"
    # Its own folder too: an interpreter outside its prefix (a venv's bin/) must be seen.
    folders = _prefixes(prefix, base, os.path.dirname(os.path.realpath(path)))
    fast = all(_harmless(pth) for d in site_dirs for pth in glob.glob(os.path.join(d, "*.pth")))
    return Interpreter(path, folders, tuple(site_dirs) if fast else ())


def _harmless(pth: str) -> bool:
    """A ``.pth`` file the sandbox can do without: an editable install's finder (its source
    is not visible inside) or setuptools' distutils shim. Site start-up runs these at
    every start (about 30 ms for this project's editable finder alone)."""
    name = os.path.basename(pth)
    return name.startswith("__editable__") or name == "distutils-precedence.pth"


def _prefixes(*paths: str) -> tuple[str, ...]:
    # /usr is bound with the system already; a prefix inside the sandbox's own folders
    # (the code's) cannot be one.
    kept = [p for p in dict.fromkeys(paths) if p and p != "/" and not p.startswith(CODE_DIR)]
    return tuple(kept)


def _run(cmd: list[str], pass_fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
            pass_fds=pass_fds,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(cmd, 1, "", str(exc))
