"""``caramba doctor``'s sandbox check: can ``run_code`` run code here, and if not, why."""

from __future__ import annotations

from core.config import Settings
from core.process.doctor_types import Check, Level
from core.tools.sandbox import probe
from core.tools.sandbox.probe import INSTALL


def check_sandbox(settings: Settings) -> Check:
    ready = probe(settings.sandbox)
    if ready.ok:
        return Check("sandbox", Level.OK, f"{ready.detail}: run_code runs code sandboxed")
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
