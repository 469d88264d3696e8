"""``caramba web``: the run inspector's process (uvicorn serving :mod:`bots.web.app`)."""

from __future__ import annotations

import logging
import secrets

import uvicorn
from redis.asyncio import Redis

from bots.web.access import Signer, operator_link, signer
from bots.web.app import Inspector, create_app, secured
from bots.web.live import Live
from core.config import Settings
from core.errors import ConfigError
from core.process.wiring import connect_redis
from core.state.keys import Keys
from core.state.store import Store
from core.workspace import open_workspace

log = logging.getLogger(__name__)
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


def inspector_for(settings: Settings, redis: Redis, *, local: bool, sign: Signer) -> Inspector:
    """What the app reads with: the store and workspace of ``redis``, one live feed."""
    store = Store(redis, Keys(settings.redis.key_prefix), settings.redis.events_maxlen)
    return Inspector(
        settings=settings,
        store=store,
        workspace=open_workspace(settings, redis),
        signer=sign,
        live=Live(store, blocking=not settings.redis.embedded),
        open_list=local,
    )


def local_signer(settings: Settings, host: str) -> Signer:
    """The configured signer; on a loopback address without a key, a key of this process
    (its links stop working when it stops). Elsewhere a missing key is an error."""
    try:
        return signer(settings)
    except ConfigError:
        if host not in LOOPBACK:
            raise
        log.warning(
            "%s is not set: links signed by this process work until it stops",
            settings.web_ui.secret_env,
        )
        return Signer(secrets.token_bytes(32))


async def run_web(settings: Settings, host: str | None = None, port: int | None = None) -> None:
    """Serve the inspector until SIGTERM or SIGINT, on ``host``:``port`` (default
    ``[web_ui] host`` and ``port``). The runs list is open on a loopback address and needs
    an operator's link (:func:`bots.web.access.operator_link`) anywhere else; run pages
    always need their run's link (:func:`bots.web.access.run_link`)."""
    host = host or settings.web_ui.host
    port = port or settings.web_ui.port
    local = host in LOOPBACK
    sign = local_signer(settings, host)
    if settings.redis.embedded:
        log.warning(
            "redis.url is not set: the inspector sees only this process's in-memory Redis "
            "(no runs); set CARAMBA_REDIS__URL to the Redis your workers and bots use"
        )
    redis = connect_redis(settings)
    inspector = inspector_for(settings, redis, local=local, sign=sign)
    app = secured(create_app(inspector))
    where = f"http://{host}:{port}"
    if local:
        log.info("the run inspector is at %s/ (runs list open on this machine)", where)
    else:
        log.info("the runs list: %s", operator_link(settings, settings.web_ui.base_url or where))
    server = uvicorn.Server(
        # No access log: the pages' addresses carry their tokens.
        uvicorn.Config(app, host=host, port=port, lifespan="off", access_log=False)
    )
    try:
        await server.serve()
    finally:
        await inspector.live.aclose()
        await redis.aclose()
