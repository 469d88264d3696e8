"""A primary, its replicas and three Sentinels on loopback, for failover tests and benches:
random free ports, temporary folders, quorum 2, the primary seen down after 1 s.

``start`` returns once every Sentinel knows the primary and its replicas (a failover needs
both); ``kill_primary`` SIGKILLs the primary (``kill_primary_losing``: after writes no
replica received, as a primary dying with its replicas behind); ``wait_for_failover``
returns once the Sentinels name a new primary that answers as one. ``url`` is the
``redis+sentinel://`` url the processes are given; ``cleanup`` stops everything and
removes the folders.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redis import Redis

from tests.integration.processes import RedisServer, free_port

SERVICE = "caramba"
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 3000


class _Server(RedisServer):
    """A redis-server with no persistence (the replicas have its writes), replicating
    ``primary_port`` if given; TLS only with ``tls`` (its ``--tls-*`` arguments)."""

    def __init__(self, primary_port: int | None = None, tls: list[str] | None = None) -> None:
        super().__init__()
        self.primary_port = primary_port
        self.tls = tls or []

    def start(self, timeout: float = 10) -> None:
        ports = (
            ["--port", "0", "--tls-port", str(self.port)]
            if self.tls
            else ["--port", str(self.port)]
        )
        args = [
            self.executable,
            *ports,
            *self.tls,
            "--bind", "127.0.0.1",
            "--dir", str(self.dir),
            "--save", "",
            "--appendonly", "no",
            "--logfile", str(self.log),
        ]  # fmt: skip
        if self.primary_port is not None:
            args += ["--replicaof", "127.0.0.1", str(self.primary_port)]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float = 10) -> None:
        if not self.tls:
            super().wait_ready(timeout)
            return
        deadline = time.monotonic() + timeout
        while True:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"redis-server exited: {self.tail()}")
            client = _client(self.port, self.tls, socket_timeout=1)
            try:
                if client.ping():
                    return
            except Exception:
                pass
            finally:
                client.close()
            if time.monotonic() > deadline:
                raise AssertionError(f"redis-server: no PONG within {timeout} s: {self.tail()}")
            time.sleep(0.05)


@dataclass
class SentinelCluster:
    replicas: int = 1
    sentinels: int = 3
    quorum: int = 2
    # Every server and Sentinel speaks TLS only (certificates made at start: ca_file).
    tls: bool = False
    primary: RedisServer = field(init=False)
    copies: list[RedisServer] = field(init=False, default_factory=list)
    sentinel_ports: list[int] = field(init=False, default_factory=list)
    _procs: list[subprocess.Popen[bytes]] = field(init=False, default_factory=list)
    # The replicas cut_replicas stopped (SIGCONT once the primary is killed).
    _cut: list[subprocess.Popen[bytes]] = field(init=False, default_factory=list)
    _dir: Path = field(init=False)

    def __post_init__(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="caramba-sentinel-"))
        self._tls: list[str] = []
        self.ca_file: Path | None = None
        if self.tls:
            from tests.integration.redis_tls import make_certificates

            self.ca_file, cert, key = make_certificates(self._dir)
            self._tls = [
                "--tls-cert-file", str(cert),
                "--tls-key-file", str(key),
                "--tls-ca-cert-file", str(self.ca_file),
                "--tls-auth-clients", "no",
                "--tls-replication", "yes",
            ]  # fmt: skip
        self.primary: RedisServer = _Server(tls=self._tls)

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{p}" for p in self.sentinel_ports)
        return f"redis+sentinel://{hosts}/{SERVICE}/0"

    def start(self, timeout: float = 20) -> None:
        self.primary.start()
        for _ in range(self.replicas):
            copy = _Server(self.primary.port, tls=self._tls)
            copy.start()
            self.copies.append(copy)
        for i in range(self.sentinels):
            port = free_port()
            conf = self._dir / f"sentinel-{i}.conf"
            # (each "--name value" pair of the servers' TLS arguments as a config line)
            pairs = zip(self._tls[::2], self._tls[1::2], strict=True)
            tls = "".join(f"{name[2:]} {value}\n" for name, value in pairs)
            listen = f"port 0\ntls-port {port}\n{tls}" if self.tls else f"port {port}\n"
            conf.write_text(
                f"{listen}bind 127.0.0.1\ndir {self._dir}\n"
                f"logfile {self._dir / f'sentinel-{i}.log'}\n"
                f"sentinel monitor {SERVICE} 127.0.0.1 {self.primary.port} {self.quorum}\n"
                f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n"
                f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}\n"
                f"sentinel parallel-syncs {SERVICE} 1\n"
            )
            proc = subprocess.Popen(
                [self.primary.executable, str(conf), "--sentinel"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.STDOUT,
            )
            self._procs.append(proc)
            self.sentinel_ports.append(port)
        self._wait_known(timeout)

    def _wait_known(self, timeout: float) -> None:
        """Until the replicas are in sync, and each Sentinel sees them and the others."""
        deadline = time.monotonic() + timeout
        primary = _client(self.primary.port, self._tls, decode_responses=True)
        try:
            while _online(primary.info("replication")) < self.replicas:
                if time.monotonic() > deadline:
                    raise AssertionError(f"replicas not in sync: {self.primary.tail()}")
                time.sleep(0.05)
        finally:
            primary.close()
        for port in self.sentinel_ports:
            client = _client(port, self._tls, socket_timeout=1, decode_responses=True)
            try:
                while True:
                    try:
                        info: Any = client.sentinel_master(SERVICE)
                        known = int(info.get("num-slaves", 0)) >= self.replicas and (
                            int(info.get("num-other-sentinels", 0)) >= self.sentinels - 1
                        )
                    except Exception:
                        known = False
                    if known:
                        break
                    if time.monotonic() > deadline:
                        raise AssertionError(f"sentinel {port}: not ready: {self.tail()}")
                    time.sleep(0.1)
            finally:
                client.close()

    def primary_address(self) -> tuple[str, int] | None:
        """The primary the Sentinels name (the first that answers)."""
        for port in self.sentinel_ports:
            client = _client(port, self._tls, socket_timeout=1, decode_responses=True)
            try:
                found: Any = client.sentinel_get_master_addr_by_name(SERVICE)
                if found:
                    return str(found[0]), int(found[1])
            except Exception:
                continue
            finally:
                client.close()
        return None

    def kill_primary(self) -> None:
        self.primary.stop(signal.SIGKILL)

    def kill_primary_losing(self, seconds: float) -> None:
        """SIGKILL the primary after ``seconds`` of writes that no replica received: the
        replicas are stopped (SIGSTOP) and cut off (``CLIENT KILL TYPE replica``) first and
        go on once the primary is dead, so the one promoted lacks those writes — what a
        failover can lose when ``redis.replicas_to_ack`` is 0 (docs/redis.md)."""
        self.cut_replicas()
        time.sleep(seconds)
        self.kill_cut_primary()

    def cut_replicas(self) -> None:
        """Stop the replicas (SIGSTOP) and cut them off (``CLIENT KILL TYPE replica``):
        from now on writes reach the primary only, until :meth:`kill_cut_primary` — a test
        makes the writes it wants lost in between, with no time to guess."""
        for copy in self.copies:
            if copy.proc is not None:
                copy.proc.send_signal(signal.SIGSTOP)
                self._cut.append(copy.proc)
        client = _client(self.primary.port, self._tls, socket_timeout=2)
        try:
            client.client_kill_filter(_type="replica")
        finally:
            client.close()

    def kill_cut_primary(self) -> None:
        """SIGKILL the primary, then let the replicas :meth:`cut_replicas` stopped go on:
        the one the Sentinels promote lacks every write made since the cut."""
        self.kill_primary()
        for proc in self._cut:
            proc.send_signal(signal.SIGCONT)
        self._cut.clear()

    def switch_over(self) -> None:
        """A failover asked of the Sentinels (``SENTINEL FAILOVER``): the primary lives on
        and is made a replica of the new one; its clients' writes get READONLY."""
        client = _client(self.sentinel_ports[0], self._tls, socket_timeout=2)
        try:
            client.execute_command("SENTINEL", "FAILOVER", SERVICE)
        finally:
            client.close()

    def wait_for_failover(
        self, timeout: float = 30, old: tuple[str, int] | None = None
    ) -> tuple[str, int]:
        """Until the Sentinels name a primary other than ``old`` (the first one) and it
        answers as a primary."""
        old = old or ("127.0.0.1", self.primary.port)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.primary_address()
            if found is not None and found != old:
                client = _client(found[1], self._tls, socket_timeout=1)
                try:
                    if client.info("replication").get("role") == "master":
                        return found
                except Exception:
                    pass
                finally:
                    client.close()
            time.sleep(0.05)
        raise AssertionError(f"no failover within {timeout} s: {self.tail()}")

    def tail(self, lines: int = 15) -> str:
        out = []
        for log in sorted(self._dir.glob("sentinel-*.log")):
            out.append(f"--- {log.name}\n" + "\n".join(log.read_text().splitlines()[-lines:]))
        return "\n".join(out)

    def cleanup(self) -> None:
        for proc in self._cut:  # stopped processes do not handle SIGTERM
            proc.send_signal(signal.SIGCONT)
        for proc in self._procs:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)
        for server in (self.primary, *self.copies):
            server.cleanup()
        shutil.rmtree(self._dir, ignore_errors=True)


def _online(replication: dict[str, object]) -> int:
    """The replicas in sync with a primary (INFO replication's slaveN entries)."""
    return sum(
        1
        for key, value in replication.items()
        if key.startswith("slave") and isinstance(value, dict) and value.get("state") == "online"
    )


def _client(port: int, tls: list[str], **options: Any) -> Redis:
    """An admin client of a server or Sentinel on loopback (over TLS when ``tls``)."""
    if tls:
        ca = tls[tls.index("--tls-ca-cert-file") + 1]
        options.update(ssl=True, ssl_ca_certs=ca)
    return Redis(host="127.0.0.1", port=port, **options)
