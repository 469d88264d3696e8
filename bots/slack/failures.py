"""What a failed Slack Web API call means for the outbox: try again later (Slack was
unreachable, overloaded or rate-limiting), or never (Slack refused the call itself)."""

from __future__ import annotations

import aiohttp
from slack_sdk.errors import SlackApiError, SlackRequestError

from bots.chat.ports import Failure

# ``ok: false`` errors worth another try (Slack's own trouble, not the call's). Not
# ``fatal_error``: Slack says part of the call may have been done, so it is not repeated.
TRANSIENT_ERRORS = frozenset(
    {"internal_error", "service_unavailable", "request_timeout", "ratelimited", "timeout"}
)


def classify(exc: BaseException) -> Failure:
    """What ``exc``, raised by a Web API call (or an upload), means for the outbox."""
    why = f"{type(exc).__name__}: {exc}"[:300]
    if isinstance(exc, SlackApiError):
        response = exc.response
        status = response.status_code
        data = response.data if isinstance(response.data, dict) else {}
        error = data.get("error") or f"HTTP {status}"
        if status == 429:
            wait = _seconds((response.headers or {}).get("Retry-After"))
            return Failure(retry=True, wait_s=wait, why=f"rate limited ({error})")
        if status >= 500 or status == 408 or error in TRANSIENT_ERRORS:
            return Failure(retry=True, why=str(error))
        return Failure(retry=False, why=str(error))
    if isinstance(exc, SlackRequestError):
        # files_upload_v2: the upload URL answered with an error status.
        return Failure(retry=True, why=why)
    if isinstance(exc, aiohttp.ClientResponseError):
        return Failure(retry=exc.status >= 500 or exc.status in (408, 429), why=why)
    if isinstance(exc, aiohttp.ClientError | TimeoutError | OSError):
        # Refused, reset, DNS, TLS, timed out: Slack is out of reach, not refusing.
        return Failure(retry=True, answered=False, why=why)
    # Anything else is a mistake of the call (or of this code): trying again won't help.
    return Failure(retry=False, why=why)


def _seconds(value: str | None) -> float:
    try:
        return max(0.0, float(value)) if value is not None else 1.0
    except ValueError:
        return 1.0
