"""``caramba web``: the run inspector's process (uvicorn serving :mod:`bots.web.app`)."""

from __future__ import annotations

import contextlib
import logging
import secrets
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import uvicorn

from bots.web.access import Signer, operator_link, signer
from bots.web.app import Inspector, create_app, secured
from bots.web.chat import WebChat
from bots.web.live import Live
from bots.web.spend import ledger_source
from core.config import Settings
from core.errors import ConfigError
from core.process.demo_flow import offline_settings, team_model
from core.process.embedded import embedded_services
from core.services import Services
from core.state.client import Client
from core.state.keys import Keys
from core.state.store import Store
from core.workspace import open_workspace
from tasks.services import chat_services

log = logging.getLogger(__name__)
LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


def inspector_for(settings: Settings, redis: Client, *, local: bool, sign: Signer) -> Inspector:
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


def web_services(
    settings: Settings, demo: bool, pace_s: float = 0.0
) -> contextlib.AbstractAsyncContextManager[Services]:
    """The services the web chat runs requests with: ``chat_services`` (jobs to the Celery
    workers, or everything in this process in embedded mode), or with ``demo`` the
    offline demo's (embedded, the scripted model taking ``pace_s`` seconds an answer,
    nothing kept)."""
    if not demo:
        return chat_services(settings)

    @contextlib.asynccontextmanager
    async def offline() -> AsyncIterator[Services]:
        with tempfile.TemporaryDirectory(prefix="caramba-web-demo-") as scratch:
            demo_settings = offline_settings(settings, Path(scratch))
            async with embedded_services(demo_settings, team_model(pace_s)) as svc:
                yield svc

    return offline()


async def run_web(
    settings: Settings,
    host: str | None = None,
    port: int | None = None,
    *,
    demo: bool = False,
    pace_s: float = 0.0,
) -> None:
    """Serve the inspector and the web chat until SIGTERM or SIGINT, on ``host``:``port``
    (default ``[web_ui] host`` and ``port``). The runs list and the chat are open to a
    direct request from this machine naming it when the server listens on loopback
    (:func:`bots.web.guard.is_local`) and need an operator's link
    (:func:`bots.web.access.operator_link`) for any other; run pages always need their run's link
    (:func:`bots.web.access.run_link`). ``demo``: everything in this process with the
    scripted offline model (no services, no keys), each answer taking ``pace_s`` seconds:
    try the product in a browser."""
    host = host or settings.web_ui.host
    port = port or settings.web_ui.port
    local = host in LOOPBACK
    sign = local_signer(settings, host)
    async with web_services(settings, demo, pace_s) as svc:
        live = Live(svc.store, blocking=not svc.settings.redis.embedded)
        inspector = Inspector(
            svc.settings,
            svc.store,
            svc.workspace,
            sign,
            live,
            open_list=local,
            spend=ledger_source(svc),
        )
        chat = WebChat(svc, sign, open=local)
        taken = await chat.start()
        app = secured(create_app(inspector, chat))
        where = f"http://{host}:{port}"
        web = settings.web_ui
        link = operator_link(settings, web.base_url or where, sign)
        if local:
            log.info("the web chat is at %s/chat, the runs at %s/", where, where)
            if web.configured or web.allowed_hosts or web.forwarded_allow_ips:
                # Through a proxy or under another name the pages need the link.
                log.info("from elsewhere (a proxy, another host name): %s", link)
        else:
            log.info("the runs list: %s (the chat: /chat with the same ?t=)", link)
        log.info("%d web chat threads taken up", taken)
        log.info("%s", settings.web_ui.trust())
        proxies = list(settings.web_ui.forwarded_allow_ips)
        server = uvicorn.Server(
            # No access log: the pages' addresses carry their tokens. Proxy headers only
            # from the configured proxies (uvicorn believes 127.0.0.1's by default).
            uvicorn.Config(
                app,
                host=host,
                port=port,
                lifespan="off",
                access_log=False,
                proxy_headers=bool(proxies),
                forwarded_allow_ips=proxies or None,
            )
        )
        try:
            await server.serve()
        finally:
            await chat.aclose()
            await live.aclose()
