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

:class:`TurnConsumer` overrides two public methods of Celery's consumer and uses no kombu
internals: a failure to close the lost connection is taken for what it is — the
connection is gone either way — and the worker reconnects; and a message of a lost
connection is left unacknowledged instead of acknowledged on a dead channel. Nothing is
owed to it: the turn it carried has run and its ledger entry (:mod:`tasks.ledger`, the
recovery of record) was settled when it ended. kombu's backstop delivers the message
again after ``celery.visibility_timeout_s``, and the turn drops that copy as already
applied (no model call). Acknowledging it on the new connection instead would need
kombu's private ``QoS._remove_from_indices`` — one stray task an hour later is cheaper
than depending on a private API.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
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

    def call_soon_acks(self, messages: Sequence[Any], errors: Any) -> Any:
        """Acknowledge ``messages`` (read from the broker, each settled once) on the event
        loop, as :meth:`call_soon_ack` would one by one: one hop to it for all of them
        (each still acknowledged by kombu itself)."""
        return super().call_soon_ack(self._ack_messages, messages, errors)

    def _ack_messages(self, messages: Sequence[Any], errors: Any) -> None:
        for message in messages:
            if not _lost(message):
                message.ack_log_error(log, errors)

    def _settle_message(self, settle: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        message = getattr(settle, "__self__", None)
        if message is None or not _lost(message):
            settle(*args, **kwargs)


def _lost(message: Any) -> bool:
    """Whether ``message`` came over a lost connection (its channel is closed: see the
    module docstring); if so it is left unacknowledged, and said."""
    channel = getattr(message, "channel", None)
    if channel is None or not getattr(channel, "closed", False):
        return False
    log.info(
        "message %s came over the lost broker connection: left unacknowledged (its "
        "turn has ended; the broker's late copy will be dropped)",
        message.delivery_tag,
    )
    return True
