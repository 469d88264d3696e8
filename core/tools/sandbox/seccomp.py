"""The seccomp filter bwrap loads before the code starts (``--seccomp FD``): system calls
that analysis code never needs fail with EPERM, everything else is allowed.

Refused: debugging other processes (ptrace), mounting and namespaces (mount, unshare,
setns, and clone with any ``CLONE_NEW*`` flag: no user namespace, so no capabilities to
win back), the kernel keyring, BPF, perf events, loading kernel modules or kernels,
swap, reboot, file handles (open_by_handle_at reads any file of a mount), userfaultfd and
io_uring (whose operations seccomp cannot see). ``clone3`` answers ENOSYS: its flags sit
behind a pointer a filter cannot read, and the C library falls back to ``clone``, whose
flags it can. A system call of another architecture (32-bit x86 from a 64-bit process)
kills the process: its numbers differ, so the list would not hold for it.

Built with libseccomp (Debian's ``libseccomp2``, present wherever apt is) through
``pyseccomp``, once per process.
"""

from __future__ import annotations

import errno
import functools
import os
import tempfile

REFUSED = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount2",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "swapon",
    "swapoff",
    "reboot",
    "open_by_handle_at",
    "name_to_handle_at",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "acct",
    "quotactl",
    "syslog",
    "fanotify_init",
    "lookup_dcookie",
    "iopl",
    "ioperm",
)
# clone() flags that make a namespace (CLONE_NEWTIME exists only for unshare and clone3).
CLONE_NEW = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}


class SeccompUnavailable(RuntimeError):
    """The filter cannot be built here (pyseccomp or libseccomp missing)."""


@functools.cache
def program() -> bytes:
    """The filter as the kernel's BPF bytes (what bwrap reads from its ``--seccomp`` fd)."""
    try:
        import pyseccomp as sc
    except (ImportError, OSError) as exc:  # OSError: libseccomp.so.2 not found
        raise SeccompUnavailable(
            f"the seccomp filter cannot be built ({exc}): install libseccomp2 "
            "(Debian/Ubuntu: apt-get install libseccomp2) and pyseccomp"
        ) from exc
    f = sc.SyscallFilter(defaction=sc.ALLOW)
    eperm = sc.ERRNO(errno.EPERM)
    for name in REFUSED:
        try:
            f.add_rule(eperm, name)
        except (ValueError, RuntimeError, OSError):
            continue  # not a system call of this architecture (iopl on aarch64)
    for flag in CLONE_NEW.values():
        f.add_rule(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    with tempfile.TemporaryFile() as out:
        f.export_bpf(out)
        out.seek(0)
        return out.read()


def pipe_fd() -> int:
    """A file descriptor to read the filter from (the caller passes it to bwrap and closes
    it). The program is a few hundred bytes: it fits a pipe's buffer at once."""
    data = program()
    read, write = os.pipe()
    try:
        os.write(write, data)
    finally:
        os.close(write)
    return read
