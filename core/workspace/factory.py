"""Which workspace store a process uses."""

from __future__ import annotations

from core.config import Settings
from core.state.client import Client
from core.state.keys import Keys
from core.workspace.base import Workspace, WorkspaceCaps
from core.workspace.local_store import LocalWorkspace
from core.workspace.redis_store import RedisWorkspace


def open_workspace(settings: Settings, redis: Client) -> Workspace:
    """Redis whenever ``redis.url`` is set (or ``workspace.backend = "redis"``), else the
    local folder ``workspace.dir``."""
    ws = settings.workspace
    caps = WorkspaceCaps.from_settings(ws)
    use_redis = ws.backend == "redis" or (ws.backend == "auto" and not settings.redis.embedded)
    if use_redis:
        return RedisWorkspace(redis, Keys(settings.redis.key_prefix), caps, ws.ttl_s)
    return LocalWorkspace(settings.workspace_dir, caps)
