"""Which tool calls need a person's approval before they run (``[tools.approval]``), which
tools the direct path may offer without any, and how a waiting call is shown to people.

A call asks when its tool is named, or its category or MCP server is, or when what the
server says of it matches a switched-on rule (destructive, open-world, not read-only);
``never`` wins over all of them. The direct path (the router's "direct", the UI agent
answering with no card) offers only tools that are read-only, closed-world (no internet,
no outside system) and ask nobody. Pure: no I/O (``core.agent.approvals`` does the wait).
"""

from __future__ import annotations

import json
import re
from typing import Any

from core.config_tools import ToolApprovalSettings
from core.tools.registry import Tool

MASK = "••••"
# Argument names whose values are secrets, wherever they appear (JSON keys, a URL's query).
_SECRET_NAME = re.compile(
    r"(pass(word|wd|phrase)?|secret|token|api[_-]?key|apikey|auth|credential|private[_-]?key"
    r"|cookie|session|signature|sig)",
    re.IGNORECASE,
)
# Values that look like secrets whatever their name: bearer tokens and well-known key shapes.
_SECRET_VALUE = re.compile(
    r"(Bearer\s+\S+|\bsk-[A-Za-z0-9_-]{8,}|\bxox[abprs]-[A-Za-z0-9-]{8,}|\bgh[pousr]_[A-Za-z0-9]{16,}"
    r"|\bAKIA[0-9A-Z]{16}\b|\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*)"
)
_QUERY_SECRET = re.compile(
    r"([?&;][^=&#\s]*?(?:" + _SECRET_NAME.pattern + r")[^=&#\s]*=)([^&#\s]+)", re.IGNORECASE
)
_URL_USER = re.compile(r"(://[^/@\s:]+:)([^/@\s]+)(@)")


def needs_approval(policy: ToolApprovalSettings, t: Tool) -> bool:
    """Whether every call of ``t`` waits for a person (a grant for the run aside)."""
    if t.name in policy.never:
        return False
    if t.name in policy.tools or t.category in policy.categories:
        return True
    if t.server and t.server in policy.servers:
        return True
    if policy.destructive and t.destructive:
        return True
    if policy.open_world and (t.open_world or t.network):
        return True
    return policy.not_read_only and not t.read_only


def direct_safe(policy: ToolApprovalSettings, t: Tool) -> bool:
    """Whether the direct path (no card, nobody approved anything) may offer ``t``:
    read-only, closed-world, and asking nobody."""
    if not t.read_only or t.open_world or t.network:
        return False
    return not needs_approval(policy, t)


def mask_text(text: str) -> str:
    """``text`` with the secrets it shows masked: a URL's password and secret query
    values, bearer tokens and well-known key shapes."""
    text = _URL_USER.sub(lambda m: m.group(1) + MASK + m.group(3), text)
    text = _QUERY_SECRET.sub(lambda m: m.group(1) + MASK, text)
    return _SECRET_VALUE.sub(MASK, text)


def _masked(value: Any, name: str = "") -> Any:
    if name and _SECRET_NAME.search(name) and isinstance(value, str | int | float):
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


def asks_words(policy: ToolApprovalSettings, t: Tool) -> str:
    """What the card adds to a tool that asks: ``asks a person before each call``."""
    return "asks a person before each call" if needs_approval(policy, t) else ""
