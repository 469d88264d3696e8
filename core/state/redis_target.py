"""Where a process's Redis is: one primary (``redis://``, ``rediss://``) or the primary a
set of Sentinels names (``redis+sentinel://h:p,h:p/service/db``, kombu's
``sentinel://h:p;sentinel://h:p``), with TLS and an ACL user whose name and password
come from the environment — :func:`target` reads the settings into a :class:`Target`,
the ``*_options`` functions give redis-py's keywords for its security.

Part of the state room (``core.state``); ``core.state.client`` builds the clients."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from core.config_redis import RedisSettings
from core.errors import ConfigError

_SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel", "sentinel")
# A Sentinel asked where the primary is answers within this (a dead one is skipped).
_SENTINEL_TIMEOUT_S = 1.0


@dataclass(frozen=True)
class Target:
    """Where a process's Redis is, as the settings say: ``sentinels`` empty for a direct
    ``url``; TLS on or off; the ACL user (from the environment, or the url's)."""

    url: str
    sentinels: tuple[tuple[str, int], ...]
    service_name: str
    db: int
    tls: bool
    username: str | None

    def describe(self) -> str:
        """Which Redis in words: the url (password hidden), TLS, the user, the Sentinel
        service; never a password."""
        user = f"user {self.username or 'default'}"
        tls = "TLS on" if self.tls else "TLS off"
        service = f"Sentinel service '{self.service_name}', " if self.sentinels else ""
        return f"{shown(self.url)} ({service}{tls}, {user})"


def target(settings: RedisSettings) -> Target:
    """Parse ``redis.url`` (and ``sentinels``/``service_name``); raises ConfigError."""
    url = settings.url
    scheme = url.split("://", 1)[0].lower()
    username = settings.username()
    if scheme not in _SENTINEL_SCHEMES:
        parts = urlsplit(url)
        db = _db(parts.path.lstrip("/")) if scheme != "unix" else 0
        tls = scheme == "rediss" or settings.tls
        return Target(url, (), "", db, tls, username or parts.username or None)
    if scheme == "sentinel":  # kombu's: sentinel://h:p;sentinel://h:p[/db]
        addresses = [u.split("://", 1)[-1] for u in url.split(";") if u.strip()]
        service, db_text = settings.service_name, ""
        if "/" in addresses[-1]:
            addresses[-1], db_text = addresses[-1].split("/", 1)
        tls = settings.tls
    else:  # redis+sentinel://[user@]h:p,h:p/service[/db]
        rest = url.split("://", 1)[1]
        netloc, _, path = rest.partition("/")
        if "@" in netloc:
            user, netloc = netloc.rsplit("@", 1)
            username = username or user.split(":", 1)[0] or None
        addresses = netloc.split(",")
        service, _, db_text = path.partition("/")
        service = service or settings.service_name
        tls = scheme == "rediss+sentinel" or settings.tls
    if not service:
        raise ConfigError(
            f"redis.url names Sentinels ({shown(url)}) but no service",
            hint='set redis.service_name (the name the Sentinels watch, "mymaster" in '
            "sentinel.conf) or write it in the url: redis+sentinel://host:port/NAME/0",
        )
    hosts = tuple(_host_port(a.split("@")[-1], 26379) for a in addresses if a.strip())
    return Target(url, hosts, service, _db(db_text.strip("/")), tls, username)


def _host_port(text: str, default_port: int) -> tuple[str, int]:
    host, _, port = text.strip().rpartition(":") if ":" in text else (text.strip(), "", "")
    try:
        return host, int(port) if port else default_port
    except ValueError as exc:
        raise ConfigError(
            f"redis: '{text}' is not a host:port", hint='write Sentinels as "host:26379"'
        ) from exc


def _db(text: str) -> int:
    try:
        return int(text) if text else 0
    except ValueError as exc:
        raise ConfigError(f"redis.url: '{text}' is not a database number") from exc


def shown(url: str) -> str:
    """``url`` with any password hidden."""
    head, sep, rest = url.partition("://")
    netloc, slash, path = rest.partition("/")
    if "@" not in netloc:
        return url
    credentials, host = netloc.rsplit("@", 1)
    user = credentials.split(":", 1)[0]
    hidden = f"{user}:***" if ":" in credentials else user
    return f"{head}{sep}{hidden}@{host}{slash}{path}"


def security_options(settings: RedisSettings, where: Target) -> dict[str, Any]:
    """redis-py's keywords for the ACL user and TLS: the password only from the
    environment (a url's, given in ``CARAMBA_REDIS__URL``, is kept when none is set)."""
    options: dict[str, Any] = {}
    if where.username:
        options["username"] = where.username
    if settings.password():
        options["password"] = settings.password()
    if where.tls:
        options.update(tls_options(settings))
    return options


def tls_options(settings: RedisSettings) -> dict[str, Any]:
    """The certificate keywords (redis-py's and kombu's ``broker_use_ssl`` alike)."""
    options: dict[str, Any] = {"ssl_cert_reqs": "required"}
    for key, path in (
        ("ssl_ca_certs", settings.tls_ca_file),
        ("ssl_certfile", settings.tls_cert_file),
        ("ssl_keyfile", settings.tls_key_file),
    ):
        if path:
            if not os.path.isfile(path):
                raise ConfigError(
                    f"redis: the TLS file {path} does not exist",
                    hint="set redis.tls_ca_file / tls_cert_file / tls_key_file to readable files",
                )
            options[key] = path
    return options


def sentinel_options(settings: RedisSettings) -> dict[str, Any]:
    """How the Sentinels themselves are spoken to (their own password, TLS, a short
    time-out so a dead one is skipped)."""
    options: dict[str, Any] = {
        "socket_timeout": _SENTINEL_TIMEOUT_S,
        "socket_connect_timeout": _SENTINEL_TIMEOUT_S,
    }
    if settings.sentinel_password():
        options["password"] = settings.sentinel_password()
    if settings.sentinel_tls:
        options["ssl"] = True
        options.update(tls_options(settings))
    return options


def direct_url(where: Target) -> str:
    """A direct target's url, ``rediss://`` when TLS is on."""
    if where.tls and where.url.startswith("redis://"):
        return "rediss://" + where.url[len("redis://") :]
    return where.url
