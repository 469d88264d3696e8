"""``caramba worker``: keep N worker processes running (and the call keeper, when
``llm.keeper`` is on); stop them together on a signal.

One worker process per core (each with many turn threads) is the measured best fit for
I/O-bound turns. A worker that dies (an out-of-memory kill, a crash) is started again
after a back-off; the other workers publish its turns again as soon as their leases in
the turn ledger lapse (``celery.lease_s``, see ``tasks.ledger``). SIGTERM or SIGINT is
passed on to every worker once (warm shutdown: running turns finish); the workers run in
their own process group so a Ctrl-C in the terminal reaches them only through here, and
they stop by themselves if this process is killed outright. The call keeper
(``keeper_command``), one per host, is supervised the same way, and stopped with the
workers: it finishes the calls under way, and the workers call the model themselves once
it is gone.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from types import FrameType

log = logging.getLogger(__name__)

_POLL_S = 0.2
_BACKOFF_MAX_S = 30.0
_HEALTHY_AFTER_S = 60.0  # a worker that lived this long restarts without back-off


@dataclass
class _Slot:
    index: int
    label: str  # "worker 0", "call keeper": for the logs
    command: Callable[[], Sequence[str]]
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    backoff_s: float = 0.0
    restart_at: float | None = None
    exits: list[int] = field(default_factory=list)


def worker_command(
    index: int, *, concurrency: int, loglevel: str, parent_pid: int | None = None
) -> list[str]:
    """The command line of worker number ``index`` (a ``python -m tasks.worker``)."""
    return [
        sys.executable,
        "-m",
        "tasks.worker",
        f"--concurrency={concurrency}",
        f"--loglevel={loglevel}",
        f"--name=caramba-{index}-{os.getpid()}@%h",
        f"--parent-pid={parent_pid or os.getpid()}",
    ]


def keeper_command(*, loglevel: str, parent_pid: int | None = None) -> list[str]:
    """The command line of the host's call keeper (``core.process.keeper_main``)."""
    return [
        sys.executable,
        "-m",
        "core.process.keeper_main",
        f"--loglevel={loglevel}",
        f"--parent-pid={parent_pid or os.getpid()}",
    ]


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


class Supervisor:
    """Runs ``count`` copies of a command (and ``keeper``, a call keeper's command, if
    given), restarting any that die, until signalled."""

    def __init__(
        self,
        count: int,
        command: Callable[[int], Sequence[str]],
        *,
        env: dict[str, str] | None = None,
        restart_delay_s: float = 1.0,
        keeper: Sequence[str] | None = None,
    ) -> None:
        self.slots = [_Slot(i, f"worker {i}", partial(command, i)) for i in range(count)]
        if keeper is not None:
            self.slots.append(_Slot(count, "call keeper", lambda: keeper))
        self._env = env
        self._restart_delay_s = restart_delay_s
        self._stopping = 0  # how many stop signals were received

    def _spawn(self, slot: _Slot) -> None:
        slot.proc = subprocess.Popen(list(slot.command()), env=self._env, process_group=0)
        slot.started_at = time.monotonic()
        slot.restart_at = None
        log.info("%s started (pid %d)", slot.label, slot.proc.pid)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._stopping += 1
        workers = sum(slot.label.startswith("worker") for slot in self.slots)
        log.info(
            "%s: %s shutdown of %d workers%s",
            signal.Signals(signum).name,
            "warm" if self._stopping == 1 else "cold",
            workers,
            "" if workers == len(self.slots) else " and the call keeper",
        )
        for slot in self.slots:
            if slot.proc is not None and slot.proc.poll() is None:
                slot.proc.send_signal(signum if self._stopping == 1 else signal.SIGQUIT)

    def run(self) -> int:
        """Supervise until a stop signal and every worker has exited; returns 0 then."""
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            for slot in self.slots:
                self._spawn(slot)
            while True:
                alive = self._reap()
                if self._stopping:
                    if not alive:
                        return 0
                else:
                    self._restart_due()
                time.sleep(_POLL_S)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    def _reap(self) -> int:
        """Notice workers that exited; schedule their restart. Returns how many are alive."""
        alive = 0
        now = time.monotonic()
        for slot in self.slots:
            if slot.proc is None:
                continue
            code = slot.proc.poll()
            if code is None:
                alive += 1
                continue
            slot.exits.append(code)
            slot.proc = None
            if self._stopping:
                log.info("%s stopped (%s)", slot.label, describe_exit(code))
                continue
            lived = now - slot.started_at
            slot.backoff_s = (
                self._restart_delay_s
                if lived >= _HEALTHY_AFTER_S
                else min(_BACKOFF_MAX_S, max(self._restart_delay_s, slot.backoff_s * 2))
            )
            slot.restart_at = now + slot.backoff_s
            log.warning(
                "%s %s after %.0f s; restarting in %.0f s",
                slot.label,
                describe_exit(code),
                lived,
                slot.backoff_s,
            )
        return alive

    def _restart_due(self) -> None:
        now = time.monotonic()
        for slot in self.slots:
            if slot.proc is None and slot.restart_at is not None and now >= slot.restart_at:
                self._spawn(slot)
