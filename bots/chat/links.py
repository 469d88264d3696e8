"""Signed, expiring links to a run's inspector page, for any chat thread to carry.

A token says what it opens — one run (``run:<id>``) or everything (``operator``) — and
until when, signed with HMAC-SHA256 under the key in ``$CARAMBA_WEB_SECRET`` (the variable
``[web_ui] secret_env`` names). The token travels in the page's address (``?t=…``): chat
threads link to ``{base_url}/runs/<id>?t=…`` (:func:`run_link`), and ``caramba web``
(``bots.web.access``) checks it with the same :class:`Signer`. Here, below the adapters,
so that every chat platform's relay can make the link without importing the web app.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from urllib.parse import quote

from core.config import Settings
from core.errors import ConfigError

OPERATOR = "operator"
_CONTEXT = b"caramba-web-token.v1."


def run_scope(run_id: str) -> str:
    return f"run:{run_id}"


@dataclass(frozen=True)
class Signer:
    """Makes and checks tokens under one key."""

    key: bytes

    def token(self, scope: str, ttl_s: float, now: float | None = None) -> str:
        expires = int((now if now is not None else time.time()) + ttl_s)
        payload = _b64(json.dumps({"s": scope, "e": expires}, separators=(",", ":")).encode())
        return f"{payload}.{self._sign(payload)}"

    def scope(self, token: str, now: float | None = None) -> str | None:
        """What a valid, unexpired token opens; None for any other token."""
        payload, dot, signature = token.partition(".")
        if not dot or not hmac.compare_digest(signature, self._sign(payload)):
            return None
        try:
            claims = json.loads(_unb64(payload))
            scope, expires = str(claims["s"]), int(claims["e"])
        except (ValueError, KeyError, TypeError):
            return None
        return scope if expires > (now if now is not None else time.time()) else None

    def opens_run(self, token: str | None, run_id: str) -> bool:
        """Whether ``token`` opens the page of ``run_id`` (its own token, or an operator's)."""
        scope = self.scope(token) if token else None
        return scope in (run_scope(run_id), OPERATOR)

    def is_operator(self, token: str | None) -> bool:
        return bool(token) and self.scope(token or "") == OPERATOR

    def _sign(self, payload: str) -> str:
        digest = hmac.new(self.key, _CONTEXT + payload.encode(), hashlib.sha256).digest()
        return _b64(digest)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def signer(settings: Settings) -> Signer:
    """The signer for these settings; ``MissingSecretError`` or ``ConfigError`` when the
    variable is missing or too short to be a key."""
    return Signer(settings.web_ui.signing_key().encode())


def run_path(signer: Signer, run_id: str, ttl_s: float) -> str:
    """The path of a run's page with a token that opens it for ``ttl_s``."""
    return f"/runs/{quote(run_id, safe='')}?t={signer.token(run_scope(run_id), ttl_s)}"


def run_link(settings: Settings, run_id: str) -> str | None:
    """The inspector link of ``run_id`` for a chat thread or a card — ``[web_ui] base_url``
    + ``/runs/<id>?t=<token>``, working for ``link_ttl_s`` — or None when there is no
    ``base_url`` or no valid signing key (nothing to link to)."""
    web = settings.web_ui
    if not web.configured or not run_id:
        return None
    try:
        sign = signer(settings)
    except ConfigError:
        return None
    return web.base_url.rstrip("/") + run_path(sign, run_id, web.link_ttl_s)
