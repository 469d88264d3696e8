"""Redis belongs to the state room: outside ``core/state/`` (and the chat layer's own
store, ``bots/chat/store.py``), no module of core/, bots/ or tasks/ touches the Redis
client, imports ``redis`` or builds a key name with an f-string (``bots/chat/keys.py``
names the chat store's keys). ``core/process/wiring.py``
builds the client and ``tasks/app.py`` the broker's URL: they may name it.

Read from the source (AST), so a module that is never imported in the tests is checked
too. The import side is also an import-linter contract (pyproject.toml)."""

from __future__ import annotations

import ast
import re

from core.config import PROJECT_ROOT

ALLOWED_DIRS = ("core/state/",)
# The chat layer keeps its own small store, its keys named in its own keys module.
ALLOWED_FILES = {
    "bots/chat/store.py",
    "bots/chat/store_outbox.py",
    "bots/chat/keys.py",
    "core/process/wiring.py",
    "tasks/app.py",
}

# Files that still offend while the other rooms move onto the state room's methods
# (issue 24, session #2): each is moved by the helper named, then taken off this list.
# The list only shrinks: a file not on it that offends fails the test, and so does a
# file on it that no longer offends (take it off).
PENDING: dict[str, str] = {}

# redis-py's command methods (and the pipeline's), as called on a client or a pipeline.
COMMANDS = frozenset(
    """append blpop brpop dbsize decr decrby delete eval evalsha execute exists expire
    expireat get getdel getex getset hdel hexists hget hgetall hincrby hincrbyfloat hkeys
    hlen hmget hmset hscan_iter hset hsetnx hvals incr incrby incrbyfloat info keys lindex
    llen lpop lpush lrange lrem ltrim mget mset multi persist pexpire ping pipeline psetex
    pttl publish pubsub register_script rename rpop rpush sadd scan scan_iter scard
    script_load set setex setnx sismember smembers smismember spop srandmember srem sscan_iter
    time ttl type unlink unwatch watch xack xadd xautoclaim xclaim xdel xgroup_create
    xgroup_delconsumer xgroup_destroy xinfo_consumers xinfo_groups xinfo_stream xlen
    xpending xpending_range xrange xread xreadgroup xrevrange xtrim zadd zcard zcount
    zincrby zrange zrangebyscore zrem zremrangebyscore zrevrange zscan_iter zscore""".split()
)
# A receiver that is a Redis client or pipeline, by its name.
CLIENT = re.compile(r"(^|[._])(redis|_redis|pipe|pipeline)$")
# ``settings.redis`` is the configuration's [redis] table, not the client.
SETTINGS = re.compile(r"(^|[._])settings$")
# A key name built in place: ``f"{prefix}:…"``, ``f"{self.prefix}:…"``, ``f"{key}:lock"``.
KEYISH = re.compile(r"(prefix|key)$", re.IGNORECASE)


def _offences(source: str) -> list[str]:
    tree = ast.parse(source)
    found: list[str] = []
    for node in ast.walk(tree):
        where = f"{node.lineno}" if hasattr(node, "lineno") else "?"
        if isinstance(node, ast.Import):
            found += [f"{where}: import {a.name}" for a in node.names if _is_redis(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _is_redis(node.module):
            found.append(f"{where}: from {node.module} import …")
        elif isinstance(node, ast.Attribute) and node.attr in ("redis", "_redis"):
            if not SETTINGS.search(ast.unparse(node.value)):
                found.append(f"{where}: {ast.unparse(node)}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in COMMANDS
            and CLIENT.search(ast.unparse(node.func.value))
        ):
            found.append(f"{where}: {ast.unparse(node.func)}(…)")
        elif isinstance(node, ast.JoinedStr) and _keyish(node):
            found.append(f"{where}: {ast.unparse(node)}")
    return found


def _is_redis(module: str | None) -> bool:
    top = (module or "").split(".")[0]
    return top in ("redis", "fakeredis")


def _keyish(node: ast.JoinedStr) -> bool:
    parts = node.values
    if len(parts) < 2 or not isinstance(parts[0], ast.FormattedValue):
        return False
    follow = parts[1]
    if not (isinstance(follow, ast.Constant) and isinstance(follow.value, str)):
        return False
    text = follow.value
    head = ast.unparse(parts[0].value)
    return text.startswith(":") and not text[1:2].isspace() and bool(KEYISH.search(head))


def _scanned() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for package in ("core", "bots", "tasks"):
        for path in sorted((PROJECT_ROOT / package).rglob("*.py")):
            name = path.relative_to(PROJECT_ROOT).as_posix()
            if name.startswith(ALLOWED_DIRS) or name in ALLOWED_FILES:
                continue
            offences = _offences(path.read_text("utf-8"))
            if offences:
                out[name] = offences
    return out


def test_only_the_state_room_speaks_redis() -> None:
    offending = _scanned()
    new = {name: lines for name, lines in offending.items() if name not in PENDING}
    assert new == {}, "call a core.state method instead (and name the key in keys.py)"


def test_the_pending_list_only_names_files_that_still_offend() -> None:
    offending = _scanned()
    done = sorted(name for name in PENDING if name not in offending)
    assert done == [], "these no longer touch Redis: take them off PENDING"


def test_the_contract_sees_what_it_forbids() -> None:
    sample = """
import redis
from redis.asyncio import Redis
async def f(svc, settings, pipe):
    await svc.redis.get("k")
    pipe.hset("h", "f", "v")
    key = f"{settings.redis.key_prefix}:runs"
    url = settings.redis.url
    text = f"{name}: {value}"
"""
    offences = _offences(sample)
    lines = sorted(int(o.split(":", 1)[0]) for o in offences)
    assert lines == [2, 3, 5, 5, 6, 7], offences
