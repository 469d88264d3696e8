"""Real worker processes for tests: started with an environment, logging to a file.

Output goes to a file, not a pipe, so a chatty process can never block on a full pipe
that nobody reads. Every process is stopped (SIGTERM, then SIGKILL) by :meth:`stop`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
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

    def kill(self) -> int:
        """SIGKILL at once (like ``kill -9``: no shutdown of any kind); the exit code."""
        if self.proc.poll() is None:
            self.proc.kill()
        return self.proc.wait(5)

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


def stop_all(procs: list[Process], timeout: float = 15) -> list[int]:
    """:meth:`Process.stop` for several at once: SIGTERM to all first, then the waits (a
    Celery worker's warm shutdown takes about a second; one after the other, that adds up)."""
    for proc in procs:
        if proc.proc.poll() is None:
            proc.proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for proc in procs:
        try:
            proc.proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.proc.kill()
            proc.proc.wait(5)
    return [proc.proc.returncode for proc in procs]


def cleanup_all(procs: list[Process]) -> None:
    """:meth:`Process.cleanup` for several at once (stopped together, see :func:`stop_all`)."""
    stop_all(procs)
    for proc in procs:
        proc.cleanup()


def free_port() -> int:
    """A TCP port free on the loopback interface right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """A ``redis-server`` of our own on a free port, persistent across restarts: every write
    is in the append-only file (fsynced at once) in a temporary folder, and no RDB
    snapshots. For tests and benchmarks that restart Redis (the shared one is never
    restarted). ``start`` waits until it answers PING; ``cleanup`` stops it and removes
    its folder."""

    def __init__(self, port: int | None = None, executable: str = "redis-server") -> None:
        self.port = port or free_port()
        self.executable = shutil.which(executable) or executable
        self.dir = Path(tempfile.mkdtemp(prefix="caramba-redis-"))
        self.proc: subprocess.Popen[bytes] | None = None
        self.restarts = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def log(self) -> Path:
        return self.dir / "redis.log"

    def start(self, timeout: float = 10) -> None:
        args = [
            self.executable,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--appendonly", "yes",
            "--appendfsync", "always",
            "--dir", str(self.dir),
            "--save", "",
            "--logfile", str(self.log),
        ]  # fmt: skip
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 10) -> None:
        from redis import Redis
        from redis.exceptions import BusyLoadingError
        from redis.exceptions import ConnectionError as RedisConnectionError

        deadline = time.monotonic() + timeout
        while True:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"redis-server exited ({self.proc.returncode}): {self.tail()}")
            client = Redis(host="127.0.0.1", port=self.port, socket_timeout=1)
            try:
                if client.ping():
                    return
            except (RedisConnectionError, BusyLoadingError):
                pass
            finally:
                client.close()
            if time.monotonic() > deadline:
                raise AssertionError(f"redis-server: no PONG within {timeout} s: {self.tail()}")
            time.sleep(0.05)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15) -> None:
        """SIGTERM: Redis's own shutdown (the append-only file is complete either way)."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)

    def restart(self, down_s: float = 1.0, sig: int = signal.SIGTERM) -> None:
        """Stop it, stay down ``down_s`` (clients see refused connections), start it again
        on the same port and data; returns once it answers."""
        self.stop(sig)
        time.sleep(down_s)
        self.start()
        self.restarts += 1

    def tail(self, lines: int = 20) -> str:
        if not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
