"""A save's state, staged before its script: the agent's state (its thread: tens of KB,
hundreds for an agent that reads web pages) is not an argument of the save script
(``core.state.turn_script``). A string passed into a script costs Redis about 1.4 µs per
KB on a slow core, where a plain SET of it costs next to nothing (an EVALSHA of ``return
0`` with one 25 KB argument: 40 µs against 6; a SET of those 25 KB: 1.2 µs). The save
sends a SET of the state to a key of the attempt's own just before its script, on the
same connection and in the same write (``core.state.piped``); the script renames it to
the agent's state key (``Keys.agent_state``) once the save applies, drops it otherwise,
and refuses to apply without it. Should the script never run (its connection lost
between the two), the staged key expires.

Part of the state room (``core.state``); calls nothing."""

from __future__ import annotations

from typing import Any

from core.state.records import state_text
from core.types.agent import AgentState

# How long a save's staged state outlives a save script that never ran (ms).
STAGED_MS = 120_000


def stage(agent_key: str, token: str, state: AgentState) -> tuple[str, tuple[Any, ...]]:
    """The key the state a save writes is staged in (``agent_key``: the agent's hash;
    ``token``: the save attempt's) and the SET that stages it."""
    key = f"{agent_key}:staged:{token}"
    return key, ("SET", key, state_text(state), "PX", STAGED_MS)
