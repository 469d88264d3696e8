"""The guard of a save that changes the run's record (``core.state.turn_cas``): the change
was computed from the record (and, for the totals a run's end reports, the run's usage) as
read earlier — by the root's turn start or by a read of its own — so the save script
applies it only if they are still as read. The record is compared by its head: every write
of the record writes the head anew with a new ``rev`` (``core.state.records.set_run``), so
the head as read is the record as read; the usage by its three fields. Otherwise the script
writes nothing and answers ``Commit.MOVED``: the caller reads them again and recomputes the
change. The guarantee a WATCH on the run gave, in the save's one round trip.

Part of the state room (``core.state``): the Lua the save script includes
(``core.state.turn_script``) and its arguments. Calls nothing."""

from __future__ import annotations

from collections.abc import Mapping

# ``run_moved(g)``: g = {} (no guard), {head key, head} or {head key, head, usage key, its
# three fields}; what was not there is ''.
GUARD_LUA = """
local function run_moved(g)
  if #g == 0 then return false end
  if (redis.call('GET', g[1]) or '') ~= g[2] then return true end
  if not g[3] then return false end
  local u = redis.call('HMGET', g[3], 'prompt_tokens', 'completion_tokens', 'cost_usd')
  return (u[1] or '') ~= g[4] or (u[2] or '') ~= g[5] or (u[3] or '') ~= g[6]
end
"""

# The usage hash's fields (``core.state.turns``: what a save adds to them).
_USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "cost_usd")


def checked(
    run_key: str, head_key: str, record: str | None, head: str | None
) -> tuple[str, str | None]:
    """The key a guard compares and what it held: the run's head, or the record itself for
    a run with no head (recorded before heads existed)."""
    return (head_key, head) if head is not None else (run_key, record)


def guard_args(
    key: str,
    held: str | None,
    usage: tuple[str, Mapping[str, str]] | None = None,
) -> list[str]:
    """The save script's ``guard`` list: the run's head as read (``held`` at ``key``; the
    record itself for a run with no head) and, with ``usage`` (its key and fields as read),
    the run's usage too."""
    guard = [key, held or ""]
    if usage is not None:
        guard += [usage[0], *(usage[1].get(field, "") for field in _USAGE_FIELDS)]
    return guard
