-- reset.lua forgets one client key's counts under one policy and marks
-- the reset, atomically, so that a Reset starts exactly one fresh
-- budget: a charge made before it is never returned into the counts
-- after it. refund.lua and settle.lua (its returns) read the mark of
-- each window they would return to, and return nothing for a charge
-- decided at or before it: a refund of a request admitted before the
-- Reset, a settle below its reservation, and the units a replica's lease
-- held unspent, leased before the Reset (their instant is the grant's).
-- A charge is never refused, before a Reset or after it.
--
-- KEYS: the nc count keys to delete (every window of the policy: under
--       clock "a" those before, at and after the instant, whose names
--       hold their window), then one mark per rate of the policy, in the
--       client key's hash tag: "<count key of the window, no id>:reset".
-- ARGV[1]: clock, "a" (the instant is ARGV[2], the limiter's) or "s"
--          (Redis's TIME).
-- ARGV[2]: the reset's instant, ms (clock "a").
-- ARGV[3]: nc.
-- Then per mark: how long it lives, ms: its window's length and the
--          expiry margin, so that it outlives every charge a return could
--          still reach (a return goes only to a window still current).
--
-- A mark is never moved back: a Reset whose instant is before a mark's
-- (another replica's clock ahead) leaves it. Reply: the instant marked.
-- It calls DEL, MGET, SET and TIME, commands the least-privilege ACL
-- user of docs/redis.md has.

local at = tonumber(ARGV[2])
if ARGV[1] == 's' then
  local t = redis.call('TIME')
  at = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local nc = tonumber(ARGV[3])
if nc > 0 then
  redis.call('DEL', unpack(KEYS, 1, nc))
end
local marks = {}
for i = nc + 1, #KEYS do
  marks[#marks + 1] = KEYS[i]
end
if #marks > 0 then
  local old = redis.call('MGET', unpack(marks))
  for j, key in ipairs(marks) do
    local prev = tonumber(old[j])
    if prev == nil or prev < at then
      redis.call('SET', key, string.format('%.0f', at), 'PX', ARGV[3 + j])
    end
  end
end
return at
