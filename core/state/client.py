"""The Redis client's type, how its connections are made, and the errors it raises,
named for the rooms above the state room so that they need not import ``redis``
(``core.process.wiring`` builds the client).

Part of the state room, the only room that speaks Redis commands (``core.state``)."""

from __future__ import annotations

import socket
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ConnectionError as _ConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as _TimeoutError

from core.config_sections import RedisSettings

# The asyncio client every state object works on (decode_responses=True).
Client = Redis

# Redis is restarting or unreachable: worth a one-line warning and a retry.
Unreachable = _ConnectionError
# Redis did not answer in time.
TimedOut = _TimeoutError
# Any error the client raised.
StateError = RedisError

_PROBES = 4


def connection_options(settings: RedisSettings) -> dict[str, Any]:
    """redis-py's connection keywords for the process's client.

    No ``socket_timeout`` by default (``redis.command_timeout_s = 0``): redis-py's default
    (5 s) wraps every send in ``asyncio.wait_for`` and every read in a timer, 10-15 % of
    the client's CPU on a turn's round trips. What a time-out is for, a server or link
    that died without closing the connection, is left to TCP, at no cost per command:

    - keepalive probes on an idle connection (one in a blocking read too: XREAD/BRPOP
      carry their own BLOCK time-out, which the server keeps) after ``dead_server_s / 3``
      of silence, ``_PROBES`` of them, to close it by ``dead_server_s``;
    - ``TCP_USER_TIMEOUT`` on a command whose bytes the server's host never acknowledged
      (it is gone, or the link is), closing the connection after ``dead_server_s``.

    Either way the command fails with ``Unreachable`` and the pool's retry takes a new
    connection (a restarted server is reached at once: its host resets the old ones). A
    live server that stopped answering (SIGSTOP, a hung host whose kernel still acks) is
    waited for rather than abandoned. A PING health check is not used: its read would have
    no time-out either.
    """
    dead = settings.dead_server_s
    idle = max(1, dead // 3)
    probes = {
        "TCP_KEEPIDLE": idle,
        "TCP_KEEPINTVL": max(1, (dead - idle) // _PROBES),
        "TCP_KEEPCNT": _PROBES,
        "TCP_USER_TIMEOUT": dead * 1000,  # milliseconds (Linux)
    }
    return {
        "socket_timeout": settings.command_timeout_s or None,
        "socket_connect_timeout": settings.connect_timeout_s,
        "socket_keepalive": True,
        "socket_keepalive_options": {
            getattr(socket, name): value
            for name, value in probes.items()
            if hasattr(socket, name)  # only what the platform has
        },
    }


__all__ = ["Client", "StateError", "TimedOut", "Unreachable", "connection_options"]
