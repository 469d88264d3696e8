"""The script that saves a turn in one round trip: the commands a pipeline recorded, run
atomically only if the agent's seq is still the one the turn read (``Store.commit_turn``),
the state staged before it renamed in (``core.state.staged``), then what follows a save
(:class:`AfterSave`):

- the wake-up claims of the agents its messages went to (and its own, when it waits and
  mail came meanwhile): a claim is taken for a waiting agent whose wake-up nobody claimed,
  as ``Bus.claim_wake`` does, and becomes a turn to schedule — except for a parent that
  waits for all its children (its hash's ``waits_for``) woken by one of them ending while
  another still works: that result waits in its inbox, read with the last one;
- the follow-ups' record: every turn the save asks to schedule (its new agents' first
  turns, the claimed wake-ups, its own next turn), kept in the agent's hash
  (``followup_jobs``) as ``"<seq>|<agent>:<seq> …"``, so that a delivery finding the turn
  saved by a worker that died before scheduling them schedules those never started
  (``core.agent.wake``); cleared later, riding on this process's next script (:class:`Clears`);
- the release of the turn's lease (when it still holds this delivery's token);
- on a Celery worker's chain, the turn ledger's move (``core.state.ledger_moves.Ride``):
  the chain's ended turns settled, the first follow-up held for the worker to run next.

A save sent again after its reply was lost finds its own token and answers
``SAVED_BEFORE`` with the record it wrote, so the caller still schedules what follows.
Part of the state room (``core.state``): the script's text and its arguments; the turns
module (``core.state.turns``) sends it. Calls nothing."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, NamedTuple

from core.state.ledger_moves import RIDE_LUA, Ride
from core.state.recorded import recorded_args
from core.state.run_guard import GUARD_LUA
from core.state.turn_start import CLEAR_LUA, START_LUA, WAKE_LUA
from core.state.unread import UNREAD_LUA


class Commit(IntEnum):
    """What a turn's save came to (the script's reply)."""

    # Not applied: the agent's seq moved on (another delivery of the turn saved first).
    STALE = 0
    SAVED = 1
    # Applied by this very attempt, whose reply was lost: redis-py sent it again (a Redis
    # restart, a time-out) and the second run found its own save. Counts as saved.
    SAVED_BEFORE = 2
    # Not applied: the run's record (or usage) moved since the change was computed from it
    # (``core.state.run_guard``); ``core.state.turn_cas`` reads it again. Never returned.
    MOVED = 3

    @property
    def saved(self) -> bool:
        return self in (Commit.SAVED, Commit.SAVED_BEFORE)

    @classmethod
    def of(cls, reply: Any) -> Commit:
        """The outcome in the script's reply (``[code, record]``)."""
        return cls(int(reply[0]))


@dataclass(frozen=True)
class AfterSave:
    """What the save script does once the turn is applied. Jobs are ``"<agent>:<seq>"``."""

    # The turn's lease key and this delivery's token: released with the save.
    lease: tuple[str, str] | None = None
    # New agents' first turns (scheduled first, in this order).
    jobs: tuple[str, ...] = ()
    # Agents to wake (their claims taken here, their turns scheduled next).
    wake: tuple[str, ...] = ()
    # The agent's own next turn, when it goes on running.
    next_job: str = ""
    # The agent's streams, when it waits: mail that came meanwhile wakes it again.
    unread: tuple[str, ...] = ()
    # The children it waits for, when it waits for all of them (``wait_for_messages``
    # with ``all_children``): kept in its hash (``waits_for``) until its next save.
    waits_for: tuple[str, ...] = ()
    wake_ttl_s: int = 60
    # The lease's ms and how many entries a mail read takes, should the save start the turn
    # it schedules too (``core.state.turn_ahead``, ``turn_ahead_wake``).
    ahead: tuple[int, int] | None = None


class Saved(NamedTuple):
    """What a save came to, and the turns it asks to schedule (its follow-ups: new agents'
    first turns, claimed wake-ups, its own next turn), in order."""

    commit: Commit
    jobs: list[tuple[str, int]]

    @property
    def saved(self) -> bool:
        return self.commit.saved


# Follow-up records this process has done the follow-ups of: ``(agent key, seq)``, each
# deleted by the next script this process sends if still that turn's (one round trip less).
Clears = list[tuple[str, int]]


# KEYS[1] the agent's hash, KEYS[2] the turn's lease. ARGV: seq, token, the key the agent's
# state was staged in before the script ('' for none: the recorded commands write what is
# saved; ``core.state.staged``), whether that state ended ('1'/'0'; '': as the commands
# wrote it), then the after-save part (lease token, wake TTL, agent key prefix, wake key
# prefix, own id, counted lists: jobs, wake, next job, unread streams, children waited for,
# clears, the ledger's ride: ``core.state.ledger_moves.Ride``, the next turn's start:
# :class:`Ahead`, the run's guard: ``core.state.run_guard``), then each recorded command as
# its word count and words. Like MULTI/EXEC, a command that fails does not stop the others;
# the first error is returned. (The keys are not all declared: a single Redis, not a cluster.)
COMMIT_SCRIPT = (
    CLEAR_LUA
    + RIDE_LUA
    + START_LUA
    + WAKE_LUA
    + GUARD_LUA
    + UNREAD_LUA
    + """
local staged = ARGV[3]
local ended = ARGV[4]  -- the state saved has ended: '1'/'0' ('': as the commands wrote)
local i = 5
local function take() local v = ARGV[i]; i = i + 1; return v end
local function list()
  local out = {}
  for k = 1, tonumber(take()) do out[k] = take() end
  return out
end
-- (one call per statement: Lua does not say in which order a list of calls runs)
local lease_token = take()
local ttl = take()
local agent_prefix = take()
local wake_prefix = take()
local self_id = take()
local jobs = list()
local wake = list()
local next_job = list()
local unread = list()
local waits_for = list()
i = clear_done(i)
local ride = list()
ride_settle(ride)
local ahead = list()
local guard = list()

local function release()
  if KEYS[2] and lease_token ~= '' and redis.call('GET', KEYS[2]) == lease_token then
    redis.call('DEL', KEYS[2])
  end
end
local function unstage() if staged ~= '' then redis.call('DEL', staged) end end
local seq = redis.call('HGET', KEYS[1], 'seq')
if (not seq) or tonumber(seq) ~= tonumber(ARGV[1]) then
  unstage()
  if redis.call('HGET', KEYS[1], 'commit_token') == ARGV[2] then
    return {2, redis.call('HGET', KEYS[1], 'followup_jobs')}
  end
  release()
  return {0, false}
end
if run_moved(guard) then unstage(); return {3, false} end
-- The state first: without it, nothing is applied.
if staged ~= '' then
  local moved = redis.pcall('RENAME', staged, KEYS[1] .. AGENT_STATE)
  if type(moved) == 'table' and moved.err then
    return redis.error_reply('ERR the state staged for this save is gone (expired, or never ' ..
      'written: ' .. moved.err .. '): nothing was saved, the turn is tried again')
  end
end
local err = nil
local n = #ARGV
while i <= n do
  local count = tonumber(ARGV[i])
  local reply = redis.pcall(unpack(ARGV, i + 1, i + count))
  if type(reply) == 'table' and reply.err and not err then err = reply.err end
  i = i + count + 1
end

-- Dropped in one call: the follow-ups' record (written below if any), its obsolete JSON
-- form, the state kept in the hash before its own key, the children no longer waited for.
local dropped = {'followup_jobs', 'followups'}
if staged ~= '' then dropped[#dropped + 1] = LEGACY_STATE end
if #waits_for > 0 then
  redis.call('HSET', KEYS[1], 'waits_for', table.concat(waits_for, ' '))
else
  dropped[#dropped + 1] = 'waits_for'
end
redis.call('HDEL', KEYS[1], unpack(dropped))
local ending = ended == '1'
local status = ended == '' and redis.call('HGET', KEYS[1], 'status')
if status then ending = status == 'finished' or status == 'failed' end
-- A parent waiting for all its children, this one among them ending: is another one
-- still at work? (an agent with no status left counts as ended)
local function others_working(children)
  if not ending or not string.find(' ' .. children .. ' ', ' ' .. self_id .. ' ', 1, true) then
    return false
  end
  for child in string.gmatch(children, '%S+') do
    local status = redis.call('HGET', agent_prefix .. child, 'status')
    if status and status ~= 'finished' and status ~= 'failed' then return true end
  end
  return false
end
local function claim(id)
  local f = redis.call('HMGET', agent_prefix .. id, 'status', 'seq', 'waits_for')
  if (f[1] == 'waiting' or f[1] == 'waiting_human')
    and not (f[3] and others_working(f[3]))
    and redis.call('SET', wake_prefix .. id, f[2], 'NX', 'EX', ttl) then
    jobs[#jobs + 1] = id .. ':' .. f[2]
  end
end
for _, id in ipairs(wake) do claim(id) end
if next_job[1] then jobs[#jobs + 1] = next_job[1] end
if #unread > 0 and has_unread(unread, self_id) then claim(self_id) end
local record = false
local written = {'commit_token', ARGV[2]}
if #jobs > 0 then
  record = ARGV[1] .. '|' .. table.concat(jobs, ' ')
  written[3], written[4] = 'followup_jobs', record
end
release()
redis.call('HSET', KEYS[1], unpack(written))
local held = ride_hold(ride, jobs[1])
if err then return redis.error_reply(err) end
-- The one agent this save woke, for the inline scheduler to run at once (``WakeOffer``),
-- or for this worker's chain to run next (held by the ride).
if ahead[1] == 'wake' and (held or #ride == 0) then
  return {1, record, held, wake_start(ahead, jobs, wake, next_job)}
end
-- The agent's own next turn, the only turn this save schedules, held for this worker's
-- chain (or, no ride, the inline scheduler's) to run next: started here (``Ahead``).
if (held or #ride == 0) and #ahead > 0 and #jobs == 1 and next_job[1]
    and jobs[1] == next_job[1] then
  local keys = {KEYS[1], ahead[1], ahead[2], ahead[3], ahead[4], ahead[5]}
  local args = {unpack(ahead, 6)}
  args[#args + 1], args[#args + 2] = '0', ARGV[2]
  return {1, record, held, start_turn(keys, args)}
end
if held then return {1, record, held} end
return {1, record}
"""
)

# The agent hash's field holding the token of the attempt that saved its last turn.
TOKEN_FIELD = "commit_token"


def clear_args(clears: Clears) -> list[Any]:
    """The counted list of done follow-up records, for either script."""
    return [len(clears), *(part for key, seq in clears for part in (key, seq))]


def script_args(
    expected_seq: int,
    token: str,
    command_stack: Iterable[tuple[Any, Any]],
    after: AfterSave | None = None,
    prefixes: tuple[str, str, str] = ("", "", ""),
    clears: Clears | None = None,
    ride: Ride | None = None,
    ahead: Sequence[Any] = (),
    guard: Sequence[str] = (),
    staged: str = "",
    ended: bool | None = None,
) -> list[Any]:
    """ARGV for :data:`COMMIT_SCRIPT`: the seq, the attempt's token, the key its state was
    staged in (``staged``; "": the recorded commands write what is saved) and whether that
    state has ended (``ended``; None: as the commands wrote it), what follows the save
    (``prefixes``: the agent key's and the wake key's for the run, and the agent's id;
    ``ahead``: the start of the agent's next turn, ``turn_ahead.ahead_args``; ``guard``:
    ``run_guard.guard_args``), then each recorded command as its word count and words."""
    after = after or AfterSave()
    lease_token = after.lease[1] if after.lease is not None else ""
    end = "" if ended is None else "1" if ended else "0"
    argv: list[Any] = [expected_seq, token, staged, end, lease_token, after.wake_ttl_s, *prefixes]
    nxt = [after.next_job] if after.next_job else []
    for items in (after.jobs, after.wake, nxt, after.unread, after.waits_for):
        argv += [len(items), *items]
    argv += clear_args(clears or [])
    argv += ride.argv() if ride is not None else [0]
    argv += [len(ahead), *ahead, len(guard), *guard]
    argv += recorded_args(command_stack)
    return argv


def parse_jobs(record: Any, seq: int) -> list[tuple[str, int]]:
    """The turns a follow-ups record of turn ``seq`` asks to schedule (none if it is
    another turn's)."""
    if not record:
        return []
    head, _, jobs = str(record).partition("|")
    if head != str(seq):
        return []
    out = []
    for job in jobs.split():
        agent, _, n = job.rpartition(":")
        out.append((agent, int(n)))
    return out
