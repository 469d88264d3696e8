"""The worker's consumer, made to survive a Redis restart with turns in flight.

When the broker connection is lost, Celery's consumer closes it and connects again
(``Consumer.start``: the lost connection goes through ``on_connection_error_after_connected``,
then the bootsteps restart). With the Redis transport (kombu 5.7) and a BRPOP in flight —
always, on a worker with a free turn slot — closing the lost connection can fail
(observed: a worker with turns in flight exited on ``redis-server`` restart):

1. ``Connection.collect()`` closes the channels: the consuming channel's ``close()`` first
   reads the pending BRPOP reply (``Channel._brpop_read``), which raises ``ConnectionError``
   before the channel is marked closed; kombu swallows it (``maybe_close_channel``), and
   ``collect`` then detaches the transport (``_do_close_transport``: ``transport.client =
   None``).
2. ``connection.close()`` closes the still-open default channel a second time; now it gets
   as far as putting its unacknowledged messages back ("Restoring N unacknowledged
   message(s)", ``QoS.restore_unacked``), which needs a new Redis pool
   (``Channel._connparams``) and reads ``self.connection.client.hostname`` on the
   detached transport: ``AttributeError: 'NoneType' object has no attribute 'hostname'``.
3. ``ignore_errors`` only ignores connection and channel errors, so the ``AttributeError``
   leaves ``Consumer.start``; the worker logs "Unrecoverable error" and stops.

The turns in flight go on in their pool threads meanwhile, and the same ``AttributeError``
waits for each of them when it ends: its acknowledgement goes to the channel of the lost
connection (``Message.ack`` → ``QoS.ack`` → ``Channel._connparams``), from the worker's
event loop (the hub), where it is not caught either (``Message.ack_log_error`` ignores only
connection errors): "Unrecoverable error" again, once the worker had reconnected.

:class:`TurnConsumer` treats a failure to close the lost connection as what it is — the
connection is gone either way — and reconnects; and it acknowledges a message of a lost
connection on the current one. With the Redis transport an acknowledgement is the removal
of the message's delivery tag (a UUID given at publishing) from kombu's unacknowledged set
in Redis, which any channel can do. If that fails too (Redis still down), the message stays
there and the broker delivers it again after ``celery.visibility_timeout_s``: the turn drops
it as already applied.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from celery.worker.consumer import Consumer

log = logging.getLogger(__name__)


class TurnConsumer(Consumer):
    """Celery's consumer; losing the broker connection with turns in flight never stops
    the worker."""

    def on_connection_error_after_connected(self, exc: Exception) -> None:
        try:
            super().on_connection_error_after_connected(exc)
        except Exception as close_exc:  # see the module docstring
            # The parent has already let go of the connection (``self.connection`` is
            # None before it is closed); Consumer.start goes on to reconnect.
            self.connection = None
            log.warning(
                "closing the lost broker connection failed (%r); connecting again anyway",
                close_exc,
            )

    def call_soon_ack(self, p: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Acknowledge (or reject) a message: ``p`` is its ``ack_log_error`` or
        ``reject_log_error``, run now or on the event loop."""
        return super().call_soon_ack(self._settle_message, p, *args, **kwargs)

    def _settle_message(self, settle: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        message = getattr(settle, "__self__", None)
        channel = getattr(message, "channel", None)
        if message is None or channel is None or not getattr(channel, "closed", False):
            settle(*args, **kwargs)
            return
        # A message of a lost connection: its channel is closed.
        if getattr(settle, "__name__", "") != "ack_log_error":
            log.warning(
                "message %s of the lost broker connection is left unacknowledged; it is "
                "delivered again after the visibility timeout",
                message.delivery_tag,
            )
            return
        self._ack_on_current_channel(message)

    def _ack_on_current_channel(self, message: Any) -> None:
        tag = message.delivery_tag
        channel = getattr(self.task_consumer, "channel", None)
        try:
            if channel is None or getattr(channel, "closed", True):
                raise ConnectionError("not connected to the broker again yet")
            # kombu's Redis QoS.ack without the channel's own bookkeeping (the message was
            # delivered to another channel): ZREM + HDEL of the tag.
            channel.qos._remove_from_indices(tag).execute()
        except Exception as exc:
            log.warning(
                "could not acknowledge message %s of the lost broker connection (%r); it is "
                "delivered again after the visibility timeout",
                tag,
                exc,
            )
        else:
            log.info("acknowledged message %s of the lost broker connection", tag)
