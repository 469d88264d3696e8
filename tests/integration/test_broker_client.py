"""Celery's broker connections (:mod:`tasks.broker`): kombu's Redis transports with one
Redis client per channel (:mod:`tasks.broker_redis`), on the test Redis.

The app's connections use them for every broker url kombu reads as Redis (``redis://``,
``rediss://`` with kombu's TLS default, ``sentinel://`` — after a switch to the next
Sentinel too) and kombu's own transport for anything else. Messages go through with no
Redis client built per operation, and kombu's guarantees hold: an unacknowledged message
is put back when its connection closes and once its visibility timeout passed, and a
channel whose connections the server dropped carries on. A worker process freezes its
start-up objects once ready, and still stops cleanly."""

from __future__ import annotations

import ssl
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from celery import Celery
from kombu import Connection, Exchange, Queue, pools

from core.config import load_settings
from tasks.app import make_app
from tasks.broker import BrokerConnection
from tasks.broker_redis import SentinelTransport, Transport
from tasks.scheduler import TURN_TASK
from tests.conftest import REDIS_URL
from tests.integration.processes import Process, unique_prefix, worker_env

pytestmark = pytest.mark.integration


@pytest.fixture
def prefix() -> Iterator[str]:
    with unique_prefix() as name:
        yield name


def app_for(prefix: str) -> Celery:
    """The production app for the test Redis under ``prefix``."""
    settings = load_settings(
        redis={"url": REDIS_URL, "key_prefix": prefix}, celery={"queue": f"{prefix}-turns"}
    )
    return make_app(settings)


def app_connection(prefix: str, **options: Any) -> BrokerConnection:
    """A broker connection of the production app for the test Redis under ``prefix``."""
    conn: BrokerConnection = app_for(prefix).connection_for_write(transport_options=options)
    return conn


def a_queue(prefix: str) -> Queue:
    name = f"{prefix}-q-{uuid.uuid4().hex[:6]}"
    return Queue(name, Exchange(name, "direct", durable=False), routing_key=name, durable=False)


def publish(conn: BrokerConnection, queue: Queue, body: Any) -> None:
    producer = conn.Producer(serializer="json")
    producer.publish(
        body, exchange=queue.exchange, routing_key=queue.routing_key, declare=[queue], retry=True
    )


def receive(conn: BrokerConnection, queue: Queue, count: int, *, ack: bool = True) -> list[Any]:
    """``count`` messages of ``queue`` (acknowledged unless ``ack`` is False)."""
    got: list[Any] = []
    with conn.Consumer(queue, callbacks=[lambda body, msg: got.append(msg)], accept=["json"]):
        while len(got) < count:
            conn.drain_events(timeout=5)
    if ack:
        for message in got:
            message.ack()
    return got


class ClientsBuilt:
    """Counts the ``redis.Redis`` clients built while it is entered."""

    def __init__(self) -> None:
        self.count = 0
        self._init = redis.Redis.__init__

    def __enter__(self) -> ClientsBuilt:
        init = self._init

        def counted(client: Any, *args: Any, **kwargs: Any) -> None:
            self.count += 1
            init(client, *args, **kwargs)

        redis.Redis.__init__ = counted  # type: ignore[method-assign,assignment]
        return self

    def __exit__(self, *_: object) -> None:
        redis.Redis.__init__ = self._init  # type: ignore[method-assign]


def broker_keys(prefix: str, queue: Queue) -> dict[str, int]:
    """``queue``'s length and kombu's unacknowledged bookkeeping, under the app's global
    key prefix."""
    client = redis.Redis.from_url(REDIS_URL)
    try:
        return {
            "queued": int(client.llen(f"{prefix}:celery:{queue.name}")),
            "unacked": int(client.hlen(f"{prefix}:celery:unacked")),
            "index": int(client.zcard(f"{prefix}:celery:unacked_index")),
        }
    finally:
        client.close()


def test_the_transport_is_ours_for_every_redis_url_and_kombus_otherwise() -> None:
    conn = BrokerConnection("redis://127.0.0.1:6379/0")
    assert conn.get_transport_cls() is Transport
    # rediss:// with no TLS options: kombu's default (and warning) still apply.
    tls = BrokerConnection("rediss://127.0.0.1:6380/0")
    assert tls.get_transport_cls() is Transport
    assert tls.ssl == {"ssl_cert_reqs": ssl.CERT_NONE}
    sentinels = BrokerConnection(
        "sentinel://127.0.0.1:26379;sentinel://127.0.0.1:26380/0",
        transport_options={"master_name": "m"},
    )
    assert sentinels.get_transport_cls() is SentinelTransport
    sentinels.switch(sentinels.alt[1])  # what kombu does after a connection error
    assert sentinels.get_transport_cls() is SentinelTransport
    assert sentinels.clone().get_transport_cls() is SentinelTransport  # Celery's pools
    memory = BrokerConnection("memory://")
    assert memory.get_transport_cls().__module__ == "kombu.transport.memory"
    # kombu's process-wide pools never mix its own connections with ours.
    url = "redis://127.0.0.1:6379/0"
    assert pools.connections[Connection(url)] is not pools.connections[BrokerConnection(url)]


def test_messages_go_through_with_one_client_per_channel(prefix: str) -> None:
    queue = a_queue(prefix)
    with app_connection(prefix) as conn:
        assert isinstance(conn.transport, Transport)
        publish(conn, queue, {"n": -1})  # the channels and their clients, built once
        receive(conn, queue, 1)
        with ClientsBuilt() as built:
            for n in range(20):
                publish(conn, queue, {"n": n})
                (message,) = receive(conn, queue, 1)
                assert message.payload == {"n": n}
        assert built.count == 0
    assert broker_keys(prefix, queue) == {"queued": 0, "unacked": 0, "index": 0}


def test_celery_publishes_through_its_pools_with_one_client_per_channel(prefix: str) -> None:
    app = app_for(prefix)
    queue = f"{prefix}-published"
    try:
        app.send_task(TURN_TASK, args=[{"n": -1}], queue=queue)  # the pools, built once
        with ClientsBuilt() as built:
            for n in range(20):
                app.send_task(TURN_TASK, args=[{"n": n}], queue=queue)
        assert built.count == 0
        with app.pool.acquire() as conn:
            assert isinstance(conn.transport, Transport)
        with app.producer_pool.acquire() as producer:
            assert isinstance(producer.connection.transport, Transport)
        client = redis.Redis.from_url(REDIS_URL)
        try:
            assert client.llen(f"{prefix}:celery:{queue}") == 21
        finally:
            client.close()
    finally:
        app.close()


def test_a_closed_connection_puts_its_unacknowledged_messages_back(prefix: str) -> None:
    queue = a_queue(prefix)
    with app_connection(prefix) as conn:
        for n in range(3):
            publish(conn, queue, {"n": n})
        assert broker_keys(prefix, queue) == {"queued": 3, "unacked": 0, "index": 0}
        receive(conn, queue, 3, ack=False)
        assert broker_keys(prefix, queue) == {"queued": 0, "unacked": 3, "index": 3}
    with app_connection(prefix) as conn:
        got = receive(conn, queue, 3)
        assert sorted(m.payload["n"] for m in got) == [0, 1, 2]
        assert all(m.delivery_info["redelivered"] for m in got)
    assert broker_keys(prefix, queue) == {"queued": 0, "unacked": 0, "index": 0}


def test_a_message_past_its_visibility_timeout_is_delivered_again(prefix: str) -> None:
    queue = a_queue(prefix)
    options = {"visibility_timeout": 1, "unacked_restore_throttle": 1}
    holder = app_connection(prefix, **options)
    try:
        publish(holder, queue, {"n": 1})
        receive(holder, queue, 1, ack=False)  # its worker is stuck (or dead): never acked
        time.sleep(1.5)
        with app_connection(prefix, **options) as other:
            other.default_channel.qos.restore_visible(num=10)  # kombu's periodic restore
            (again,) = receive(other, queue, 1)
            assert again.payload == {"n": 1}
            assert again.delivery_info["redelivered"]
    finally:
        holder.release()
    assert broker_keys(prefix, queue) == {"queued": 0, "unacked": 0, "index": 0}


def test_a_channel_carries_on_after_the_server_dropped_its_connections(prefix: str) -> None:
    queue = a_queue(prefix)
    name = f"{prefix}-conn"
    with app_connection(prefix, client_name=name) as conn:
        publish(conn, queue, {"n": 1})
        (held,) = receive(conn, queue, 1, ack=False)
        admin = redis.Redis.from_url(REDIS_URL)
        try:
            ours = [c for c in admin.client_list() if c.get("name") == name]
            assert ours
            for found in ours:
                admin.client_kill_filter(_id=found["id"])
        finally:
            admin.close()
        # The channel's client, its pooled connection gone: a publish and an ack.
        publish(conn, queue, {"n": 2})
        held.ack()
    with app_connection(prefix) as other:
        (message,) = receive(other, queue, 1)
        assert message.payload == {"n": 2}
    assert broker_keys(prefix, queue) == {"queued": 0, "unacked": 0, "index": 0}


def test_a_worker_process_freezes_its_start_up_objects_once_ready(prefix: str) -> None:
    env = worker_env(
        redis__url=REDIS_URL, redis__key_prefix=prefix, celery__queue=f"{prefix}-turns"
    )
    worker = Process.worker(env, "freeze", concurrency=2)
    try:
        worker.wait_for(" ready.", timeout=120)
        worker.wait_for("start-up objects frozen", timeout=10)
        frozen = int(worker.output().split("start-up objects frozen: ")[1].split()[0])
        assert frozen > 10_000  # modules, settings, Services, Celery's and kombu's objects
        assert worker.stop() == 0
    finally:
        worker.cleanup()
