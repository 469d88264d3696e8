"""The text the model reads after ``run_code``: how it ended (and which limit, in plain
words), what it printed, which files it left in the workspace."""

from __future__ import annotations

import signal

from core.config_tools import SandboxSettings
from core.tools.sandbox.runner import Outcome
from core.tools.sandbox.sync import SyncReport

_LISTED = 30
# What a program prints when a limit refuses it (Python, numpy, C++, the shells).
_MEMORY = ("MemoryError", "Unable to allocate", "Cannot allocate memory", "bad_alloc")
_PROCESSES = (
    "Resource temporarily unavailable",
    "Cannot fork",
    "fork: retry",
    "can't start new thread",
)
_FILE_SIZE = ("File too large",)
# A wait for a free sandbox shorter than this is not worth a line.
NOTICED_WAIT_S = 1.0


def flood_bytes(s: SandboxSettings) -> int:
    """Printing more than this stops the code: it is flooding, not reporting."""
    return 100 * s.output_chars


def render(o: Outcome, sync: SyncReport, s: SandboxSettings) -> str:
    said = o.stderr.text() + o.stdout.text()
    lines = [_headline(o, s)]
    if o.waited >= NOTICED_WAIT_S:
        lines.append(
            f"It waited {o.waited:.1f} s for a free sandbox first (at most "
            f"{s.max_concurrent} run at once: sandbox.max_concurrent)."
        )
    if o.full == "bytes":
        lines.append(
            f"The sandbox's disk is full: its working folder and /tmp hold at most "
            f"{s.disk_mb} MB together (sandbox.disk_mb), the run's files included; writes "
            "past that fail with No space left on device. Write less: smaller files, "
            "fewer copies, delete scratch files."
        )
    elif o.full == "files":
        lines.append(
            f"The sandbox's disk is full: its working folder and /tmp hold at most "
            f"{s.max_files} files and folders together (sandbox.max_files); making more "
            "fails with No space left on device. Write fewer, larger files."
        )
    if any(m in said for m in _MEMORY):
        lines.append(
            f"It ran out of memory ({s.memory_mb} MB limit): work on less data at a "
            "time (read in chunks, sample, drop columns)."
        )
    if any(m in said for m in _PROCESSES):
        lines.append(
            f"Too many processes: it hit the limit of {s.processes} processes and "
            "threads. Start fewer (no fork loops, smaller pools)."
        )
    if any(m in said for m in _FILE_SIZE):
        lines.append(f"A file reached the {s.file_mb} MB size limit.")
    if (o.stdout.cut or o.stderr.cut) and o.stopped != "flood":
        lines.append(
            f"Output cut at {s.output_chars:,} characters (its start and end are shown): "
            "print summaries, and write long results to a file."
        )
    # Files before the output: a long tool result is cut at its end.
    if sync.saved:
        lines.append("Files created or changed: " + _listed([f.describe() for f in sync.saved]))
    if sync.deleted:
        lines.append("Files deleted: " + _listed(sync.deleted))
    if sync.refused:
        lines.append(
            "Not saved to the workspace: "
            + _listed([f"{path}: {why}" for path, why in sorted(sync.refused.items())])
        )
    lines.append("stdout:\n" + (o.stdout.text().rstrip("\n") or "(nothing)"))
    if o.stderr.total:
        lines.append("stderr:\n" + o.stderr.text().rstrip("\n"))
    return "\n".join(lines)


def _headline(o: Outcome, s: SandboxSettings) -> str:
    took = f"{o.seconds:.2f} s" if o.seconds < 10 else f"{o.seconds:.0f} s"
    if o.stopped == "timeout":
        return (
            f"Stopped after {s.timeout_s:g} s wall-clock limit: the code ran too long "
            "(make it faster, or work on a sample first)."
        )
    if o.stopped == "flood":
        return (
            f"Stopped after {took}: it printed more than {flood_bytes(s):,} characters "
            f"(output flood). Output cut at {s.output_chars:,} characters."
        )
    if o.stopped == "disk":
        return (
            f"Stopped after {took}: it wrote more than its working folder may hold "
            f"({s.disk_mb} MB, sandbox.disk_mb; {s.max_files} files, sandbox.max_files). "
            "Write fewer, smaller files."
        )
    code = o.returncode
    if code == 0:
        return f"Finished (exit status 0) in {took}."
    if code is None:
        return f"Ended without an exit status after {took}."
    if code == 128 + signal.SIGXCPU or code == 128 + signal.SIGKILL:
        # SIGXCPU at the CPU limit, SIGKILL a second later if it was ignored.
        return (
            f"Stopped: it used up its CPU time ({s.cpu_s} s limit). Make it faster, or work "
            "on a sample first."
        )
    if code == 128 + signal.SIGXFSZ:
        return f"Stopped: a file reached the {s.file_mb} MB size limit."
    if code > 128:
        try:
            name = signal.Signals(code - 128).name
        except ValueError:
            name = f"signal {code - 128}"
        return f"Ended by {name} (exit status {code}) after {took}."
    return f"Failed with exit status {code} after {took}."


def _listed(items: list[str]) -> str:
    more = f", and {len(items) - _LISTED} more" if len(items) > _LISTED else ""
    return ", ".join(items[:_LISTED]) + more
