"""The turn ledger: the recovery of record for turns given to the broker.

The broker alone cannot be trusted with a turn. Celery's Redis transport takes a message
off the queue with BRPOP and records it as unacknowledged only once the worker has read
it: a message popped for a worker that is being killed is in neither place and is lost
(kombu #1836, celery #4354). And kombu gives a dead worker's unacknowledged messages back
only after its visibility timeout (an hour by default), under a lock that a worker killed
while holding it keeps for ``unacked_mutex_expire``. A lost turn is a stuck agent.

So every turn given to the broker is an entry here, in one of two states:

- *queued* (``keys.celery_ledger``, scored by when it is due: publish time, or the
  end of a retry's back-off): recorded before the message is published;
- *held* (``keys.celery_ledger_held``, scored by a lease deadline): a worker is
  running it. The task moves its entry queued → held when it starts, a chained turn is
  recorded held by the worker that will run it (by the save script of the turn that
  schedules it, with the chain's ended turns settled in the same script:
  ``core.state.ledger_moves.Ride``), and the worker renews the deadline of everything it
  holds every ``celery.lease_s / 3`` in one round trip, which also settles the turns that
  ended since (a chain's last ones).

The turn's end (applied, dropped as a duplicate, or given up) settles the entry: it
leaves both sets. Any turn-running process sweeps the ledger and claims

- held entries whose lease lapsed (their worker died), and
- queued entries due more than a grace period ago while the broker's queue is empty
  (the message went missing between the broker and a worker), or due more than
  ``celery.visibility_timeout_s`` ago whatever the queue holds;

and publishes them again under the same task id. The claim never forgets: it is one Lua
script that moves the entry to *held* under the claimer's lease, and only after the
message is published is it moved back to *queued* (if nobody took it meanwhile). A
claimer killed in between leaves a held entry whose lease lapses: it is claimed again.
Turns are idempotent by sequence number and guarded by a lease (core/agent/lease.py),
so a copy too many is dropped without a model call, never applied twice.

Scores are integer milliseconds of the Redis server's clock (``TIME`` in the scripts):
workers on hosts whose clocks disagree still agree on which leases lapsed. The sets and
their scripts are the state room's (``core.state.ledger``); this module is the Celery glue.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import Any

from core.config import Settings
from core.scheduler.base import TurnJob
from core.state.client import sync_client
from core.state.ledger import LedgerSets

# A string as ``json.dumps`` spells it (``ensure_ascii``): the encoder's own C function.
_quoted = json.encoder.encode_basestring_ascii


def sweep_interval_s(settings: Settings) -> float:
    """How often leases are renewed and the ledger swept: a third of ``celery.lease_s``."""
    return max(0.2, settings.celery.lease_s / 3)


class TurnLedger(LedgerSets):
    """The ledger of one deployment, its entries the turns' task ids and jobs."""

    @classmethod
    def for_settings(cls, settings: Settings) -> TurnLedger:
        """The ledger in the Redis of ``redis.url`` (where the turns' state lives)."""
        return cls(sync_client(settings.redis), settings.redis.key_prefix)

    @staticmethod
    def member(task_id: str, job: TurnJob | dict[str, Any]) -> str:
        if isinstance(job, TurnJob):
            # Spelled as the generic path below spells it (sorted keys, no spaces, ASCII),
            # without a model dump and an encoder per entry: a chain spells a few per turn.
            q = _quoted
            return (
                f'{{"job":{{"agent_id":{q(job.agent_id)},"kind":{q(job.kind)},'
                f'"run_id":{q(job.run_id)},"seq":{int(job.seq)}}},"task":{q(task_id)}}}'
            )
        return json.dumps({"task": task_id, "job": job}, sort_keys=True, separators=(",", ":"))

    @staticmethod
    def parse(member: str) -> tuple[str, TurnJob]:
        """The task id and the job of a member."""
        data = json.loads(member)
        return data["task"], TurnJob.model_validate(data["job"])


class Holdings:
    """The ledger entries this process holds (counted: a duplicate delivery of a turn
    may run beside the original in the same process). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: Counter[str] = Counter()

    def add(self, member: str) -> None:
        with self._lock:
            self._held[member] += 1

    def discard(self, member: str) -> None:
        with self._lock:
            self._held[member] -= 1
            if self._held[member] <= 0:
                del self._held[member]

    def snapshot(self) -> list[str]:
        with self._lock:
            return list(self._held)
