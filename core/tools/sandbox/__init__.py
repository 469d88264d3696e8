"""Code run under bubblewrap: no network, a read-only system, the run's files as the
working directory, resource limits and a wall-clock timeout. Never unsandboxed: where
bwrap is missing or cannot make a sandbox, ``run_code`` is unavailable with the reason.

:mod:`layout` builds the bwrap command, :mod:`seccomp` the system calls it refuses,
:mod:`disk` its size-limited tmpfs, :mod:`gate` how many run at once, :mod:`probe` finds
out whether it works here, :mod:`runner` runs it within bounds, :mod:`sync` carries the
workspace in and out, :mod:`report` words the outcome and :mod:`session` ties one call
together.
"""

from core.tools.sandbox.probe import Probe, probe
from core.tools.sandbox.session import Language, run_code_in_sandbox

__all__ = ["Language", "Probe", "probe", "run_code_in_sandbox"]
