"""The script that saves a turn without a run change in one round trip: the commands a
pipeline recorded, run atomically only if the agent's seq is still the one the turn read
(``Store.commit_turn``).

Part of the state room (``core.state``): the script's text and its arguments; the turns
module (``core.state.turns``) sends it. Calls nothing."""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum
from typing import Any


class Commit(IntEnum):
    """What a turn's save came to (the script's reply)."""

    # Not applied: the agent's seq moved on (another delivery of the turn saved first).
    STALE = 0
    SAVED = 1
    # Applied by this very attempt, whose reply was lost: redis-py sent it again (a Redis
    # restart, a time-out) and the second run found its own save. Counts as saved.
    SAVED_BEFORE = 2

    @property
    def saved(self) -> bool:
        return self is not Commit.STALE


# A turn's save without a run change, in one round trip: if the agent's seq is still
# ARGV[1], run the recorded commands (ARGV: count, command, args, count, …) atomically and
# keep this attempt's token ARGV[2] in the agent's hash; if seq moved on but the token kept
# is this attempt's, this attempt saved already (its reply was lost): say so (2).
# Like MULTI/EXEC, a command that fails does not stop the others; the first error is
# returned. (The keys are not all declared: a single Redis, not a cluster.)
COMMIT_SCRIPT = """
local seq = redis.call('HGET', KEYS[1], 'seq')
if (not seq) or tonumber(seq) ~= tonumber(ARGV[1]) then
  if redis.call('HGET', KEYS[1], 'commit_token') == ARGV[2] then return 2 end
  return 0
end
local err = nil
local i = 3
local n = #ARGV
while i <= n do
  local count = tonumber(ARGV[i])
  local reply = redis.pcall(unpack(ARGV, i + 1, i + count))
  if type(reply) == 'table' and reply.err and not err then err = reply.err end
  i = i + count + 1
end
redis.call('HSET', KEYS[1], 'commit_token', ARGV[2])
if err then return redis.error_reply(err) end
return 1
"""

# The agent hash's field holding the token of the attempt that saved its last turn.
TOKEN_FIELD = "commit_token"


def script_args(
    expected_seq: int, token: str, command_stack: Iterable[tuple[Any, Any]]
) -> list[Any]:
    """ARGV for :data:`COMMIT_SCRIPT`: the seq, the attempt's token, then each recorded
    command as its word count and words."""
    argv: list[Any] = [expected_seq, token]
    for args, _options in command_stack:
        # redis-py names some commands in one string ("XGROUP CREATE"); Redis wants words.
        command = [*str(args[0]).split(), *args[1:]]
        argv.append(len(command))
        argv.extend(command)
    return argv
