"""The bubblewrap command line: what the sandboxed code sees and as whom it runs.

Visible: the system (``/usr`` and its ``/bin``, ``/lib`` links, a few files of ``/etc``)
and the interpreter's prefixes, all read-only; a fresh ``/proc``, ``/dev`` and a small
``/tmp`` (also ``HOME``); the run's files read-write as the working directory; the code
itself read-only. No network (an empty network namespace), no other process (its own pid
namespace, killed with its parent). A seccomp filter refuses the system calls code never
needs (namespaces, mounts, ptrace, the keyring, BPF …: :mod:`seccomp`).

As whom: bubblewrap run by root keeps the sandbox root with every capability of its user
namespace, which is enough to remount ``/usr`` read-write and write to the host (seen
here), and root is exempt from RLIMIT_NPROC, so nothing stops a fork bomb. Run by root,
the sandbox therefore drops to an unprivileged user of its own (``setpriv``: no
capabilities, no new privileges) before the code starts. Run by anyone else, bubblewrap's
user namespace already drops every capability. Either way the limits are set inside
(``prlimit``), after the namespaces exist, so the process count is the sandbox's own.
"""

from __future__ import annotations

import itertools
import os
import posixpath
from dataclasses import dataclass

from core.config_tools import SandboxSettings

_MB = 1024 * 1024
# The system, read-only (each a link such as /bin → usr/bin on merged-/usr systems).
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# What programs read from /etc: command alternatives, the linker's cache, certificates,
# the time zone, fonts (matplotlib), MIME types. Nothing else of /etc is visible.
ETC_PATHS = (
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/localtime",
    "/etc/fonts",
    "/etc/mime.types",
)
# Where the run's files appear: the first of these that no bound path lies under.
WORKDIR_CHOICES = ("/work", "/workspace", "/sandbox/work")
CODE_DIR = "/code"
# Users the sandbox runs as when started by root: one per sandbox (this process's id and a
# counter), far above any account's, so no two sandboxes running at once share one.
_UID_BASE = 2_000_000_000
_counter = itertools.count()


@dataclass(frozen=True)
class Interpreter:
    """The Python the code runs with and the folders it needs (bound read-only).

    ``site_dirs``: its packages' folders, when their ``.pth`` files need not run: the code
    then starts without the ``site`` module (``-S``, several times faster to start) and
    finds the packages on ``PYTHONPATH``. Empty: a normal start.
    """

    executable: str
    prefixes: tuple[str, ...]
    site_dirs: tuple[str, ...] = ()

    def argv(self, script: str) -> list[str]:
        return [self.executable, "-B", *(["-S"] if self.site_dirs else []), script]


@dataclass(frozen=True)
class Tools:
    """The host programs the sandbox is built with."""

    bwrap: str
    prlimit: str
    setpriv: str


def sandbox_uid() -> int:
    return _UID_BASE + (os.getpid() % 4_194_304) * 256 + next(_counter) % 256


def workdir_for(interp: Interpreter) -> str:
    """A mount point for the run's files that hides none of the interpreter's folders."""
    for choice in WORKDIR_CHOICES:
        if not any(_under(p, choice) or _under(choice, p) for p in interp.prefixes):
            return choice
    raise RuntimeError("no free mount point for the workspace")  # pragma: no cover


def limits_args(s: SandboxSettings) -> list[str]:
    """``prlimit`` options: CPU seconds (SIGXCPU, then SIGKILL a second later), address
    space, processes (threads count too), the size of any one file, no core dumps."""
    return [
        f"--cpu={s.cpu_s}:{s.cpu_s + 1}",
        f"--as={s.memory_mb * _MB}",
        f"--nproc={s.processes}",
        f"--fsize={s.file_mb * _MB}",
        "--core=0",
    ]


def environment(workdir: str, interp: Interpreter) -> dict[str, str]:
    bindir = posixpath.dirname(interp.executable)
    return {
        "PATH": f"{bindir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "USER": "sandbox",
        "LOGNAME": "sandbox",
        "LANG": "C.UTF-8",
        # The run's own modules import like installed ones.
        "PYTHONPATH": ":".join((workdir, *interp.site_dirs)),
        "PYTHONIOENCODING": "utf-8",
        "PYTHONUNBUFFERED": "1",  # what was printed before a crash or a kill is kept
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": "/tmp/matplotlib",
        "XDG_CACHE_HOME": "/tmp/.cache",
        # One thread per numeric library: threads count against the process limit.
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


def bwrap_command(
    tools: Tools,
    settings: SandboxSettings,
    interp: Interpreter,
    *,
    host_workdir: str,
    host_code_dir: str,
    argv: list[str],
    uid: int | None,
    host_tmp: str | None = None,
    seccomp_fd: int | None = None,
) -> list[str]:
    """The whole command: ``bwrap … [setpriv …] prlimit … -- argv``. ``uid`` is the user
    to drop to (when running as root), else ``None``. ``host_tmp``: the folder to show as
    ``/tmp`` (on the capped disk; its ``.shm`` is ``/dev/shm``), else a tmpfs of bwrap's.
    ``seccomp_fd``: the filter bwrap loads before the code starts (:mod:`seccomp`)."""
    workdir = workdir_for(interp)
    mounts = _Mounts()
    for path in SYSTEM_PATHS + ETC_PATHS:
        mounts.system(path)
    for prefix in interp.prefixes:
        mounts.ro_bind(prefix)
    # /tmp first: an interpreter or virtualenv that lives under /tmp (a CI checkout) is
    # bound on top of it, not hidden by it.
    if host_tmp is not None:
        args = [tools.bwrap, "--bind", host_tmp, "/tmp"]
    else:
        tmp_mb = max(settings.file_mb, 64)
        args = [tools.bwrap, "--perms", "1777", "--size", str(tmp_mb * _MB), "--tmpfs", "/tmp"]
    args += [*mounts.args, "--proc", "/proc", "--dev", "/dev"]
    if host_tmp is not None:
        # POSIX semaphores and shared memory (multiprocessing's locks), on the same disk.
        args += ["--bind", posixpath.join(host_tmp, ".shm"), "/dev/shm"]
    args += [*mounts.parents(workdir), *mounts.parents(CODE_DIR)]
    args += ["--bind", host_workdir, workdir, "--ro-bind", host_code_dir, CODE_DIR]
    if uid is None:
        # Every namespace, the user's too; the code may not make user namespaces of its own.
        args += ["--unshare-all", "--unshare-user", "--disable-userns"]
    else:
        # No user namespace (it would map the sandbox to root); capabilities only to drop
        # to ``uid`` with setpriv, which then drops them all. The code cannot make user
        # namespaces of its own: the seccomp filter refuses them.
        args += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"]
        args += ["--unshare-cgroup-try", "--cap-drop", "ALL"]
        for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"):
            args += ["--cap-add", cap]
    args += ["--die-with-parent", "--new-session", "--hostname", "sandbox", "--clearenv"]
    if seccomp_fd is not None:
        args += ["--seccomp", str(seccomp_fd)]
    for key, value in environment(workdir, interp).items():
        args += ["--setenv", key, value]
    args += ["--chdir", workdir]
    if uid is not None:
        args += [tools.setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
        args += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
    args += [tools.prlimit, *limits_args(settings), "--", *argv]
    return args


class _Mounts:
    """Read-only binds, each folder's parents made first (bwrap run by root makes them
    mode 0700, which the unprivileged sandbox user could not enter)."""

    def __init__(self) -> None:
        self.args: list[str] = []
        self.bound: list[str] = []
        self._made: set[str] = set()

    def system(self, path: str) -> None:
        if os.path.islink(path):
            if not self._covered(path):
                self.args += [*self.parents(path), "--symlink", os.readlink(path), path]
                self.bound.append(path)
        elif os.path.exists(path):
            self.ro_bind(path)

    def ro_bind(self, path: str) -> None:
        real = os.path.realpath(path)
        for target in dict.fromkeys((real, path)):
            if self._covered(target):
                continue
            self.args += self.parents(target)
            if target == real:
                self.args += ["--ro-bind", real, real]
            else:
                self.args += ["--symlink", real, target]
            self.bound.append(target)

    def parents(self, path: str) -> list[str]:
        """Options making ``path``'s missing parent folders, readable by anyone."""
        out: list[str] = []
        parts = path.strip("/").split("/")[:-1]
        for i in range(1, len(parts) + 1):
            parent = "/" + "/".join(parts[:i])
            if parent not in self._made and not self._covered(parent):
                out += ["--perms", "0755", "--dir", parent]
                self._made.add(parent)
        return out

    def _covered(self, path: str) -> bool:
        return any(_under(path, b) for b in self.bound)


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")
