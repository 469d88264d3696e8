"""Who may talk to ``caramba web`` at all, by name rather than by socket: the Host header
of every request must name an allowed host (``[web_ui] allowed_hosts``, the loopback
names and ``base_url``'s host), every form or other state-changing request must come from
a page of this site (Origin, else Sec-Fetch-Site, else Referer), and only a direct
loopback request naming a loopback host counts as local (open without a token).

The Host check is what stops DNS rebinding: the attacker's page reaches 127.0.0.1 but its
requests carry the attacker's name. Starlette's ``TrustedHostMiddleware`` does the same
matching but answers "Invalid host header" without saying what to change, and cuts
``[::1]:8400`` at the first colon; this one says which setting to set.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse

from core.config_observe import WebUISettings

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
LOOPBACK_PEERS = frozenset({"127.0.0.1", "::1", "::ffff:127.0.0.1"})
# A request carrying any of these came through a proxy: never local, whatever its peer.
PROXY_HEADERS = (
    "forwarded",
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-proto",
    "x-real-ip",
)
UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_SAME_SITE = frozenset({"same-origin", "none"})


def host_name(netloc: str) -> str:
    """The name in a Host header or an origin's netloc, lower-case, without its port
    (``[::1]:8400`` → ``::1``)."""
    netloc = netloc.strip().lower()
    if netloc.startswith("["):
        return netloc[1:].partition("]")[0]
    if netloc.count(":") > 1:  # a bare IPv6 address: no port
        return netloc
    name, _, port = netloc.rpartition(":")
    return name if name and port.isdigit() else netloc


def allowed_hosts(web: WebUISettings) -> tuple[str, ...]:
    """The host names the server answers to (``*.example.com`` matches its subdomains,
    ``*`` anything)."""
    return web.host_names


def host_allowed(netloc: str, allowed: Iterable[str]) -> bool:
    name = host_name(netloc)
    if not name:
        return False
    for pattern in allowed:
        if pattern == "*" or name == pattern:
            return True
        if pattern.startswith("*.") and name.endswith(pattern[1:]):
            return True
    return False


def same_site(headers: Headers) -> bool:
    """Whether a state-changing request comes from this site's own pages: its Origin
    names the host it was sent to; without one (or ``Origin: null``, which a
    ``no-referrer`` page's forms send) the browser's Sec-Fetch-Site says same-origin,
    else the Referer names this host. No such header at all: not a browser (curl, a
    script), which no other site can drive."""
    forwarded = headers.get("x-forwarded-host", "").split(",")
    here = {h.strip().lower() for h in [headers.get("host", ""), *forwarded]} - {""}
    origin = headers.get("origin")
    site = headers.get("sec-fetch-site")
    if site is not None and site not in _SAME_SITE:
        return False
    if origin is not None and origin != "null":
        return urlsplit(origin).netloc.lower() in here
    if site is not None:
        return True
    if origin == "null":
        return False
    referer = headers.get("referer")
    return referer is None or urlsplit(referer).netloc.lower() in here


def is_local(scope: Any) -> bool:
    """A direct request from this machine naming it: a loopback peer, a loopback Host
    and no proxy's headers (a reverse proxy on this host connects from loopback too)."""
    client = scope.get("client")
    headers = Headers(scope=scope)
    return (
        client is not None
        and client[0] in LOOPBACK_PEERS
        and host_allowed(headers.get("host", ""), LOOPBACK_NAMES)
        and not any(h in headers for h in PROXY_HEADERS)
    )


def bad_host(netloc: str) -> str:
    name = host_name(netloc) or "(none)"
    return (
        f"This server does not answer to the host name {name}.\n\n"
        f"If you reach Caramba at {name}, add it to [web_ui] allowed_hosts in config.toml "
        f'(allowed_hosts = ["{name}"]) or set CARAMBA_WEB_UI__ALLOWED_HOSTS=\'["{name}"]\', '
        "then restart caramba web. If you did not expect this name, a page may be trying "
        "to reach your Caramba through DNS rebinding: nothing was done.\n"
    )


NEEDS_OPERATOR = (
    "This page needs an operator's link (caramba web prints one when it starts; it ends "
    "in ?t=...). Without one it opens only for a request straight from this machine to "
    "127.0.0.1 or localhost: not through a proxy, not under another host name, and only "
    "when caramba web listens on 127.0.0.1.\n"
)
FOREIGN_FORM = (
    "Forms and changes are taken from this site's own pages only: this request came from "
    "another site (its Origin, Sec-Fetch-Site or Referer), so nothing was done.\n\n"
    "If you reach Caramba under another name, open it at that name, and add the name to "
    "[web_ui] allowed_hosts (or CARAMBA_WEB_UI__ALLOWED_HOSTS).\n"
)


class HostGuard:
    """ASGI middleware: 400 for a Host (or X-Forwarded-Host) not allowed, 403 for a
    state-changing request from another site."""

    def __init__(self, app: Any, allowed: Sequence[str]) -> None:
        self.app = app
        self.allowed = tuple(allowed)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        # A chain of proxies lists every name it was asked for: each must be allowed.
        names = [headers.get("host", ""), *headers.get("x-forwarded-host", "").split(",")]
        for i, name in enumerate(names):
            if (i == 0 or name.strip()) and not host_allowed(name, self.allowed):
                await PlainTextResponse(bad_host(name), 400)(scope, receive, send)
                return
        if scope["method"] in UNSAFE and not same_site(headers):
            await PlainTextResponse(FOREIGN_FORM, 403)(scope, receive, send)
            return
        await self.app(scope, receive, send)
