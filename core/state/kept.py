"""What a process keeps of its own turns' saves and starts, so that the next ones need not
read it back (bounded: the oldest goes first):

- the state each save wrote (with the save's token), or each new agent's as a save created
  it (``turn_start.CREATED``), by agent key: the agent's next turn, when it starts in this
  process (a chained or inline turn, most of them), is not sent it back nor parses it (what
  grows with the agent's thread). The start script sends it only if a save other than this
  one came since (the agent hash's ``commit_token``: every save of an agent's state goes
  through the save script, which writes it; a new agent's hash has none until then);
- the run's record, head and usage as its root's last turn start here read them, for the
  save that ends the run (``core.state.turn_cas``, guarded: ``core.state.run_guard``).

Part of the state room (``core.state``); :class:`core.state.turns.Turns` owns one. Calls
nothing."""

from __future__ import annotations

from typing import Any, NamedTuple

from core.types.agent import AgentState

# At most this many agents' states, and as many runs' records, are kept by a process.
MAX_KEPT = 256


class RunRead(NamedTuple):
    """The run's record, head and usage as read (by the root's turn start, or a read of
    the save that changes the run)."""

    record: str | None
    head: str | None
    usage: dict[str, str]


class Kept:
    """States and run reads this process keeps (see the module)."""

    def __init__(self) -> None:
        self._states: dict[str, tuple[str, AgentState]] = {}
        self._runs: dict[str, RunRead] = {}

    def hold(self, key: str, token: str, state: AgentState) -> None:
        _put(self._states, key, (token, state))

    def held(self, key: str, *, take: bool = False) -> tuple[str, AgentState] | None:
        """The token and state kept for agent ``key`` (taken out with ``take``: its next
        turn changes it from now on)."""
        return self._states.pop(key, None) if take else self._states.get(key)

    def keep_run(self, run_id: str, read: RunRead) -> None:
        _put(self._runs, run_id, read)

    def run_read(self, run_id: str) -> RunRead | None:
        """The run's record as kept (taken out: a save changing the run checks it still as
        read)."""
        return self._runs.pop(run_id, None)


def _put(kept: dict[str, Any], key: str, value: Any) -> None:
    """Keep ``value`` under ``key``, the oldest let go at :data:`MAX_KEPT`."""
    if len(kept) >= MAX_KEPT:
        del kept[next(iter(kept))]
    kept[key] = value
