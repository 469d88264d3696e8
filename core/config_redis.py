"""The ``[redis]`` settings: where Redis is (one server or the primary a set of Sentinels
watch), TLS, the pool and time-outs, replicas to wait for; the ACL user's name and the
passwords come only from the environment (:func:`refuse_password_in_file` turns a
password in config.toml away). Read by ``core.state.client``; the settings object that
holds them is :class:`core.config.Settings`."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from core.errors import ConfigError


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RedisSettings(_Section):
    url: str = ""
    key_prefix: str = "caramba"
    events_maxlen: int = Field(10000, ge=100)
    # Connections per process; a turn waits up to pool_timeout_s for a free one.
    max_connections: int = Field(64, ge=2, le=10_000)
    pool_timeout_s: float = Field(30.0, gt=0)
    # A command's own time-out (redis-py's socket_timeout); 0 = none, the default: redis-py
    # wraps every send of a timed client in asyncio.wait_for (10-15 % of its CPU). A dead
    # server or link is found by TCP instead, within dead_server_s (core/state/client.py).
    command_timeout_s: float = Field(0.0, ge=0)
    connect_timeout_s: float = Field(5.0, gt=0)
    dead_server_s: int = Field(30, ge=4, le=3600)
    # TLS: a rediss:// url (or rediss+sentinel://, or tls = true with sentinels). The CA
    # bundle that signed the server's certificate ("" = the system's), and a client
    # certificate and its key when the server asks for one (tls-auth-clients).
    tls: bool = False
    tls_ca_file: str = ""
    tls_cert_file: str = ""
    tls_key_file: str = ""
    # Sentinel: the Sentinels' "host:port" and the name of the primary they watch; the
    # same as url = "redis+sentinel://host:port,host:port/service_name/db".
    sentinels: tuple[str, ...] = ()
    service_name: str = ""
    # The Sentinels themselves spoken to over TLS too (same CA and client certificate).
    sentinel_tls: bool = False
    # Writes that must survive a failover (a turn's commit, a person's decision, an outbox
    # entry) wait until this many replicas have them (WAIT); 0 = off, no extra round trip.
    replicas_to_ack: int = Field(0, ge=0, le=16)
    replicas_ack_timeout_ms: int = Field(200, ge=1, le=60_000)
    # The turn's start and save scripts sent several per write on one connection of the
    # pool (core/state/piped.py); false: each through redis-py's own way, one round trip
    # and one pooled connection at a time (the kill switch, should a proxy in between
    # mishandle pipelined commands).
    pipe_scripts: bool = True

    @model_validator(mode="before")
    @classmethod
    def _sentinel_url(cls, data: Any) -> Any:
        """``sentinels`` + ``service_name`` written as the url they mean, so that one
        ``url`` says where Redis is for every reader of it."""
        if not isinstance(data, dict) or not data.get("sentinels"):
            return data
        url = str(data.get("url") or "")
        if url and "sentinel" not in url.split("://", 1)[0].lower():
            raise ValueError(
                "redis.sentinels and a redis.url of one server are both set: keep one "
                "(with Sentinel, url may be left empty)"
            )
        if url:
            return data
        if not data.get("service_name"):
            raise ValueError("redis.sentinels is set but redis.service_name is empty")
        hosts = data["sentinels"]
        if isinstance(hosts, str):
            hosts = [h for h in hosts.split(",") if h.strip()]
        scheme = "rediss+sentinel" if data.get("tls") else "redis+sentinel"
        url = f"{scheme}://{','.join(h.strip() for h in hosts)}/{data['service_name']}/0"
        return {**data, "url": url}

    @field_validator("url")
    @classmethod
    def _known_scheme(cls, url: str) -> str:
        scheme = url.split("://", 1)[0].lower() if "://" in url else ""
        if url and scheme not in _REDIS_SCHEMES:
            raise ValueError(
                f"redis.url must start with one of {', '.join(s + '://' for s in _REDIS_SCHEMES)}"
            )
        return url

    @property
    def embedded(self) -> bool:
        return not self.url

    def username(self) -> str | None:
        """The ACL user name, from ``CARAMBA_REDIS_USERNAME`` (None: the url's, or default)."""
        return os.environ.get("CARAMBA_REDIS_USERNAME") or None

    def password(self) -> str | None:
        """The password, from ``CARAMBA_REDIS_PASSWORD`` only (never a config file)."""
        return os.environ.get("CARAMBA_REDIS_PASSWORD") or None

    def sentinel_password(self) -> str | None:
        """The Sentinels' own password (``CARAMBA_REDIS_SENTINEL_PASSWORD``), if they ask."""
        return os.environ.get("CARAMBA_REDIS_SENTINEL_PASSWORD") or None


_REDIS_SCHEMES = (
    "redis",
    "rediss",
    "unix",
    "redis+sentinel",
    "rediss+sentinel",
    "sentinel",
)


def refuse_password_in_file(path: Path | None) -> None:
    """A password in config.toml's ``[redis] url`` is refused: config files get shared and
    committed. Raises ConfigError saying where to put it instead."""
    if path is None or not path.is_file():
        return
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return  # the settings loader reads it again and says what is wrong
    section = data.get("redis")
    url = section.get("url") if isinstance(section, dict) else None
    if not isinstance(url, str) or "@" not in url:
        return
    netloc = url.split("://", 1)[-1].split("/", 1)[0]
    credentials = netloc.rsplit("@", 1)[0] if "@" in netloc else ""
    if ":" in credentials:
        raise ConfigError(
            f"{path}: [redis] url holds a password; it is not read from a config file",
            hint="remove it from the url and set CARAMBA_REDIS_PASSWORD (and "
            "CARAMBA_REDIS_USERNAME for an ACL user) in the environment",
        )
