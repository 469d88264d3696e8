"""A redis-server of a test's own that speaks TLS only (``--port 0``), with a CA and a
server certificate made at test time, and an ACL user restricted to Caramba's key prefix
and the commands of docs/redis-acl.md (kept here as :data:`COMMANDS`)."""

from __future__ import annotations

import datetime
import ipaddress
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.integration.processes import free_port

# Every command Caramba sends (its own calls, its Lua scripts' calls, redis-py's
# connection set-up, Celery/kombu's broker), as docs/redis-acl.md lists them.
COMMANDS = (
    # connection set-up (redis-py: HELLO with AUTH, SELECT for a db other than 0)
    "hello auth select ping"
    # strings, keys
    " get set mget del rename exists expire pexpire pttl ttl"
    # hashes
    " hget hset hsetnx hdel hgetall hmget hincrby hincrbyfloat hkeys hvals hlen hexists"
    # lists (kombu's queues, the chat outbox)
    " lpush rpush lpop lindex llen lrem brpop"
    # sets
    " sadd srem smembers sismember scard srandmember"
    # sorted sets (timers, the turn ledger, kombu's unacked index)
    " zadd zrem zrange zrangebyscore zrevrangebyscore zrevrange zscore zcard zscan"
    # streams (the bus, events, intents, the keeper's calls)
    " xadd xack xdel xautoclaim xclaim xgroup|create xgroup|delconsumer xinfo|groups"
    " xinfo|consumers xlen xrange xrevrange xread xreadgroup"
    # transactions and scripts
    " multi exec discard watch unwatch eval evalsha script|load script|exists time"
    # pub/sub (the keeper's replies)
    " publish subscribe unsubscribe"
    # the library's scan of its entries; WAIT after writes that must survive a failover
    " scan wait"
).split()


def acl_rule(prefix: str, password: str) -> list[str]:
    """``ACL SETUSER <user>`` arguments: only ``prefix``'s keys and channels, only
    :data:`COMMANDS` (Celery's remote control is off, ``celery.remote_control``: no
    pidbox channel)."""
    return [
        "on",
        f">{password}",
        "resetkeys",
        f"~{prefix}:*",
        "resetchannels",
        f"&{prefix}:*",
        "-@all",
        *(f"+{c}" for c in COMMANDS),
    ]


def make_certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A CA, and a certificate for 127.0.0.1 signed by it; (ca, cert, key) files."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Caramba test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    ca_file, cert_file, key_file = folder / "ca.pem", folder / "redis.pem", folder / "redis.key"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return ca_file, cert_file, key_file


class TLSRedis:
    """redis-server on a free port, TLS only, with ``default`` (admin, password
    ``admin_password``) and ``user`` (Caramba's ACL user, :func:`acl_rule`)."""

    def __init__(self, user: str, password: str, prefix: str = "caramba") -> None:
        self.user, self.password, self.prefix = user, password, prefix
        self.admin_password = "admin-" + password
        self.dir = Path(tempfile.mkdtemp(prefix="caramba-redis-tls-"))
        self.ca, self.cert, self.key = make_certificates(self.dir)
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"rediss://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        users = self.dir / "users.acl"
        rule = " ".join(acl_rule(self.prefix, self.password))
        users.write_text(
            f"user default on >{self.admin_password} ~* &* +@all\nuser {self.user} {rule}\n"
        )
        args = [
            shutil.which("redis-server") or "redis-server",
            "--port", "0",
            "--tls-port", str(self.port),
            "--bind", "127.0.0.1",
            "--tls-cert-file", str(self.cert),
            "--tls-key-file", str(self.key),
            "--tls-ca-cert-file", str(self.ca),
            "--tls-auth-clients", "no",
            "--aclfile", str(users),
            "--acllog-max-len", "1000",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self.dir),
            "--logfile", str(self.dir / "redis.log"),
        ]  # fmt: skip
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while True:
            try:
                if self.admin().ping():
                    return
            except Exception:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    log = (self.dir / "redis.log").read_text(errors="replace")
                    raise AssertionError(f"redis-server with TLS did not start:\n{log}") from None
                time.sleep(0.05)

    def admin(self, **options: Any) -> Any:
        """A synchronous client as the admin (``default``), over TLS."""
        from redis import Redis

        return Redis(
            host="127.0.0.1",
            port=self.port,
            password=self.admin_password,
            ssl=True,
            ssl_ca_certs=str(self.ca),
            decode_responses=True,
            socket_timeout=5,
            **options,
        )

    def cleanup(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)
