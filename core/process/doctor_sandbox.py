"""``caramba doctor``'s sandbox check: can ``run_code`` run code here, and if not, why; if
so, its walls: the disk cap (a tmpfs the kernel enforces, or only polled), user
namespaces off and the seccomp filter on (the probe checks both), the concurrency."""

from __future__ import annotations

from core.config import Settings
from core.process.doctor_types import Check, Level
from core.tools.sandbox import probe
from core.tools.sandbox.probe import INSTALL


def check_sandbox(settings: Settings) -> Check:
    ready = probe(settings.sandbox)
    s = settings.sandbox
    if ready.ok:
        walls = (
            f"user namespaces off, seccomp filter on, at most {s.max_concurrent} at once "
            "(sandbox.max_concurrent)"
        )
        if ready.tmpfs:
            disk = (
                f"disk capped by the kernel at {s.disk_mb} MB and {s.max_files} files "
                "(a tmpfs per call: sandbox.disk_mb, sandbox.max_files)"
            )
            return Check(
                "sandbox",
                Level.OK,
                f"{ready.detail}: run_code runs code sandboxed; {disk}; {walls}",
            )
        disk = f"disk cap polled, not enforced by the kernel ({ready.disk_note})"
        return Check(
            "sandbox",
            Level.WARN,
            f"{ready.detail}: run_code runs code sandboxed; {disk}; {walls}",
            "run workers as root so each call gets a size-limited tmpfs; until then the "
            f"code can overshoot sandbox.disk_mb ({s.disk_mb} MB) for a fraction of a second",
        )
    detail = f"run_code is unavailable: {ready.detail}"
    if ready.problem == "off":
        return Check("sandbox", Level.WARN, detail, "set sandbox.enabled = true to offer it")
    if ready.problem == "missing":
        return Check(
            "sandbox",
            Level.WARN,
            detail,
            f"{INSTALL}; macOS has no bubblewrap: run workers on Linux",
        )
    return Check(
        "sandbox",
        Level.FAIL,
        detail,
        "allow user namespaces (or run workers on a host that does), or fix sandbox.python",
    )
