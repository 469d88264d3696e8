"""The script that saves a turn without a run change in one round trip: the commands a
pipeline recorded, run atomically only if the agent's seq is still the one the turn read
(``Store.commit_turn``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# A turn's save without a run change, in one round trip: if the agent's seq is still
# ARGV[1], run the recorded commands (ARGV: count, command, args, count, …) atomically.
# Like MULTI/EXEC, a command that fails does not stop the others; the first error is
# returned. (The keys are not all declared: a single Redis, not a cluster.)
COMMIT_SCRIPT = """
local seq = redis.call('HGET', KEYS[1], 'seq')
if (not seq) or tonumber(seq) ~= tonumber(ARGV[1]) then return 0 end
local err = nil
local i = 2
local n = #ARGV
while i <= n do
  local count = tonumber(ARGV[i])
  local reply = redis.pcall(unpack(ARGV, i + 1, i + count))
  if type(reply) == 'table' and reply.err and not err then err = reply.err end
  i = i + count + 1
end
if err then return redis.error_reply(err) end
return 1
"""


def script_args(expected_seq: int, command_stack: Iterable[tuple[Any, Any]]) -> list[Any]:
    """ARGV for :data:`COMMIT_SCRIPT`: the seq, then each recorded command as its word
    count and words."""
    argv: list[Any] = [expected_seq]
    for args, _options in command_stack:
        # redis-py names some commands in one string ("XGROUP CREATE"); Redis wants words.
        command = [*str(args[0]).split(), *args[1:]]
        argv.append(len(command))
        argv.extend(command)
    return argv
