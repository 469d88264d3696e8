"""Real worker processes for tests: started with an environment, logging to a file.

Output goes to a file, not a pipe, so a chatty process can never block on a full pipe
that nobody reads. Every process is stopped (SIGTERM, then SIGKILL) by :meth:`stop`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from core.config import PROJECT_ROOT


@contextlib.contextmanager
def unique_prefix() -> Iterator[str]:
    """A key prefix of its own for processes sharing the test Redis; its keys are removed."""
    from redis import Redis

    from tests.conftest import REDIS_URL

    name = f"test-{uuid.uuid4().hex[:8]}"
    yield name
    client = Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"{name}:*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()


def worker_env(**settings: str) -> dict[str, str]:
    """This environment plus ``CARAMBA_*`` settings (``redis__url=...``)."""
    env = dict(os.environ)
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    env["PYTHONPATH"] = str(PROJECT_ROOT)
    env["PYTHONUNBUFFERED"] = "1"
    env.update({f"CARAMBA_{k.upper()}": v for k, v in settings.items()})
    return env


class Process:
    """One child process whose output is kept in a temporary log file."""

    def __init__(self, args: list[str], env: dict[str, str], name: str) -> None:
        self.name = name
        self._log = Path(tempfile.mkstemp(prefix=f"caramba-{name}-", suffix=".log")[1])
        with self._log.open("wb") as out:
            self.proc = subprocess.Popen(
                args, env=env, cwd=PROJECT_ROOT, stdout=out, stderr=subprocess.STDOUT
            )

    @classmethod
    def worker(cls, env: dict[str, str], name: str, concurrency: int = 4) -> Process:
        return cls(
            [sys.executable, "-m", "tasks.worker", f"--concurrency={concurrency}"], env, name
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        return self.proc.poll()

    def output(self) -> str:
        return self._log.read_text(errors="replace")

    def wait_for(self, text: str, timeout: float = 30, count: int = 1) -> None:
        """Wait until ``text`` appears ``count`` times in the output."""
        deadline = time.monotonic() + timeout
        while self.output().count(text) < count:
            if self.proc.poll() is not None:
                raise AssertionError(
                    f"{self.name} exited ({self.proc.returncode}) before printing {text!r}:\n"
                    + self.tail()
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: no {text!r} within {timeout} s:\n{self.tail()}")
            time.sleep(0.05)

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.output().splitlines()[-lines:])

    def stop(self, timeout: float = 15) -> int:
        """SIGTERM (warm shutdown), SIGKILL if it does not exit in time; the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode

    def cleanup(self) -> None:
        self.stop()
        self._log.unlink(missing_ok=True)
