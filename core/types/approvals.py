"""A tool call waiting for a person's approval, and what they decided.

The request (:class:`ApprovalRequest`) holds what approvers are shown — the tool in plain
words, its arguments with secrets masked, the agent's reason — never the raw arguments:
those stay in the agent's thread, where the call runs from once approved."""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from core.types._base import Frozen, now

MASK = "••••"
# Words that make an argument's (or a URL query parameter's) name a secret's.
_SECRET_WORDS = frozenset(
    "password passwd passphrase pwd secret secrets token tokens apikey auth authorization "
    "credential credentials cookie cookies session sessionid sig signature bearer otp pin".split()
)
_SECRET_PAIRS = ("api_key", "private_key", "access_key", "client_secret", "secret_key")
_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
# Values that look like secrets whatever their name: bearer tokens and well-known key shapes.
_SECRET_VALUE = re.compile(
    r"(Bearer\s+\S+|\bsk-[A-Za-z0-9_-]{8,}|\bxox[abprs]-[A-Za-z0-9-]{8,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{16,}|\bAKIA[0-9A-Z]{16}\b"
    r"|\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*)"
)
_QUERY_PAIR = re.compile(r"([?&;])([^=&#\s]+)=([^&#\s]*)")
_URL_USER = re.compile(r"(://[^/@\s:]+:)([^/@\s]+)(@)")


def secret_name(name: str) -> bool:
    """Whether an argument named ``name`` holds a secret (``apiKey``, ``X-Auth-Token``,
    ``client_secret``; not ``author`` nor ``design``)."""
    lowered = name.lower().replace("-", "_")
    if any(pair in lowered for pair in _SECRET_PAIRS):
        return True
    return any(w.lower() in _SECRET_WORDS for w in _WORD.findall(name))


def _query_pair(m: re.Match[str]) -> str:
    if secret_name(m.group(2)) and m.group(3):
        return f"{m.group(1)}{m.group(2)}={MASK}"
    return m.group(0)


def mask_text(text: str) -> str:
    """``text`` with the secrets it shows masked: a URL's password and secret query
    values, bearer tokens and well-known key shapes."""
    text = _URL_USER.sub(lambda m: m.group(1) + MASK + m.group(3), text)
    text = _QUERY_PAIR.sub(_query_pair, text)
    return _SECRET_VALUE.sub(MASK, text)


def _masked(value: Any, name: str = "") -> Any:
    if name and secret_name(name) and isinstance(value, str | int | float):
        return MASK
    if isinstance(value, dict):
        return {k: _masked(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v, name) for v in value]
    if isinstance(value, str):
        return mask_text(value)
    return value


def shown_arguments(arguments: str, limit: int) -> str:
    """A call's arguments (JSON, as the model wrote them) as approvers see them: secrets
    masked, pretty, cut to ``limit`` characters."""
    try:
        decoded = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        text = mask_text(arguments)
    else:
        text = json.dumps(_masked(decoded), ensure_ascii=False, indent=1)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# once: this call; run: this call and the tool's later calls in the run; deny: not run.
Choice = Literal["once", "run", "deny"]


class ApprovalRequest(Frozen):
    """Agent ``agent_id`` (``agent_name``) asked to call ``tool`` (its ``call_id`` in the
    agent's thread) and waits for a person until ``deadline``."""

    id: str
    run_id: str
    agent_id: str
    agent_name: str
    call_id: str
    tool: str
    # The tool in plain words (its first sentence) and what it may touch.
    purpose: str
    risks: tuple[str, ...] = ()
    # The call's arguments as approvers see them: secrets masked, cut to a length.
    arguments: str
    # Why the agent makes the call, in its own words ("" when it said nothing).
    reason: str = ""
    asked_at: float
    deadline: float


class ApprovalDecision(Frozen):
    """What became of a request: a person's ``choice`` (``by``: their id, ``name``: how
    people read them; ``note``: a denial's reason), or ``expired`` (nobody decided in
    time: the call was not run)."""

    choice: Choice | Literal["expired"]
    by: str = ""
    name: str = ""
    note: str = ""
    at: float = 0.0

    @classmethod
    def expired(cls) -> ApprovalDecision:
        return cls(choice="expired", at=now())

    @property
    def approved(self) -> bool:
        return self.choice in ("once", "run")

    def said(self) -> str:
        """The decision in plain words, naming who decided: ``Denied by Alice: too wide``."""
        name = self.name or "someone"
        if self.choice == "once":
            return f"Approved once by {name}"
        if self.choice == "run":
            return f"Approved for this run by {name}"
        if self.choice == "deny":
            return f"Denied by {name}" + (f": {self.note}" if self.note else "")
        return "Nobody decided in time"
