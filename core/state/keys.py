"""Redis key names, in one place: every key the state room reads or writes is built by
``Keys(prefix)``, so a key's shape and its meaning are found together. The keys of a run
and its agents, and of the processes' shared work (timers, intents, the watchdog), are
here; each other area's are a mixin in its own module (``keys_llm``, ``keys_people``,
``keys_library``, ``keys_celery``, ``keys_schedules``, ``keys_spend``), composed into
:class:`Keys`. Part of the state room (``core.state``); it calls nothing. Helpers add
their keys to their area's module (or a new one composed here); nobody builds a key with
an f-string elsewhere."""

from __future__ import annotations

from dataclasses import dataclass

from core.state.keys_celery import CeleryKeys
from core.state.keys_library import LibraryKeys
from core.state.keys_llm import LlmKeys
from core.state.keys_people import PeopleKeys
from core.state.keys_schedules import ScheduleKeys
from core.state.keys_spend import SpendKeys

# The suffix of an agent's state key after its hash's (``Keys.agent_state``, the scripts).
AGENT_STATE = ":state"
# The agent hash's field its state was kept in before it had a key of its own: read when
# that key is missing (``core.state.saved_states``, the start script), dropped by its next save.
LEGACY_STATE_FIELD = "state"


@dataclass(frozen=True)
class Keys(LlmKeys, PeopleKeys, LibraryKeys, CeleryKeys, ScheduleKeys, SpendKeys):
    """Every Redis key name of one deployment (``prefix``)."""

    prefix: str = "caramba"

    def run(self, run_id: str) -> str:
        return f"{self.prefix}:run:{run_id}"

    def run_head(self, run_id: str) -> str:
        """The run's status, pause, budget and deadline (``RunHead``), beside its record."""
        return f"{self.prefix}:run:{run_id}:head"

    def run_commit(self, run_id: str) -> str:
        """The token of the last change saved to the run (``Store.update_run``), kept
        briefly so a retry after a lost reply knows its change was applied."""
        return f"{self.prefix}:run:{run_id}:commit"

    def run_usage(self, run_id: str) -> str:
        return f"{self.prefix}:run:{run_id}:usage"

    def agents(self, run_id: str) -> str:
        """Set of the run's agent ids."""
        return f"{self.prefix}:run:{run_id}:agents"

    def agent(self, run_id: str, agent_id: str) -> str:
        """Hash: ``seq``, ``status``, ``spec``, ``team`` and the turn's bookkeeping (save
        token, follow-ups); the state itself is :meth:`agent_state`, written with ``seq``.
        (Agents saved before that key existed keep their state in the hash's ``state``
        field until their next save.)"""
        return f"{self.prefix}:run:{run_id}:agent:{agent_id}"

    def agent_state(self, run_id: str, agent_id: str) -> str:
        """String: the agent's state (JSON, its thread within): its hash's key +
        :data:`AGENT_STATE`, as the turn's scripts name it too (``core.state.turn_start``)."""
        return self.agent(run_id, agent_id) + AGENT_STATE

    def responses(self, run_id: str) -> str:
        """Hash ``<agent>:<seq>`` (a turn) or ``plan:<digest>`` (a planning call) → the
        model's response, kept until the turn is saved (``core.agent.responses``)."""
        return f"{self.prefix}:run:{run_id}:responses"

    @staticmethod
    def response_field(agent_id: str, seq: int) -> str:
        return f"{agent_id}:{seq}"

    def turn_lease(self, run_id: str, agent_id: str, seq: int) -> str:
        """Held by the one delivery running turn ``seq`` of an agent (``agent.lease``)."""
        return f"{self.prefix}:run:{run_id}:lease:{agent_id}:{seq}"

    def files(self, run_id: str) -> str:
        """Hash path → a workspace file's bytes, base64 (``core.workspace.redis_store``)."""
        return f"{self.prefix}:run:{run_id}:files"

    def files_meta(self, run_id: str) -> str:
        """Hash path → the file's ``FileInfo`` (JSON), written with its bytes."""
        return f"{self.prefix}:run:{run_id}:files:meta"

    def deliveries(self, run_id: str) -> str:
        """Hash ``<agent>:<seq>`` → how many times that turn was started."""
        return f"{self.prefix}:run:{run_id}:deliveries"

    def events(self, run_id: str) -> str:
        return f"{self.prefix}:run:{run_id}:events"

    def names(self, run_id: str) -> str:
        """Hash agent name → agent id (names are unique within a run)."""
        return f"{self.prefix}:run:{run_id}:names"

    def inbox(self, run_id: str, agent_id: str) -> str:
        return f"{self.prefix}:run:{run_id}:inbox:{agent_id}"

    def team(self, run_id: str, team_id: str) -> str:
        return f"{self.prefix}:run:{run_id}:team:{team_id}"

    def team_members(self, run_id: str, team_id: str) -> str:
        return f"{self.prefix}:run:{run_id}:team:{team_id}:members"

    def broadcast(self, run_id: str) -> str:
        return f"{self.prefix}:run:{run_id}:all"

    def dead_letters(self, run_id: str) -> str:
        return f"{self.prefix}:run:{run_id}:dead"

    def wake(self, run_id: str, agent_id: str) -> str:
        """Set (NX) while a wake-up turn for a waiting agent is scheduled."""
        return f"{self.prefix}:run:{run_id}:wake:{agent_id}"

    def agent_slots(self, run_id: str) -> str:
        """Set of agent slots reserved in the run (for the agents-per-run cap), one member
        per creating turn and index, so a turn delivered twice reserves its slots once."""
        return f"{self.prefix}:run:{run_id}:agent_slots"

    def parked(self, run_id: str) -> str:
        """Set of agents whose turns wait for a paused run to be extended."""
        return f"{self.prefix}:run:{run_id}:parked"

    def timers(self) -> str:
        """Sorted set of due-later actions (score: when), shared by every process."""
        return f"{self.prefix}:timers"

    def intents(self) -> str:
        """Stream of intents saved by turns and not yet processed (group ``processors``)."""
        return f"{self.prefix}:intents"

    def intent_done(self, key: str) -> str:
        """Set once an intent has been processed: the exactly-once marker."""
        return f"{self.prefix}:intent-done:{key}"

    def intent_failures(self) -> str:
        """Hash intent key → failed processing attempts."""
        return f"{self.prefix}:intent-failures"

    def runs_index(self) -> str:
        return f"{self.prefix}:runs"

    def active_runs(self) -> str:
        """Set of runs under way (running or waiting for people), for the watchdog."""
        return f"{self.prefix}:runs:active"

    def watchdog(self) -> str:
        """The watchdog's claim on this round (one process checks the runs per round)."""
        return f"{self.prefix}:watchdog"

    def watchdog_marks(self) -> str:
        """Hash run id → its last event id when the watchdog last found it idle."""
        return f"{self.prefix}:watchdog:idle"

    def watchdog_resubmitted(self, run_id: str, agent_id: str) -> str:
        """Set (NX, with a TTL) when the watchdog resubmitted an agent's stalled turn, so
        it does so at most once per ``scheduler.stall_periods`` × ``stall_period_s``."""
        return f"{self.prefix}:watchdog:resubmitted:{run_id}:{agent_id}"

    def planning(self, run_id: str) -> str:
        """Held while a worker plans the request ``run_id``."""
        return f"{self.prefix}:run:{run_id}:planning"

    # --- the agent room (turn in phases, issue 24) ---------------------------------------

    def fault(self, name: str) -> str:
        """Counter arming a crash-test fault point (``core.agent.faults``)."""
        return f"{self.prefix}:fault:{name}"

    @staticmethod
    def agent_slot(agent_id: str, seq: int, index: int) -> str:
        """A member of ``agent_slots``: the ``index``-th agent created by turn ``seq`` of
        ``agent_id`` (a re-delivered turn names the slots its earlier delivery took)."""
        return f"{agent_id}:{seq}:{index}"

    # --- the state room -------------------------------------------------------------------

    @staticmethod
    def lock(key: str) -> str:
        """Held (NX, with a TTL) while one process rebuilds what ``key`` marks."""
        return f"{key}:lock"

    def replicated(self) -> str:
        """A one-byte marker written before a WAIT, so that the WAIT covers every write
        made before it on any connection (core/state/durable_writes.py; short expiry)."""
        return f"{self.prefix}:replicated"
