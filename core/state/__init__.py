"""The state room: the only room that speaks Redis commands.

Rooms above (agent, tools, runs, effects, process, tasks, the bots) call the methods of
its modules, named by concept — the store (runs and agents, ``store.py``) and what it
owns (``event_log``, ``turns``, ``timers``, ``intents``, ``watchdog``, ``keeper``), the
bus, the library's store, the workspace's files, the turn ledger… — never the Redis
client; every key is named in ``keys.py``; a write that touches several keys is one
MULTI/EXEC or one Lua script. Its modules may call the Redis client, ``core.types``,
``core.errors`` and ``core.config``, and each other; nothing above them
(``tests/unit/test_redis_room.py`` and an import-linter contract keep it so)."""
