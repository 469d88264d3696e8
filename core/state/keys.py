"""Redis key names, in one place: every key the state room reads or writes is built
here (``Keys(prefix)``), so a key's shape and its meaning are found together. Part of the
state room (``core.state``); it calls nothing. Helpers append their keys in a section
named for their part; nobody builds a key with an f-string elsewhere."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Keys:
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
        """Hash: ``seq`` and ``state`` (JSON), written together."""
        return f"{self.prefix}:run:{run_id}:agent:{agent_id}"

    def responses(self, run_id: str) -> str:
        """Hash ``<agent>:<seq>`` (a turn) or ``plan:<digest>`` (a planning call) → the
        model's response, kept until the turn is saved (``core.agent.responses``)."""
        return f"{self.prefix}:run:{run_id}:responses"

    @staticmethod
    def response_field(agent_id: str, seq: int) -> str:
        return f"{agent_id}:{seq}"

    def llm_call(self, run_id: str, agent_id: str, seq: int) -> str:
        """Set (NX, with a TTL) while the call keeper makes turn ``seq``'s model call:
        ``<call id> <fingerprint>`` (``core.agent.keeper_client``)."""
        return f"{self.prefix}:run:{run_id}:llm-call:{agent_id}:{seq}"

    def llm_result(self, run_id: str, call_id: str) -> str:
        """The outcome of a kept call (its answer or its error), for whoever waits."""
        return f"{self.prefix}:run:{run_id}:llm-result:{call_id}"

    def llm_calls(self) -> str:
        """Stream of model calls handed to the call keepers (group ``keepers``)."""
        return f"{self.prefix}:llm:calls"

    def llm_keepers(self) -> str:
        """Set with a short TTL while a call keeper is alive (its heartbeat)."""
        return f"{self.prefix}:llm:keepers"

    def llm_rungs(self) -> str:
        """Hash: model name → its rung of the capability ladder (``core.llm.capabilities``),
        so every process starts where others got to; expires a day after the last change."""
        return f"{self.prefix}:llm:rungs"

    def llm_replies(self, process: str) -> str:
        """Pub/sub channel: ids of the kept calls of one requesting process that ended."""
        return f"{self.prefix}:llm:replies:{process}"

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

    def questions(self, run_id: str) -> str:
        """Hash question id → open question (JSON) of an agent waiting for a person."""
        return f"{self.prefix}:run:{run_id}:questions"

    def approvals(self, run_id: str) -> str:
        """Hash of the run's tool calls waiting for (or given) a person's approval:
        ``<id>`` → the request, ``decision:<id>``, ``started:<id>``, ``result:<id>``,
        ``grant:<tool>`` (``core.state.approvals``)."""
        return f"{self.prefix}:run:{run_id}:approvals"

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

    def ended_runs(self) -> str:
        """Set of runs that ended and whose outcome the library has not recorded yet."""
        return f"{self.prefix}:runs:ended"

    def learning_claims(self) -> str:
        """Hash run id → when a process claimed recording its outcome."""
        return f"{self.prefix}:runs:ended:claimed"

    def learned(self, run_id: str) -> str:
        """Set once the run's outcome is in the library."""
        return f"{self.prefix}:run:{run_id}:learned"

    def planning(self, run_id: str) -> str:
        """Held while a worker plans the request ``run_id``."""
        return f"{self.prefix}:run:{run_id}:planning"

    # --- the people room (core.runs.people, issue 24) ------------------------------------

    def vote(self, run_id: str, person_id: str) -> str:
        """A person's vote on a run's result (``up``/``down``, with a TTL): one each."""
        return f"{self.prefix}:run:{run_id}:vote:{person_id}"

    def old_votes(self, run_id: str, person_id: str) -> tuple[str, str]:
        """Where Slack and Discord kept a vote before the people room (read only, for
        runs rated across the upgrade; they lapse with their 90-day TTL)."""
        return (
            f"{self.prefix}:slack:feedback:{run_id}:{person_id}",
            f"{self.prefix}:discord:vote:{run_id}:{person_id}",
        )

    def person_name(self, person_id: str) -> str:
        """The name a person was last seen under by the people room (with a TTL)."""
        return f"{self.prefix}:person:{person_id}:name"

    def hinted(self, run_id: str, person_id: str) -> str:
        """Set (with a TTL) once a person was told why their reply was not delivered."""
        return f"{self.prefix}:run:{run_id}:hinted:{person_id}"

    # --- the agent room (turn in phases, issue 24) ---------------------------------------

    def fault(self, name: str) -> str:
        """Counter arming a crash-test fault point (``core.agent.faults``)."""
        return f"{self.prefix}:fault:{name}"

    @staticmethod
    def agent_slot(agent_id: str, seq: int, index: int) -> str:
        """A member of ``agent_slots``: the ``index``-th agent created by turn ``seq`` of
        ``agent_id`` (a re-delivered turn names the slots its earlier delivery took)."""
        return f"{agent_id}:{seq}:{index}"

    # --- the state room (H3, issue 24): the library, the turn ledger -----------------

    def library(self) -> str:
        """The agent library's keys start with this (``core.state.library_store``)."""
        return f"{self.prefix}:library"

    def library_names(self) -> str:
        """Hash name → entry id of the library's named entries."""
        return f"{self.library()}:names"

    def library_entry(self, entry_id: str) -> str:
        """Hash: a library entry (kind, payload, text, terms, name, its track record)."""
        return f"{self.library()}:entry:{entry_id}"

    def library_lexical(self, kind: str, field: str) -> str:
        """Hash term → entries of ``kind`` holding it in ``field`` (+ ``#docs``,
        ``#length``): the BM25 statistics (``core.library.lexical_store``)."""
        return f"{self.library()}:lexical:{kind}:{field}"

    def library_lexical_version(self) -> str:
        return f"{self.library()}:lexical:version"

    def library_format(self) -> str:
        """The index format the library's vectors are in (``core.library.upgrade``)."""
        return f"{self.library()}:format"

    def library_run_agents(self, run_id: str) -> str:
        """Set of the library entries a run's agents came from (``core.runs.learning``)."""
        return f"{self.library()}:run:{run_id}:agents"

    @staticmethod
    def lock(key: str) -> str:
        """Held (NX, with a TTL) while one process rebuilds what ``key`` marks."""
        return f"{key}:lock"

    def celery_ledger(self) -> str:
        """Sorted set: the turn jobs published and not yet held (``core.state.ledger``)."""
        return f"{self.prefix}:celery-ledger"

    def celery_ledger_held(self) -> str:
        """Sorted set: the turn jobs a worker holds, scored by when its hold lapses."""
        return f"{self.celery_ledger()}:held"

    def celery_broker(self) -> str:
        """kombu's ``global_keyprefix``: every broker key of the deployment starts with it."""
        return f"{self.prefix}:celery:"

    def celery_queue_lists(self, queue: str) -> list[str]:
        """The broker's Redis lists of ``queue``: kombu keeps priority p > 0 in
        ``{queue}\\x06\\x16{p}`` (priorities 3, 6, 9 with the default steps)."""
        base = self.celery_broker() + queue
        return [base + suffix for suffix in ("", "\x06\x163", "\x06\x166", "\x06\x169")]

    # -- forms an MCP server asks people to fill in (elicitation) -----------------------

    def forms(self, run_id: str) -> str:
        """Hash form id → open form (JSON) an MCP tool call waits on (``core.state.forms``)."""
        return f"{self.prefix}:run:{run_id}:forms"

    def form_answer(self, run_id: str, form_id: str) -> str:
        """The answer to an open form, written as it is claimed, read by the waiting call."""
        return f"{self.prefix}:run:{run_id}:form-answer:{form_id}"

    # -- schedules: recurring cohorts (core.state.schedules) -----------------------------

    def schedule(self, schedule_id: str) -> str:
        """One schedule (``core.types.schedules.Schedule``, JSON)."""
        return f"{self.prefix}:schedule:{schedule_id}"

    def schedules(self) -> str:
        """Set of every schedule's id."""
        return f"{self.prefix}:schedules"

    def schedules_due(self) -> str:
        """Sorted set: schedule id scored by its next firing (unix time); paused ones out."""
        return f"{self.prefix}:schedules:due"

    def schedules_in(self, place_key: str) -> str:
        """Set of the schedule ids posting into one channel (``Place.key``)."""
        return f"{self.prefix}:schedules:in:{place_key}"

    def schedule_slot(self, schedule_id: str, slot: int) -> str:
        """Claimed (NX, with a TTL) by the one process that fires ``slot`` of a schedule."""
        return f"{self.prefix}:schedule:{schedule_id}:slot:{slot}"

    def schedule_firings(self) -> str:
        """Stream of firings for the chat bots to post (``core.state.schedules``)."""
        return f"{self.prefix}:schedules:firings"

    # -- spend: the cost ledger and budgets (core.state.spend) ---------------------------

    def spend_open(self) -> str:
        """Hash run id → where its cost goes (``channel team``), for runs not folded into
        the ledger yet (their live usage counts when a budget is checked)."""
        return f"{self.prefix}:spend:open"

    def spend_folded(self, month: str) -> str:
        """Set of the run ids folded into ``month``'s ledger (the claim: counted once)."""
        return f"{self.prefix}:spend:{month}:folded"

    def spend_rows(self, month: str) -> str:
        """Hash ``<run id>|<model>`` → a ``SpendRow`` (JSON) of ``month``."""
        return f"{self.prefix}:spend:{month}:rows"

    def spend_totals(self, month: str, by: str) -> str:
        """Hash key → USD of ``month``, ``by`` channel, team, person, model or day."""
        return f"{self.prefix}:spend:{month}:by:{by}"

    def spend_names(self) -> str:
        """Hash place key or person id → the name people read (last seen)."""
        return f"{self.prefix}:spend:names"

    def spend_budgets(self) -> str:
        """Hash place key → a ``ChannelBudget`` set from chat (JSON; wins over config)."""
        return f"{self.prefix}:spend:budgets"

    def spend_asks(self) -> str:
        """Hash run id → the over-budget ask its request waits on (JSON)."""
        return f"{self.prefix}:spend:asks"

    def spend_pass(self, run_id: str) -> str:
        """Set (with a TTL) once a request over budget was approved: planning goes on."""
        return f"{self.prefix}:spend:pass:{run_id}"

    def spend_warned(self, month: str) -> str:
        """Set of the place keys warned about ``month`` (the 80 % line, said once)."""
        return f"{self.prefix}:spend:{month}:warned"

    def spend_images(self, run_id: str) -> str:
        """Hash image model → USD its calls cost a run (folded with the run's usage)."""
        return f"{self.prefix}:run:{run_id}:spend-images"

    def replicated(self) -> str:
        """A one-byte marker written before a WAIT, so that the WAIT covers every write
        made before it on any connection (core/state/durable_writes.py; short expiry)."""
        return f"{self.prefix}:replicated"

    def spend_planned(self) -> str:
        """Hash run id → what planning an open run cost (USD), so a budget check reads no
        run record; dropped when the run is folded."""
        return f"{self.prefix}:spend:planned"

    def spend_warned_in(self, month: str) -> str:
        """Hash place key → the run in whose thread its warning about ``month`` is said
        (the 80 % line, once per place and month: at a request, or when an ended run
        takes the month past it)."""
        return f"{self.prefix}:spend:{month}:warned-in"
