"""The CPU of one Celery message on the Redis broker: kombu's transport against ours.

    .venv/bin/python bench/broker_client.py [--n 2000] [--pairs 5] [--url redis://127.0.0.1:6379/0]

Each message is what a turn message costs a worker on the broker's side: a publish
(``LPUSH``), its delivery (``BRPOP``, then kombu's unacknowledged bookkeeping: ``ZADD`` +
``HSET``) and its acknowledgement (``ZREM`` + ``HDEL``), through a kombu connection with
Celery's transport options (visibility timeout, global key prefix). ``kombu`` is kombu's
own connection, whose Redis channel builds a new ``redis.Redis`` client for the publish,
the bookkeeping and the acknowledgement; ``ours`` is :class:`tasks.broker.BrokerConnection`
(one client per channel, :mod:`tasks.broker_redis`). ``celery_kombu`` / ``celery_ours``:
one ``send_task`` of a turn message (Celery's message, its producer pool, the publish retry
policy of ``tasks.app``) on an app with Celery's own connections / ``tasks.broker``'s.
Rounds alternate kombu, ours, kombu,
ours … (the machine is shared); the figure is the process's CPU per message (all
threads; Redis's own CPU is not counted), and how many ``redis.Redis`` clients each built.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import redis
from kombu import Connection, Exchange, Queue

from tasks.broker import BrokerAMQP, BrokerConnection


class _Counting:
    """Counts the ``redis.Redis`` clients built (kombu's ``Channel.Client``)."""

    built = 0

    def __init__(self) -> None:
        self._init = redis.Redis.__init__

    def __enter__(self) -> _Counting:
        init = self._init

        def counted(client: Any, *args: Any, **kwargs: Any) -> None:
            _Counting.built += 1
            init(client, *args, **kwargs)

        redis.Redis.__init__ = counted  # type: ignore[method-assign,assignment]
        return self

    def __exit__(self, *_: object) -> None:
        redis.Redis.__init__ = self._init  # type: ignore[method-assign]


def one_round(cls: type[Connection], url: str, n: int, prefix: str) -> tuple[float, float]:
    """CPU µs per message and clients built per message, over ``n`` messages."""
    name = f"bench-broker-{uuid.uuid4().hex[:8]}"
    options = {"visibility_timeout": 3600, "global_keyprefix": prefix}
    exchange = Exchange(name, "direct", durable=False)
    queue = Queue(name, exchange, routing_key=name, durable=False)
    received: list[Any] = []
    with cls(url, transport_options=options) as conn:
        producer = conn.Producer(serializer="json")
        with conn.Consumer(queue, callbacks=[lambda body, msg: received.append(msg)]):
            body = {"job": {"run_id": "r" * 26, "agent_id": "a" * 26, "seq": 1}}

            def message() -> None:
                producer.publish(body, exchange=exchange, routing_key=name, declare=[queue])
                conn.drain_events(timeout=5)
                received.pop().ack()

            for _ in range(50):  # warm-up: pools connected, scripts and caches built
                message()
            with _Counting():
                _Counting.built = 0
                start = time.process_time()
                for _ in range(n):
                    message()
                cpu = time.process_time() - start
                built = _Counting.built
        queue(conn.default_channel).delete()
    return cpu / n * 1e6, round(built / n, 2)


def celery_round(amqp: type | None, url: str, n: int, prefix: str) -> tuple[float, float]:
    """CPU µs per ``send_task`` of a turn message (what ``tasks.scheduler`` publishes),
    and clients built per publish, on an app with ``amqp`` (None: Celery's own)."""
    from celery import Celery

    from tasks.app import PUBLISH_RETRY_POLICY

    app = Celery("bench", set_as_current=False, **({"amqp": amqp} if amqp else {}))
    app.conf.update(
        broker_url=url,
        broker_transport_options={"visibility_timeout": 3600, "global_keyprefix": prefix},
        task_serializer="json",
        task_publish_retry_policy=PUBLISH_RETRY_POLICY,
    )
    queue = f"bench-broker-{uuid.uuid4().hex[:8]}"
    job = {"job": {"run_id": "r" * 26, "agent_id": "a" * 26, "seq": 1}}
    for _ in range(50):
        app.send_task("caramba.turn", args=[job], queue=queue)
    with _Counting():
        _Counting.built = 0
        start = time.process_time()
        for _ in range(n):
            app.send_task("caramba.turn", args=[job], queue=queue)
        cpu = time.process_time() - start
        built = _Counting.built
    app.close()
    return cpu / n * 1e6, round(built / n, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="messages per round")
    parser.add_argument("--pairs", type=int, default=5, help="kombu/ours round pairs")
    parser.add_argument("--url", default="redis://127.0.0.1:6379/0")
    opts = parser.parse_args()
    prefix = f"bench-broker-{uuid.uuid4().hex[:8]}:"
    rows: dict[str, list[float]] = {k: [] for k in ("kombu", "ours", "celery_kombu", "celery_ours")}
    built: dict[str, float] = {}
    for _ in range(opts.pairs):
        for label, cls in (("kombu", Connection), ("ours", BrokerConnection)):
            us, clients = one_round(cls, opts.url, opts.n, prefix)
            rows[label].append(round(us, 1))
            built[label] = clients
        for label, amqp in (("celery_kombu", None), ("celery_ours", BrokerAMQP)):
            us, clients = celery_round(amqp, opts.url, opts.n, prefix)
            rows[label].append(round(us, 1))
            built[label] = clients
    client = redis.Redis.from_url(opts.url)
    try:
        for key in client.scan_iter(match=f"{prefix}*"):
            client.delete(key)
    finally:
        client.close()
    result: dict[str, Any] = {
        label: {
            "cpu_us_per_message": values,
            "median": statistics.median(values),
            "clients_built_per_message": built[label],
        }
        for label, values in rows.items()
    }
    for what, kombu, ours in (
        ("message", "kombu", "ours"),
        ("celery_publish", "celery_kombu", "celery_ours"),
    ):
        saved = [k - o for k, o in zip(rows[kombu], rows[ours], strict=True)]
        result[f"saved_us_per_{what}_median"] = round(statistics.median(saved), 1)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
