-- inflight.lua takes, renews and gives back the slots of in-flight caps
-- (limiter.InFlight), one or more requests per call, each atomically: the
-- whole script runs with no other command interleaved.
--
-- A key's slots are a sorted set: one member per slot, named by a token
-- its holder made (the store's own id and a counter: unique across
-- replicas), scored by when its lease ends, in ms of Redis's TIME. Redis's
-- clock alone judges expiry, so no replica's clock step frees a slot or
-- keeps one; the set expires when its latest lease does, so a key nobody
-- holds a slot of holds no memory, whoever died holding one.
--
-- KEYS: the key of every request, in order; none for a node call (below).
-- ARGV[1]: number of requests.
-- ARGV[2]: nk, the number of keys passed in ARGV: 0, or for a node call
--          every request's key, as KEYS would hold them.
-- Then the nk keys, then per request: op, then the token; and for op "h"
-- the most slots and the lease in ms.
--
-- op "h" (hold): first drop the key's slots whose lease has ended; then,
--   if the token holds a slot, extend its lease to TIME + lease (a
--   renewal, or an acquire sent again: counted once); else take a slot if
--   fewer than the most are held (an acquire, or a renewal of a slot whose
--   lease ended: taken again only if there is room, so a renewal racing
--   an expiry never takes the cap past its most).
-- op "r" (release): give back the token's slot, if it holds one.
-- op "c" (count): count the slots whose lease has not ended, changing
--   nothing (the token is not used).
--
-- Reply: per request two integers: the verdict, then the slots the key
-- holds after it, or -1 when the key holds a value of another type (see
-- Errors; the verdict is then 0). Verdicts: for "h", 0 refused (all
-- held, or a foreign value), 1 taken, 2 held already (extended); for
-- "r", 0 none held, 1 given back; for "c", 0; -1 when the key is not on
-- this node (a node call; nothing was done, and 0 slots are reported).
--
-- A node call decides the requests of many slots of one master of a
-- Cluster, sent straight to it, declaring no key, as take.lua's node
-- calls do: each request first reads its key under pcall (EXISTS); a
-- node that does not serve the key's slot now fails that read, and the
-- request is answered -1 for the caller to send again in a call of its
-- own, with its key declared, which the client routes by MOVED and ASK.
-- A host that refuses undeclared keys refuses the first request's read,
-- and the call ends with its error before any write.
--
-- Errors: a key of another type (WRONGTYPE) refuses a hold and gives back
-- nothing, verdict 0, so that a foreign value fails closed for its key
-- alone; its held is -1, not 0, so that the caller answers the refusal
-- as a full cap's (none remaining, not the whole cap) and reports the key
-- as corrupt, as it does take.lua's -1 counts. Any other error reply ends
-- the script with that error.

local nreq = tonumber(ARGV[1])
local nk = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local K, k = KEYS, 1
local a = 3
if nk > 0 then
  K, k = ARGV, 3
  a = 3 + nk
end

-- typed runs a command on the key under pcall: nil when the key holds a
-- value of another type (corrupt: the request fails closed, for its key
-- alone), the reply otherwise; any other error ends the script. Once it
-- has succeeded the key is a sorted set, or absent, and the commands
-- after it need no pcall.
local function typed(...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then
    if string.find(r.err, '^WRONGTYPE') then
      return nil
    end
    error(r) -- the table keeps the reply's code (OOM, NOPERM) first
  end
  return r
end

local out, o = {}, 0
for _ = 1, nreq do
  local key = K[k]
  k = k + 1
  local op, token = ARGV[a], ARGV[a + 1]
  a = a + 2
  local most, lease = 0, 0
  if op == 'h' then
    most, lease = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
    a = a + 2
  end
  local verdict, held = 0, 0
  local here = true
  if nk > 0 then
    local probe = redis.pcall('EXISTS', key)
    here = type(probe) ~= 'table' or not probe.err
    if not here and o == 0 and string.find(probe.err, 'undeclared', 1, true) then
      return probe -- the host refuses undeclared keys, as in take.lua
    end
  end
  if not here then
    verdict = -1
  elseif op == 'h' then
    if typed('ZREMRANGEBYSCORE', key, '-inf', now) then
      if redis.call('ZSCORE', key, token) then
        redis.call('ZADD', key, 'GT', now + lease, token)
        verdict = 2
      elseif redis.call('ZCARD', key) < most then
        redis.call('ZADD', key, now + lease, token)
        verdict = 1
      end
      held = redis.call('ZCARD', key)
      if held > 0 then
        -- The set lasts as long as its latest lease.
        local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
        redis.call('PEXPIREAT', key, last[2])
      end
    else
      held = -1
    end
  elseif op == 'c' then
    held = typed('ZCOUNT', key, '(' .. now, '+inf') or -1
  else
    local removed = typed('ZREM', key, token)
    if removed then
      verdict = removed
      held = redis.call('ZCARD', key)
    else
      held = -1
    end
  end
  out[o + 1], out[o + 2] = verdict, held
  o = o + 2
end
return out
