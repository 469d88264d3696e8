"""The script that starts a turn in one round trip: it takes the turn's lease (``SET NX
PX``; when another delivery holds it, it says so and reads nothing: the caller polls as
before), then reads the agent's state, the run's head, this turn's delivery count (one
more, unless the agent has not reached the turn: see the script; and how many of those
raised or only waited), the run's usage and
the model's answer an earlier delivery saved, and — when the job is the agent's current
turn — reads its mail (``XREADGROUP`` over its streams: its pending entries, then new ones
unless an answer was saved, whose request was made for the pending ones only — but for a
waiting agent with none pending) with the specs of the agents that sent it. A job that is
not the agent's current turn releases the lease at once and gets the follow-ups of the
turn it is a late copy of that were never started (``core.agent.wake``). A turn of the
run's root (the head names it) reads the run's record too: the save that ends the run
then reads nothing (``core.state.turn_cas``). Done follow-up records are cleared on the
way (``turn_script.Clears``).

Nothing read is acknowledged here: the turn acknowledges what it read in its save.

Part of the state room (``core.state``): the script's text, its arguments and its reply;
``core.state.turns`` sends it. Calls nothing."""

from __future__ import annotations

from typing import Any, NamedTuple

from core.state.keys import AGENT_STATE, LEGACY_STATE_FIELD
from core.state.ledger_moves import HOLD_LUA

# Shared by the start and save scripts (``core.state.turn_script``): clear done follow-up
# records (ARGV from index i).
CLEAR_LUA = """
local function clear_done(i)
  local n = tonumber(ARGV[i])
  for k = 1, n do
    local key, seq = ARGV[i + 2 * k - 1], ARGV[i + 2 * k]
    local rec = redis.call('HGET', key, 'followup_jobs')
    if rec and string.sub(rec, 1, #seq + 1) == seq .. '|' then
      redis.call('HDEL', key, 'followup_jobs')
    end
  end
  return i + 2 * n + 1
end
"""

# The script's body as a function of its keys (``K``) and arguments (``A``), so that a
# save script may start the agent's next turn too (``core.state.turn_script``).
START_LUA = (
    f"local AGENT_STATE, LEGACY_STATE = '{AGENT_STATE}', '{LEGACY_STATE_FIELD}'\n"
    + """
local function start_turn(K, A)
  local leased = A[3] ~= '0'
  -- (holding it already: this very call sent again after its reply was lost)
  if leased and not redis.call('SET', K[2], A[2], 'NX', 'PX', A[3])
    and redis.call('GET', K[2]) ~= A[2] then
    return {0}
  end
  -- The state is read only to be sent back, not when the caller holds it: tens of KB
  -- copied into the script cost Redis more than the rest of a start. It has a key of its
  -- own (the hash's + AGENT_STATE); an agent not saved since it had one keeps it in the hash.
  local skey = K[1] .. AGENT_STATE
  local has = redis.call('EXISTS', skey) == 1
  local in_hash = not has and redis.call('HEXISTS', K[1], LEGACY_STATE) == 1
  has = has or in_hash
  local f = redis.call('HMGET', K[1], 'seq', 'status', 'team', 'followup_jobs', 'followups',
    'commit_token')
  local field = A[4]
  local head = redis.call('GET', K[3])
  local seq = tonumber(A[1])
  local current = has and tonumber(f[1]) == seq and f[2] ~= 'finished' and f[2] ~= 'failed'
  -- A copy of a turn the agent has not reached (a failover lost the save before it, while
  -- the turn's job lived on) is not counted: it does nothing, and counted it would be held
  -- against that turn once the agent gets there (the quarantine's count). Nor is a job of
  -- an agent that does not exist.
  local deliveries
  if has and (tonumber(f[1]) or -1) >= seq then
    deliveries = redis.call('HINCRBY', K[4], field, 1)
  else
    deliveries = tonumber(redis.call('HGET', K[4], field) or '0')
  end
  local counts = redis.call('HMGET', K[4], field .. ':failed', field .. ':waited')
  local failed, waited = counts[1], counts[2]
  local usage = redis.call('HGETALL', K[5])
  local saved = redis.call('HGET', K[6], field)
  local pending, fresh, senders, redo, legacy = false, false, {}, {}, false
  if current then
    local team = f[3]
    if not team then
      local ok, spec = pcall(cjson.decode, redis.call('HGET', K[1], 'spec') or '')
      team = ok and type(spec) == 'table' and spec['team_id'] or ''
      if type(team) ~= 'string' then team = '' end
    end
    local streams = {A[6], A[7]}
    if team ~= '' then streams[3] = A[8] .. team end
    local function read(from)
      local args = {'XREADGROUP', 'GROUP', A[5], A[5], 'COUNT', A[9], 'STREAMS'}
      for _, s in ipairs(streams) do args[#args + 1] = s end
      for _ = 1, #streams do args[#args + 1] = from end
      local reply = redis.call(unpack(args))
      if type(reply) == 'table' and type(reply[1]) == 'string' then
        -- (fakeredis answers with stream, entries, stream, … where Redis nests the pairs)
        local pairs_of = {}
        for k = 1, #reply, 2 do pairs_of[#pairs_of + 1] = {reply[k], reply[k + 1]} end
        reply = pairs_of
      end
      -- only the streams with entries: the reply is parsed by the client (3 empty ones cost
      -- more than the rest of a turn's usual reply)
      local kept = {}
      for _, s in ipairs(type(reply) == 'table' and reply or {}) do
        if type(s[2]) == 'table' and #s[2] > 0 then kept[#kept + 1] = s end
      end
      return kept
    end
    pending = read('0')
    -- An answer saved for this turn was made for the mail pending then: no newer mail is
    -- read, so that the request is the same. A waiting agent's turn with nothing pending
    -- had its mail lost by a failover (read on the old primary, the answer saved on the new
    -- one by the call keeper): it reads new mail, or it would find none, sleep, and be woken
    -- for it at once, again and again (the answer is reused only if the request is the
    -- same). A running agent's answer made for no mail is kept to (newer mail waits for the
    -- next turn: no call asked again).
    local waiting = f[2] == 'waiting' or f[2] == 'waiting_human'
    if not saved or (waiting and #pending == 0) then fresh = read('>') end
    local seen = {[A[5]] = true}
    for _, reply in ipairs({pending or {}, fresh or {}}) do
      for _, s in ipairs(reply) do
        for _, entry in ipairs(type(s[2]) == 'table' and s[2] or {}) do
          local fields = entry[2]
          if fields then
            for k = 1, #fields, 2 do
              if fields[k] == 'm' then
                local sender = string.match(fields[k + 1], '"sender":"([^"]+)"')
                if sender and not seen[sender] then
                  seen[sender] = true
                  local found = redis.call('HMGET', A[10] .. sender, 'spec', 'status')
                  senders[#senders + 1] = sender
                  senders[#senders + 1] = found[1]
                  senders[#senders + 1] = found[2]
                end
              end
            end
          end
        end
      end
    end
  else
    if leased then redis.call('DEL', K[2]) end
    local rec = f[4]
    legacy = f[5]
    if has and A[11] == '1' and tonumber(f[1]) == seq + 1 and rec
      and string.sub(rec, 1, #A[1] + 1) == A[1] .. '|' then
      for job in string.gmatch(string.sub(rec, #A[1] + 2), '%S+') do
        local started = redis.call('HGET', K[4], job)
        if not started or tonumber(started) == 0 then redo[#redo + 1] = job end
      end
    end
  end
  -- The state as this process saved it (the same save's token), or created it (no save
  -- since: no token; the caller's is '-'): not sent back.
  local state = false
  if has and A[12] ~= '' and (f[6] == A[12] or (A[12] == '-' and not f[6])) then
    state = '='
  elseif in_hash then
    state = redis.call('HGET', K[1], LEGACY_STATE)
  elseif has then
    state = redis.call('GET', skey)
  end
  -- The root's turn reads the run's record too (the head names it; the record's key is
  -- the head's without ':head'): the save that ends the run needs no read of its own.
  local run = false
  if current and head and string.find(head, '"root_agent_id":"' .. A[5] .. '"', 1, true) then
    run = redis.call('GET', string.sub(K[3], 1, #K[3] - 5))
  end
  return {1, state, head, deliveries, failed, usage, saved, pending, fresh, senders, redo,
    current and 1 or 0, legacy, waited, run}
end
"""
)

# A save's start of the one agent it woke (``core.state.turn_ahead_wake``): ``W`` = {'wake',
# lease key prefix, head, deliveries, usage, saved answers, token, ms, inbox prefix,
# broadcast, team prefix, entries, agent prefix, held token}; false unless the save
# schedules that wake-up alone (its agent and seq from the claim: ``jobs[1]``).
WAKE_LUA = """
local function wake_start(W, jobs, wake, next_job)
  if #jobs ~= 1 or #wake ~= 1 or next_job[1] then return false end
  local id, seq = string.match(jobs[1], '^(.*):(%d+)$')
  if id ~= wake[1] then return false end
  local K = {W[13] .. id, W[2] .. id .. ':' .. seq, W[3], W[4], W[5], W[6]}
  return start_turn(K, {seq, W[7], W[8], id .. ':' .. seq, id, W[9] .. id, W[10], W[11],
    W[12], W[13], '0', W[14]})
end
"""

# KEYS: the agent's hash, the turn's lease, the run's head, its deliveries, its usage, its
# saved answers. ARGV: seq, lease token, lease ms (0: no lease), "<agent>:<seq>", the
# agent's id, its inbox, the broadcast stream, the team stream's prefix, how many entries
# to read, the agent key prefix, whether to look for follow-ups to redo (1/0), the token of
# the save whose state the caller holds ("" if none), the clears, then a Celery task's hold
# of its turn in the turn ledger (``core.state.ledger_moves.HOLD_LUA``; none: nothing).
START_SCRIPT = (
    CLEAR_LUA
    + START_LUA
    + HOLD_LUA
    + "ledger_hold(clear_done(13))\nreturn start_turn(KEYS, ARGV)\n"
)


# ``StartReply.state`` when the agent's state is the one the caller saved last (``held``).
HELD = "="
# The token held with the state of an agent the caller created (its hash has none until
# its first save).
CREATED = "-"


class StartReply(NamedTuple):
    """The script's reply, unparsed (the turns module parses the records, the bus the
    mail)."""

    # The state's JSON; :data:`HELD` when it is still the one the caller holds.
    state: str | None
    head: str | None
    deliveries: int
    failures: int
    usage: dict[str, str]
    saved: str | None
    # XREADGROUP replies, the streams without entries left out: the pending entries, then
    # the new ones (None: not read).
    pending: Any
    fresh: Any
    # The senders of the mail: id → (spec JSON, status), None for one that is no agent.
    senders: dict[str, tuple[str, str] | None]
    # A late copy's follow-ups never started: "<agent>:<seq>" each.
    redo: list[str]
    # The turn is the agent's current one (its lease is held; else released).
    current: bool
    # A follow-ups record written before the records were job lists (JSON), if any.
    legacy: str | None = None
    # Of the earlier deliveries, how many ended waiting on purpose: woken by mail while a
    # call waits for a person's approval (``agents.release_waiting``), not deaths.
    waits: int = 0
    # The run's record (JSON), read with a turn of its root agent (``core.state.turn_cas``).
    run: str | None = None


def start_args(
    seq: int,
    token: str,
    lease_ms: int,
    field: str,
    agent_id: str,
    streams: tuple[str, str, str],
    drain_max: int,
    agent_prefix: str,
    redo: bool,
    clears: list[Any],
    held: str = "",
) -> list[Any]:
    """ARGV for :data:`START_SCRIPT` (``streams``: inbox, broadcast, team prefix)."""
    return [
        seq,
        token,
        lease_ms,
        field,
        agent_id,
        *streams,
        drain_max,
        agent_prefix,
        1 if redo else 0,
        held,
        *clears,
    ]


def parse_start(reply: Any) -> StartReply | None:
    """The reply, or None when another delivery holds the lease."""
    if not reply or int(reply[0]) == 0:
        return None
    raw_usage = reply[5] or []
    usage = dict(zip(raw_usage[::2], raw_usage[1::2], strict=True))
    found = reply[9] or []
    senders = {
        found[k]: None if found[k + 1] is None else (found[k + 1], found[k + 2])
        for k in range(0, len(found), 3)
    }
    return StartReply(
        state=reply[1],
        head=reply[2],
        deliveries=int(reply[3]),
        failures=int(reply[4] or 0),
        usage=usage,
        saved=reply[6],
        pending=reply[7],
        fresh=reply[8],
        senders=senders,
        redo=list(reply[10] or []),
        current=bool(int(reply[11])),
        legacy=reply[12] if len(reply) > 12 else None,
        waits=int(reply[13] or 0) if len(reply) > 13 else 0,
        run=reply[14] or None if len(reply) > 14 else None,
    )
