-- refund.lua returns a charge to the windows of one request that are still
-- current, never below zero, atomically. It creates no key and moves no
-- expiry.
--
-- KEYS: the key of each window to refund (with the application's clock,
--       only those the caller found still current; their names hold the
--       window charged), then, in the same order, each window's reset
--       mark (reset.lua).
-- ARGV[1]: clock, "a" or "s" (Redis's TIME: a window is refunded only if
--          it is both the one charged and the current one; its key holds
--          "<window id>:<count>").
-- ARGV[2]: the cost to return.
-- ARGV[3]: the instant the charge was decided at, ms (the limiter's
--          clock, or Redis's TIME under clock "s"): a window whose reset
--          mark is at or after it gets nothing back, since the Reset
--          ended the budget the charge was counted in.
-- ARGV[4], ARGV[5]: a second part of the return, its units (0 for none)
--          and its instant, in the same windows: what a replica's lease
--          held of earlier grants (giveback.go).
-- Then per key: the id of the window charged, its start and its end (ms):
--          TIME must lie in [start, end) (a calendar window's bounds come
--          from the zone's rules, which Lua does not have).
--
-- Reply: how many units were returned, to the window that got the most
-- (a layered policy's windows may hold less than the cost).
--
-- A value the store did not write is left alone (nothing to return to);
-- any other error reply ends the script with it. It calls MGET, SET and
-- INCRBY alone, commands the least-privilege ACL user of docs/redis.md
-- has (GET and DECRBY it has not).

local server = ARGV[1] == 's'
local cost, at = tonumber(ARGV[2]), tonumber(ARGV[3])
local older, olderAt = tonumber(ARGV[4]), tonumber(ARGV[5])
local tnow = 0
if server then
  local t = redis.call('TIME')
  tnow = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function count(v)
  if type(v) ~= 'string' or #v > 18 or not string.find(v, '^%d+$') then
    return nil
  end
  return tonumber(v)
end

-- get returns key's string value, false for none (or a value of another
-- type, which MGET answers as none), or the error reply.
local function get(key)
  local r = redis.pcall('MGET', key)
  if r.err then
    return r
  end
  return r[1]
end

local m = #KEYS / 2
local returned = 0
for i = 1, m do
  local key = KEYS[i]
  local charged = ARGV[3 * i + 3]
  local start, stop = tonumber(ARGV[3 * i + 4]), tonumber(ARGV[3 * i + 5])
  local mark = get(KEYS[m + i])
  if type(mark) == 'table' then
    return mark
  end
  mark = tonumber(mark)
  local want = 0
  if mark == nil or mark < at then
    want = cost
  end
  if mark == nil or mark < olderAt then
    want = want + older
  end
  if want > 0 then
    local v = get(key)
    if type(v) == 'table' then
      return v
    end
    if server then
      -- "<window id>:<count>" (see take.lua).
      local id, c
      if type(v) == 'string' then
        id, c = string.match(v, '^(%d+):(%d+)$')
        c = c and count(c)
      end
      if c and id == charged and start <= tnow and tnow < stop then
        local back = math.min(want, c)
        redis.call('SET', key, id .. string.format(':%.0f', c - back), 'KEEPTTL')
        returned = math.max(returned, back)
      end
    else
      local c = count(v)
      if c and c > 0 then
        local back = math.min(want, c)
        redis.call('INCRBY', key, -back)
        returned = math.max(returned, back)
      end
    end
  end
end
return returned
