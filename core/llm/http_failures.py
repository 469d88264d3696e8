"""What a failed attempt of the direct OpenAI-compatible client was, read from the HTTP status,
the answer's body and headers, or aiohttp's exception: the same :class:`CallFailure` (and so the
same errors and messages) the litellm gateway gives, with no litellm import.

Owns that classification; calls :mod:`core.llm.failures` only.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
from pydantic_core import from_json

from core.llm import failures
from core.llm.failures import CallFailure

# The names litellm gives these statuses, so a message reads the same through either client.
_NAMES = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    408: "Timeout",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
    500: "InternalServerError",
    502: "BadGatewayError",
    503: "ServiceUnavailableError",
}

_KINDS: dict[int, type[_HTTPError]] = {}


def from_status(status: int, text: str, headers: Any, retry_after_max_s: float) -> CallFailure:
    """An HTTP error answer (``status`` ≥ 400) with its body ``text``."""
    said = _said(text)
    kind = _KINDS.get(status) or type(_NAMES.get(status, "APIError"), (_HTTPError,), {})
    _KINDS[status] = kind
    exc = kind(said, status, headers)
    return failures.classify(exc, _NoLiteLLM, retry_after_max_s)


def from_exception(exc: BaseException) -> CallFailure:
    """A connection that failed or timed out (no HTTP answer)."""
    if isinstance(exc, CallFailure):
        return exc
    refused = failures.no_connection(exc)
    if refused is not None:
        return refused
    if isinstance(exc, asyncio.TimeoutError | aiohttp.ServerTimeoutError):
        return CallFailure(
            f"Timeout: {failures.short(exc) or 'no answer in time'}", retry=True, transient=True
        )
    return CallFailure(
        f"APIConnectionError: {failures.short(exc) or type(exc).__name__}",
        retry=True,
        transient=True,
    )


def from_body(raw: bytes | str) -> dict[str, Any] | CallFailure:
    """A 200 answer's body (its bytes, read as UTF-8 as JSON is): the completion, or what
    it was instead."""
    try:
        body = parse_json(raw)
    except ValueError:
        return failures.unusable_body(as_text(raw), json_ok=False)
    if not isinstance(body, dict):
        return failures.unusable_body(as_text(raw), json_ok=True)
    if not isinstance(body.get("choices"), list):
        return failures.no_choices_list()
    return body if body["choices"] else failures.empty_choices()


def parse_json(text: bytes | str) -> Any:
    """``json.loads(text)``, parsed by pydantic-core (in Rust, a third of the CPU); what
    it refuses (a lone surrogate escape, say) is read by ``json.loads``, so the outcome,
    a value or a ``ValueError``, is the stdlib's."""
    try:
        return from_json(text)
    except ValueError:
        return json.loads(text)


def as_text(raw: bytes | str) -> str:
    """An answer's body as text for a message (what is not UTF-8 replaced, not refused)."""
    return raw if isinstance(raw, str) else raw.decode("utf-8", "replace")


class _HTTPError(Exception):
    def __init__(self, message: str, status: int, headers: Any) -> None:
        super().__init__(message)
        self.status_code = status
        self.litellm_response_headers = headers  # where failures.retry_after_s reads them


class _Never(Exception):
    """Matches nothing: the litellm classes failures.classify checks are not in this path."""


class _NoLiteLLM:
    AuthenticationError = PermissionDeniedError = NotFoundError = _Never
    Timeout = APIConnectionError = RateLimitError = InternalServerError = _Never
    ServiceUnavailableError = BadGatewayError = _Never


def _said(text: str) -> str:
    """The server's own message (OpenAI's ``{"error": {"message": …}}``), else the body."""
    try:
        body = json.loads(text)
    except ValueError:
        return text
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return text
