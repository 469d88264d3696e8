"""Commands a pipeline recorded, run by a script after a check of its own, in one round
trip: a compare-and-set without WATCH (a WATCH, a read and MULTI/EXEC are three).

- :data:`UPDATE_SCRIPT` runs them if a key still holds what was read (the run's head, whose
  ``rev`` is new with every write of its record: ``core.state.run_guard``);
- :data:`CREATE_SCRIPT` runs them if none of the keys exists (new agents).

Like MULTI/EXEC, a command that fails does not stop the others; the first error is
returned. Part of the state room (``core.state``): the scripts and their arguments; the
store (``core.state.run_update``) and ``core.state.agents`` send them. Calls nothing."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core.state.run_guard import GUARD_LUA

# ARGV from index i: each command as its word count and words.
_RUN_LUA = """
local function run_from(i)
  local err = nil
  while i <= #ARGV do
    local count = tonumber(ARGV[i])
    local reply = redis.pcall(unpack(ARGV, i + 1, i + count))
    if type(reply) == 'table' and reply.err and not err then err = reply.err end
    i = i + count + 1
  end
  if err then return redis.error_reply(err) end
  return 1
end
"""

# KEYS[1] the key checked. ARGV[1] what it held ('' for nothing), then the commands.
# Reply: 1 run, 0 the key moved (nothing written).
UPDATE_SCRIPT = (
    GUARD_LUA
    + _RUN_LUA
    + """
if run_moved({KEYS[1], ARGV[1]}) then return 0 end
return run_from(2)
"""
)

# KEYS: the keys that must not exist. ARGV: the commands. Reply: 1 run, 0 one exists.
CREATE_SCRIPT = (
    _RUN_LUA
    + """
for _, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then return 0 end
end
return run_from(1)
"""
)


def recorded_args(command_stack: Iterable[tuple[Any, Any]]) -> list[Any]:
    """The recorded commands as ARGV: each as its word count and words."""
    argv: list[Any] = []
    for args, _options in command_stack:
        # redis-py names some commands in one string ("XGROUP CREATE"); Redis wants words.
        command = [*str(args[0]).split(), *args[1:]]
        argv.append(len(command))
        argv.extend(command)
    return argv
