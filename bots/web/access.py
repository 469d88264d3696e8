"""Who may see what: signed, expiring tokens, and the links that carry them (made and
checked with ``bots.chat.links``).

A token says what it opens — one run (``run:<id>``) or everything (``operator``) — and
until when, signed with HMAC-SHA256 under the key in ``$CARAMBA_WEB_SECRET`` (the variable
``[web_ui] secret_env`` names). The token travels in the page's address (``?t=…``): chat
threads link to ``{base_url}/runs/<id>?t=…`` and the browser's live updates and downloads
reuse it. Pages are sent with ``Referrer-Policy: no-referrer`` so it never leaks onward.
"""

from __future__ import annotations

from bots.chat.links import OPERATOR, Signer, run_link, run_path, run_scope, signer
from core.config import Settings

# The signing and the thread's link live in the chat layer (every adapter's relay makes
# the link); the web app checks tokens with the same Signer.
__all__ = [
    "OPERATOR",
    "Signer",
    "operator_link",
    "run_link",
    "run_path",
    "run_scope",
    "signer",
]


def operator_link(
    settings: Settings, base_url: str | None = None, sign: Signer | None = None
) -> str:
    """A link to the runs list that works for ``operator_ttl_s``, signed by ``sign``
    (default the configured key; raises when it is missing); ``base_url`` defaults to
    ``[web_ui] base_url``."""
    web = settings.web_ui
    base = (base_url or web.base_url or f"http://{web.host}:{web.port}").rstrip("/")
    return f"{base}/?t={(sign or signer(settings)).token(OPERATOR, web.operator_ttl_s)}"
