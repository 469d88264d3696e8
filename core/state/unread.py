"""Whether a waiting agent has mail it has not read (the save script's ``unread`` check,
``core.state.turn_script``): on any of its streams, entries pending for its consumer
group, or newer than the group's last delivered one (``lag``, or the stream's last entry
on a Redis too old to say).

Part of the state room (``core.state``): Lua the save script includes. Calls nothing."""

from __future__ import annotations

# ``has_unread(streams, group)``.
UNREAD_LUA = """
local function newer(a, b)
  local am, as = string.match(a, '(%d+)-(%d+)')
  local bm, bs = string.match(b, '(%d+)-(%d+)')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am > bm or (am == bm and as > bs)
end
local function has_unread(unread, self_id)
  for _, stream in ipairs(unread) do
    local groups = redis.pcall('XINFO', 'GROUPS', stream)
    if type(groups) == 'table' and not groups.err then
      for _, g in ipairs(groups) do
        local info = {}
        for k = 1, #g, 2 do info[g[k]] = g[k + 1] end
        if info['name'] == self_id then
          if tonumber(info['pending']) > 0 then return true end
          local lag = info['lag']
          if lag then
            if tonumber(lag) > 0 then return true end
          else
            local last = redis.call('XREVRANGE', stream, '+', '-', 'COUNT', 1)
            if #last > 0 and newer(last[1][1], info['last-delivered-id']) then return true end
          end
        end
      end
    end
  end
  return false
end
"""
