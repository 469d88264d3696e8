"""The Redis client's type and the errors it raises, named for the rooms above the state
room so that they need not import ``redis`` (``core.process.wiring`` builds the client).

Part of the state room, the only room that speaks Redis commands (``core.state``)."""

from __future__ import annotations

from redis.asyncio import Redis
from redis.exceptions import ConnectionError as _ConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as _TimeoutError

# The asyncio client every state object works on (decode_responses=True).
Client = Redis

# Redis is restarting or unreachable: worth a one-line warning and a retry.
Unreachable = _ConnectionError
# Redis did not answer in time.
TimedOut = _TimeoutError
# Any error the client raised.
StateError = RedisError

__all__ = ["Client", "StateError", "TimedOut", "Unreachable"]
