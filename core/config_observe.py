"""The settings for seeing runs from outside: ``caramba web`` (``[web_ui]``) and
OpenTelemetry traces (``[telemetry]``)."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from core.errors import ConfigError, MissingSecretError

# The shortest signing key `caramba web` takes.
MIN_SECRET_CHARS = 32


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class WebUISettings(_Section):
    """``caramba web``: the run inspector (bots/web). Its signing secret comes only from
    the variable named by ``secret_env``."""

    # The address people reach the server at, for the links the chat threads carry
    # (https://caramba.example.com); "" = no links are made.
    base_url: str = ""
    host: str = "127.0.0.1"
    port: int = Field(8400, ge=1, le=65535)
    # The variable holding the key that signs the pages' tokens (32 characters or more).
    secret_env: str = "CARAMBA_WEB_SECRET"
    # A run's link works this long; an operator's link to the runs list this long.
    link_ttl_s: float = Field(7 * 86_400, gt=0)
    operator_ttl_s: float = Field(12 * 3600, gt=0)
    # The newest runs the runs list shows.
    runs_shown: int = Field(100, ge=1, le=10_000)
    # The largest lines of each table the spend page shows (the total counts them all).
    spend_lines_shown: int = Field(200, ge=1, le=10_000)
    # Host names the server answers to besides the loopback names and base_url's host
    # ("caramba.example.com", "*.example.com"; "*" = any, which gives up the DNS
    # rebinding guard). Any other Host header gets a 400.
    allowed_hosts: tuple[str, ...] = ()
    # The addresses of reverse proxies whose X-Forwarded-For/-Proto are believed
    # (uvicorn's forwarded_allow_ips); () = none. A request carrying proxy headers is
    # never "local": the runs list and the chat need an operator's link.
    forwarded_allow_ips: tuple[str, ...] = ()

    @property
    def configured(self) -> bool:
        return bool(self.base_url.strip())

    @property
    def host_names(self) -> tuple[str, ...]:
        """The Host names the server answers to: the loopback names, ``base_url``'s host
        and ``allowed_hosts`` (lower-case, without brackets or ports)."""
        names = ["127.0.0.1", "localhost", "::1"]
        if self.configured:
            names.append(urlsplit(self.base_url.strip()).hostname or "")
        names.extend(_without_port(h) for h in self.allowed_hosts)
        return tuple(dict.fromkeys(n for n in names if n))

    def trust(self) -> str:
        """What the server trusts, in one line (its start-up log, ``caramba doctor``)."""
        proxies = ", ".join(self.forwarded_allow_ips) or "none (X-Forwarded-* not believed)"
        return f"answers to Host {', '.join(self.host_names)}; proxies trusted: {proxies}"

    def signing_key(self) -> str:
        """The key from ``$secret_env``; ``MissingSecretError`` when it is not set,
        ``ConfigError`` when it is too short to be a key."""
        value = os.environ.get(self.secret_env)
        if not value:
            raise MissingSecretError(self.secret_env, "signing the links to `caramba web`'s pages")
        if len(value) < MIN_SECRET_CHARS:
            raise ConfigError(
                f"{self.secret_env} holds {len(value)} characters; a signing key needs "
                f"{MIN_SECRET_CHARS} or more",
                hint=f"export {self.secret_env}=$(openssl rand -hex 32)",
            )
        return value


def _without_port(host: str) -> str:
    """``Caramba.example.com:443`` → ``caramba.example.com``, ``[::1]:8400`` → ``::1``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    name, colon, port = host.partition(":")
    return name if colon and port.isdigit() and ":" not in port else host


class TelemetrySettings(_Section):
    """OpenTelemetry traces (core/telemetry): a span per run, agent, turn, model call and
    tool call, sent with OTLP over HTTP. Off unless ``enabled``."""

    enabled: bool = False
    # The OTLP/HTTP traces endpoint (http://127.0.0.1:4318/v1/traces); "" = the
    # exporter's own default and the standard OTEL_EXPORTER_OTLP_* variables.
    otlp_endpoint: str = ""
    service_name: str = "caramba"
    # Tool arguments and results and the model's text on the spans (they may hold
    # people's data): off by default.
    capture_content: bool = False
