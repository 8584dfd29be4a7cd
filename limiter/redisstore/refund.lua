-- refund.lua returns a charge to the windows of one request that are still
-- current, never below zero, atomically. It creates no key and moves no
-- expiry.
--
-- KEYS: the key of each window to refund (with the application's clock,
--       only those the caller found still current; their names hold the
--       window charged).
-- ARGV[1]: clock, "a" or "s" (Redis's TIME: a window is refunded only if
--          it is both the one charged and the current one; its key holds
--          "<window id>:<count>").
-- ARGV[2]: the cost to return.
-- Then per key: the id of the window charged, its start and its end (ms):
--          TIME must lie in [start, end) (a calendar window's bounds come
--          from the zone's rules, which Lua does not have).
--
-- A value the store did not write is left alone (nothing to return to);
-- any other error reply ends the script with it. It calls MGET, SET and
-- INCRBY alone, commands the least-privilege ACL user of docs/redis.md
-- has (GET and DECRBY it has not).

local server = ARGV[1] == 's'
local cost = tonumber(ARGV[2])
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

local refunded = 0
for i, key in ipairs(KEYS) do
  local charged = ARGV[3 * i]
  local start, stop = tonumber(ARGV[3 * i + 1]), tonumber(ARGV[3 * i + 2])
  if server then
    -- "<window id>:<count>" (see take.lua).
    local v = get(key)
    if type(v) == 'table' then
      return v
    end
    local id, c
    if type(v) == 'string' then
      id, c = string.match(v, '^(%d+):(%d+)$')
      c = c and count(c)
    end
    if c and id == charged and start <= tnow and tnow < stop then
      redis.call('SET', key, id .. string.format(':%.0f', c - math.min(cost, c)), 'KEEPTTL')
      refunded = refunded + 1
    end
  else
    local v = get(key)
    if type(v) == 'table' then
      return v
    end
    local c = count(v)
    if c and c > 0 then
      redis.call('INCRBY', key, -math.min(cost, c))
      refunded = refunded + 1
    end
  end
end
return refunded
