"""What a failed model call was, whether another attempt can help, and when to make it.

Read from litellm 1.106.2's exceptions (pinned: the shapes below are its own):

* an HTTP error keeps the answer's headers on ``exc.litellm_response_headers`` (an
  ``httpx.Headers``; ``exc.response`` is rebuilt by litellm and has none), so ``Retry-After``
  and ``retry-after-ms`` are read there;
* a 200 whose body is not JSON surfaces as an ``InternalServerError`` ("500") with no response
  headers and a ``json.JSONDecodeError`` (holding the body) in its chain; a 200 whose body is
  text (an HTML page served as ``text/html``) or JSON that is not an object, as an
  ``InternalServerError`` saying "Empty or invalid response from LLM endpoint. Received:
  <repr of the body>"; a 200 object with no ``choices`` key, as one saying "provider returned
  'choices' that is not a list";
* a 200 with an empty ``choices`` list is returned as a response (see :func:`no_choices`);
* a refused connection or an unknown host, as an ``InternalServerError`` ("500") with the
  ``ConnectionRefusedError`` or ``socket.gaierror`` in its chain.

Such answers are reported as what they are, not as "HTTP 500", and retried only when that can
help.
"""

from __future__ import annotations

import ast
import asyncio
import json
import re
import socket
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

_TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
_SNIPPET = 200
_INVALID = re.compile(
    r"Empty or invalid response from LLM endpoint\. Received: (.*)\. "
    r"Check the reverse proxy or model server configuration\.",
    re.DOTALL,
)
_NO_CHOICES_KEY = "provider returned 'choices' that is not a list"
# How the openai client and servers say there is no key, or no such model.
_NO_KEY = ("missing credentials", "api_key client option must be set", "no api key provided")
_NO_MODEL = re.compile(
    r"model\b[^.\n]{0,80}?\b(?:not found|does not exist)|model_not_found|llm provider not provided"
)


class CallFailure(Exception):
    """One failed attempt, classified.

    ``retry``: another attempt of this call may help; ``max_attempts``: a cap on the attempts
    this kind of failure deserves (None: ``llm.max_attempts``); ``wait_s``: what the server
    asked to wait before the next one (None: the backoff); ``transient``: a later call may
    succeed (becomes ``LLMError.retryable``); ``setup``: the failure is the setup's
    (``no_key``, ``bad_key``, ``unknown_model``, ``no_server``), said as a
    :class:`core.errors.LLMSetupError`; ``address``: the host it could not reach.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry: bool = False,
        transient: bool = False,
        max_attempts: int | None = None,
        wait_s: float | None = None,
        setup: str = "",
        address: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retry = retry
        self.transient = transient
        self.max_attempts = max_attempts
        self.wait_s = wait_s
        self.setup = setup
        self.address = address
        self.attempts = 0  # set by core.llm.policy.with_retries as the call gives up


def classify(exc: BaseException, litellm: Any, retry_after_max_s: float) -> CallFailure:
    """What ``exc`` (raised by one ``litellm.acompletion`` attempt) means for the call."""
    if isinstance(exc, CallFailure):
        return exc
    bad = _bad_answer(exc) or no_connection(exc)
    if bad is not None:
        return bad
    status = _status(exc)
    kind = setup_kind(exc, litellm, status)
    if kind:
        # What the server said, without litellm's prefixes ("litellm.NotFoundError: …
        # OpenAIException - "), for the one line.
        said = str(exc).rsplit("Exception - ", 1)[-1]
        return CallFailure(_clip(said, 160), status=status, setup=kind)
    transient = _transient(exc, litellm, status)
    wait_s = retry_after_s(exc) if transient else None
    if wait_s is not None and wait_s > retry_after_max_s:
        return CallFailure(
            f"{type(exc).__name__}: the provider asked to wait {_secs(wait_s)} s, more than "
            f"llm.retry_after_max_s = {_secs(retry_after_max_s)}; raise it or try later "
            f"({short(exc, _SNIPPET)})",
            status=status,
            transient=True,
        )
    return CallFailure(
        f"{type(exc).__name__}: {short(exc)}",
        status=status,
        retry=transient,
        transient=transient,
        wait_s=wait_s,
    )


def setup_kind(exc: BaseException, lm: Any, status: int | None) -> str:
    """``no_key``, ``bad_key`` or ``unknown_model`` when no retry can help, else ""."""
    text = " ".join(str(e) for e in _chain(exc)).lower()
    if any(m in text for m in _NO_KEY):
        return "no_key"
    if status in (401, 403) or isinstance(exc, lm.AuthenticationError | lm.PermissionDeniedError):
        return "bad_key"
    if status == 404 or isinstance(exc, lm.NotFoundError) or _NO_MODEL.search(text):
        return "unknown_model"
    return ""


def no_choices(response: Any) -> CallFailure | None:
    """A 200 completion with an empty ``choices`` list: worth one more attempt, no more."""
    return None if getattr(response, "choices", None) else empty_choices()


def empty_choices() -> CallFailure:
    return CallFailure(
        "the model server answered 200 with no choices (an empty `choices` list), not a "
        "completion: the provider may have filtered the answer, or llm.api_base is not a "
        "chat-completions endpoint",
        retry=True,
        transient=True,
        max_attempts=2,
    )


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms``, else ``Retry-After``), if it did."""
    for source in (
        getattr(exc, "litellm_response_headers", None),
        getattr(getattr(exc, "response", None), "headers", None),
        getattr(exc, "headers", None),
    ):
        headers = _lower(source)
        millis = _number(headers.get("retry-after-ms"))
        if millis is not None:
            return millis / 1000
        value = headers.get("retry-after")
        seconds = _number(value)
        if seconds is not None:
            return seconds
        if value:
            try:
                when = parsedate_to_datetime(value)
            except (TypeError, ValueError):
                continue
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            return max(0.0, (when - datetime.now(UTC)).total_seconds())
    return None


def short(exc: BaseException, limit: int = 300) -> str:
    return _clip(str(exc), limit)


# -- internals ------------------------------------------------------------------------------


def _bad_answer(exc: BaseException) -> CallFailure | None:
    """A 200 answer that is not a completion, or None when ``exc`` is something else."""
    if getattr(exc, "litellm_response_headers", None) is not None:
        return None  # a real HTTP error status (its headers came back): not a bad 200
    chain = list(_chain(exc))
    decode = next((e for e in chain if isinstance(e, json.JSONDecodeError)), None)
    if decode is not None:
        return unusable_body(decode.doc, json_ok=False)
    for e in chain:
        found = _INVALID.search(str(e))
        if found is not None:
            try:
                body = ast.literal_eval(found.group(1))
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                body = found.group(1)
            return unusable_body(body if isinstance(body, str) else repr(body), json_ok=True)
        if _NO_CHOICES_KEY in str(e):
            return no_choices_list()
    return None


def no_choices_list() -> CallFailure:
    """A 200 JSON object with no ``choices`` list: worth one more attempt, no more."""
    return CallFailure(
        "the model server answered 200 with JSON that has no `choices` list, not a "
        "completion: check llm.api_base",
        retry=True,
        transient=True,
        max_attempts=2,
    )


def no_connection(exc: BaseException) -> CallFailure | None:
    """Refused or unresolvable (litellm says "InternalServerError"): a setup error, ``no_server``;
    a refused connection is tried once more (a server restarting), an unknown host is not."""
    if getattr(exc, "litellm_response_headers", None) is not None:
        return None
    chain = list(_chain(exc))
    cause = next(
        (e for e in chain if isinstance(e, ConnectionRefusedError | socket.gaierror)), None
    )
    if cause is None:
        return None
    where = next(
        (f" at {e.host}:{e.port}" for e in chain if isinstance(getattr(e, "host", None), str)), ""
    )
    refused = isinstance(cause, ConnectionRefusedError)
    return CallFailure(
        f"could not connect to the model server{where} ({cause}): check llm.api_base and that "
        "the server is running",
        retry=refused,
        max_attempts=2,
        setup="no_server",
        address=where.removeprefix(" at "),
    )


def unusable_body(body: str, *, json_ok: bool) -> CallFailure:
    head = body.lstrip()[:1000].lower()
    if not body.strip():
        what = "an empty body"
    elif head.startswith(("<!doctype html", "<html")) or "<html" in head or "<body" in head:
        what = "an HTML page"
    elif json_ok and head.startswith(("[", "{", '"')):
        what = "JSON that is not an object"
    else:
        what = "a body that is not JSON"
    snippet = f" (first {_SNIPPET} chars: {_clip(body, _SNIPPET)})" if body.strip() else ""
    return CallFailure(
        f"the model server answered 200 with {what}, not a completion: check llm.api_base{snippet}"
    )


def _transient(exc: BaseException, lm: Any, status: int | None) -> bool:
    if isinstance(
        exc,
        asyncio.TimeoutError
        | lm.Timeout
        | lm.APIConnectionError
        | lm.RateLimitError
        | lm.InternalServerError
        | lm.ServiceUnavailableError
        | lm.BadGatewayError,
    ):
        return True
    return status in _TRANSIENT_STATUS


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _chain(exc: BaseException) -> Any:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _lower(headers: Any) -> dict[str, str]:
    try:
        return {str(k).lower(): str(v) for k, v in headers.items()}
    except AttributeError:
        return {}


def _number(value: str | None) -> float | None:
    try:
        number = float(value) if value is not None else None
    except ValueError:
        return None
    return max(0.0, number) if number is not None and number == number else None


def _secs(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"
