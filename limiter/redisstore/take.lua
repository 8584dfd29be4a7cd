-- take.lua decides one or more rate-limit requests atomically: the whole
-- script runs with no other command interleaved. Each request is decided in
-- turn, all-or-nothing over the windows of its policy, by the rule of
-- limiter.Decide; the Go side recomputes the Decision from the counts this
-- script returns and checks that both verdicts agree.
--
-- KEYS: the key of every window of every request, in order; none for a
--       node call (below).
-- ARGV[1]: clock, "a" (the application's: the window id is in each key, and
--          each request carries its instant) or "s" (Redis's TIME).
-- ARGV[2]: expiry margin in ms, added to the window's end.
-- ARGV[3]: number of requests.
-- ARGV[4]: nk, the number of keys passed in ARGV: 0, or for a node call
--          every request's keys, as KEYS would hold them, after the
--          policies.
-- ARGV[5]: np, the number of policies.
-- ARGV[6]: the cost of every request of the call (>= 0) when they all
--          have the same and none asks for a lease or peeks; -1 when each
--          request carries its own (below).
-- ARGV[7]: at0: with clock "a", the earliest instant (ms) of the
--          requests of the call; 0 with clock "s".
-- ARGV[8]: 1 when each request carries its instant as an offset from
--          at0 (below), 0 when every request's instant is at0.
--          (ARGV[6] to ARGV[8] may be left out of a call of no request.)
-- ARGV[9] on: per policy: n windows, then n
--          pairs of limit, window_ms; a calendar rate (a day, a week or a
--          month in a time zone, whose windows come from the zone's rules,
--          which Lua does not have) sends -nominal_ms instead, its usual
--          length (a day 24 h, a month 28 days), the length it takes as
--          the policy's shortest window. With clock "s", after the pairs,
--          for each calendar rate the starts of three consecutive windows
--          and the end of the last, around the client's own clock: the
--          script decides in the one that holds TIME. Each policy is sent
--          once per call, whatever the number of its requests.
-- Then the nk keys, then per request, as few arguments as it needs:
--          the policy's place (1..np), only when np > 1; with clock "a",
--          now_ms - at0 when ARGV[8] is 1, then the end (ms) of the
--          request's window of each calendar rate (the start is its key's
--          id); then, unless ARGV[6] gave it, cost (>= 0), or -(cost + 1)
--          followed by want, the lease asked for (>= 0; see lease.go), or
--          -1 for a peek.
--
-- Reply: with clock "s", {sec, usec} of TIME first (nothing with clock
--        "a"); then per request its verdict: 1 + granted when admitted
--        (granted: the units leased), 0 when refused, -1 when its keys are
--        not on this node, -2 when TIME (or the instant a window ahead
--        moved it to) lies outside the calendar windows sent for its
--        policy, so that no window can be named for it (the client's clock
--        and Redis's differ by about a window); with clock "s", a request
--        decided at an instant other than TIME's millisecond (a window
--        ahead, below) has its verdict v sent as -(v + 3), followed by
--        that instant in ms; then the count found in each window before
--        this request (-1 when corrupt). -1 and -2 charged nothing.
--
-- A node call decides the requests of many slots that one master of a
-- Cluster serves, in one script run sent straight to that master. It
-- declares no key, so Redis neither redirects it nor runs it under
-- ASKING, and it touches every key undeclared, which Redis allows a
-- script without flags, across slots, for the slots this node serves now.
-- Each request first reads all of its keys (one slot: they share a hash
-- tag) in one multi-key command under pcall, before any write: if the
-- node does not serve them all now (the slot moved; it is migrating and
-- some or all of them have left, TRYAGAIN or ASK; it is importing, where
-- only ASKING would be served; the node is a replica now, on a
-- connection without READONLY; the cluster is down) that read fails, and
-- the request is answered -1, charged nothing, for the caller to send
-- again in a call of its own, with its keys declared, which the client
-- routes by MOVED and ASK. Once that read has succeeded, every later
-- command of the request touches only those keys, on this node, in this
-- same atomic run. (A cluster down with cluster-allow-reads-when-down
-- passes the read and refuses the first write: the whole call fails and,
-- no write having been made, nothing is charged.) A host that refuses
-- every undeclared key (DragonflyDB by default) refuses the first
-- request's read: the call then ends with that error, before any write,
-- for the caller to send its requests again with their keys declared.
--
-- Leases: an admitted request that wants w > 0 is also charged
-- g = min(w, min over its windows of limit - count - cost) in every
-- window, all in this one atomic step, so the sum of leases and direct
-- charges in a window never exceeds its limit. A refusal leases nothing.
--
-- Errors: a value the script did not write (not a plain count, a malformed
-- window id, another type: WRONGTYPE) is corruption, refused for its key
-- alone. Any other error reply of a command (NOPERM, OOM, ...) ends the
-- script with that error: the call fails, named for it, and requests
-- decided earlier in the same call may have been charged, as for any
-- call whose reply is lost.
--
-- Storage: a string per key, which one MGET reads for every request of a
-- call. Clock "a" keeps a plain integer (the key names its window); clock
-- "s" keeps "<window id>:<count>", the window by Redis's TIME beside its
-- count under one key per window length (the key cannot name a window the
-- caller does not know), so that a stored window ahead of TIME is seen
-- (below) and one key, declared by the caller, is all a window needs.
--
-- Expiry is set only when a window's count is created (SET ... PX, or
-- PXAT with clock "s"), never on later calls (SET ... KEEPTTL), so traffic cannot
-- push a window's end back. A refusal writes no count; the one write it may
-- make is to give a key found with no expiry at all the expiry it should
-- have had (it never changes an existing expiry). Such a key is looked for
-- on a refusal and when an admission takes a count across a power of two
-- (below).

local server = ARGV[1] == 's'
local margin = tonumber(ARGV[2])
local nreq = tonumber(ARGV[3])
local nk = tonumber(ARGV[4])
local np = tonumber(ARGV[5])
local callCost = tonumber(ARGV[6])
local at0 = tonumber(ARGV[7])
local offsets = ARGV[8] == '1'
local sec, usec, tnow = 0, 0, 0
if server then
  local t = redis.call('TIME')
  sec, usec = tonumber(t[1]), tonumber(t[2])
  tnow = sec * 1000 + math.floor(usec / 1000)
end

-- window returns the id and the end (ms) of the window of the policy's
-- i'th rate that holds the instant t: for a window of fixed length, its
-- number since the epoch; for a calendar rate, the start, among the
-- windows sent, of the one that holds t (nil when none does).
local function window(pl, i, t)
  local b = pl.cal[i]
  if b == nil then
    local id = math.floor(t / pl.wms[i])
    return id, (id + 1) * pl.wms[i]
  end
  for j = 1, 3 do
    if b[j] <= t and t < b[j + 1] then
      return b[j], b[j + 1]
    end
  end
  return nil, nil
end

-- The policies: per policy its windows' limits and lengths, and the
-- shortest window (the bound of a window ahead, below); its calendar
-- rates (cal[i]: with clock "s", the window bounds sent; with clock "a",
-- true) and how many there are; with clock "s", each window's current id
-- and end by TIME, and that id as HSET writes it, which a stored id is
-- compared with before it is parsed (off: TIME lies outside a calendar
-- rate's windows).
local pols, a = {}, 9
for p = 1, np do
  local n = tonumber(ARGV[a])
  local pl = {n = n, lim = {}, wms = {}, cal = {}, ncal = 0, id = {}, ids = {}}
  for i = 1, n do
    local l, w = tonumber(ARGV[a + 2 * i - 1]), tonumber(ARGV[a + 2 * i])
    if w < 0 then
      w = -w
      pl.cal[i] = true
      pl.ncal = pl.ncal + 1
    end
    pl.lim[i], pl.wms[i] = l, w
    if pl.shortest == nil or w < pl.shortest then
      pl.shortest = w
    end
  end
  a = a + 1 + 2 * n
  if server then
    for i = 1, n do
      if pl.cal[i] then
        pl.cal[i] = {tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])}
        a = a + 4
      end
    end
    pl.ends = {}
    for i = 1, n do
      pl.id[i], pl.ends[i] = window(pl, i, tnow)
      if pl.id[i] == nil then
        pl.off = true
      else
        pl.ids[i] = string.format('%.0f', pl.id[i])
      end
    end
  end
  pols[p] = pl
end
-- K[k] is the first key of the request being decided: KEYS from KEYS[1],
-- or for a node call ARGV, read in place after the policies.
local K, k = KEYS, 1
if nk > 0 then
  K, k = ARGV, a
  a = a + nk
end
local exact = 9007199254740992 -- 2^53: counts above are clamped (and refused)

-- parse reads a stored count: nil when absent, -1 when corrupt. Only a
-- plain decimal integer as INCRBY writes it (no sign, no leading zero, at
-- most 18 digits: within INCRBY's range) is a count; anything else ("5.0",
-- "1e1", " 5", "0x5", which Lua's tonumber would take but INCRBY refuses)
-- is corrupt, as is a foreign value of the wrong type. Corruption is
-- refused with its value left as it is, rather than raised (the one write
-- is the expiry of a key found with none, so that it heals when its window
-- ends): an error would abort
-- the script, whose other requests in the same call would then have been
-- charged without an answer. A number is a count this call wrote.
local function parse(v)
  if v == false or v == nil then
    return nil
  end
  if type(v) == 'number' then
    return v
  end
  if type(v) ~= 'string' or #v > 18 or not string.find(v, '^%d+$')
      or (#v > 1 and string.byte(v, 1) == 48) then
    return -1
  end
  local c = tonumber(v)
  if c > exact then
    return exact
  end
  return c
end

-- crosses reports whether adding d to the count c (both whole, at least
-- zero) takes it across a power of two: to 2^e, the least power above c
-- (math.frexp: 1 for c = 0), or past 2^31. Plain arithmetic, not the bit
-- library, which miniredis lacks; TestCrossesMatchesBitXor checks it
-- against the bit.bxor form it replaced.
local function crosses(c, d)
  local _, e = math.frexp(c)
  return c + d >= 2147483648 or c + d >= 2 ^ e
end

-- seen memoises parse per value for the call: counts repeat across keys,
-- and a table lookup costs less than the pattern.
local seen = {}
local function count(v)
  local c = seen[v]
  if c == nil and v then
    c = parse(v)
    seen[v] = c
  end
  return c
end

-- windowID parses a stored window id: nil unless a plain whole number of
-- at most 15 digits (ids are ms / window, or a calendar window's start in
-- ms, below 10^15 until the year 33658), which Lua holds exactly, with no
-- leading zero.
local function windowID(v)
  if type(v) ~= 'string' or #v > 15 or not string.find(v, '^%d+$')
      or (#v > 1 and string.byte(v, 1) == 48) then
    return nil
  end
  return tonumber(v)
end

-- Every count is a string: one MGET reads all the keys of the call (of
-- each request, in a node call: an MGET may not cross slots). known holds
-- what this call has written since, for requests that repeat a key.
local mget, base, known = nil, 0, {}
if nk == 0 and #KEYS > 0 then
  mget = redis.call('MGET', unpack(KEYS))
end

-- split reads a stored "<window id>:<count>" (clock "s"): the id as
-- stored and the count, both nil when absent; a value of another form is
-- corrupt: the id "corrupt" (never a window) and the count -1. The id is
-- checked as windowID checks it (below), the count as parse does.
local seenID, seenCount = {}, {}
local function split(v)
  if v == false or v == nil then
    return nil, nil
  end
  local id = seenID[v]
  if id ~= nil then
    return id, seenCount[v]
  end
  local c
  id, c = string.match(v, '^(%d+):(%d+)$')
  if id == nil or #id > 15 or (#id > 1 and string.byte(id, 1) == 48) then
    id, c = 'corrupt', -1
  else
    c = parse(c)
  end
  seenID[v], seenCount[v] = id, c
  return id, c
end

local out, o = {}, 0
if server then
  out[1], out[2], o = sec, usec, 2
end
local first = o -- the reply's length before any request

-- undecided answers a request of n windows that was not decided (verdict
-- -1 or -2, above), and charged nothing.
local function undecided(verdict, n)
  o = o + 1
  out[o] = verdict
  for _ = 1, n do
    o = o + 1
    out[o] = 0
  end
end
-- Per-window scratch, reused by every request (Lua tables cost more than
-- the commands they would save).
local cnt, found, fresh, ends, bare, ws, wid = {}, {}, {}, {}, {}, {}, {}

-- ttl returns, with clock "a", how long the window of the policy's i'th
-- rate that holds now has left, plus the margin: the expiry of its count.
-- A calendar window's end was sent, in ends.
local function ttl(pl, i, now)
  local e = ends[i]
  if not pl.cal[i] then
    local w = pl.wms[i]
    e = (math.floor(now / w) + 1) * w
  end
  return e - now + margin
end

local pl = pols[1]
for _ = 1, nreq do
  if np > 1 then
    pl = pols[tonumber(ARGV[a])]
    a = a + 1
  end
  local now = 0
  if not server then
    now = at0
    if offsets then
      now = at0 + tonumber(ARGV[a])
      a = a + 1
    end
    if pl.ncal > 0 then
      for i = 1, pl.n do
        if pl.cal[i] then
          ends[i] = tonumber(ARGV[a])
          a = a + 1
        end
      end
    end
  end
  -- costArg is the cost as the client sent it, passed on to INCRBY as it
  -- is; a lease adds to it (below).
  local costArg, cost = ARGV[6], callCost
  local peek, want = false, 0
  if cost < 0 then
    costArg = ARGV[a]
    cost = tonumber(costArg)
    a = a + 1
  end
  if cost < 0 then
    cost, costArg = -cost - 1, nil
    want = tonumber(ARGV[a])
    a = a + 1
    if want < 0 then
      peek, want = true, 0
    end
  end
  local n, lim, wms, shortest = pl.n, pl.lim, pl.wms, pl.shortest

  -- A node call: is this request's slot here? (See the top.)
  local here = true
  if nk > 0 then
    local probe = redis.pcall('MGET', unpack(K, k, k + n - 1))
    mget, base = probe, k - 1
    here = type(probe) ~= 'table' or not probe.err
    if not here and o == first and string.find(probe.err, 'undeclared', 1, true) then
      return probe -- the host refuses undeclared keys (see the top)
    end
  end

  if not here then
    undecided(-1, n)
  elseif server and pl.off then
    undecided(-2, n)
  else
    -- named: every window could be named at the instant decided at;
    -- allowed: every window has room for the cost.
    local named, allowed = true, true
    if server then
      -- Read every window first. A stored window id ahead of TIME's (Redis's
      -- clock stepped back: an NTP step, a failover to a node whose clock
      -- lags) follows the memory store's rule for a window ahead: a window
      -- that starts after TIME by at most the request's shortest window is
      -- the one a racing or slightly faster clock already decides in, so the
      -- request is decided at that window's start (a count is never
      -- rewound); further ahead, it is stale and the current window starts
      -- afresh, with a fresh expiry. The bound is the shortest window, not
      -- the stored window's own, so that a minute stored one ahead after a
      -- step back of 30 s does not decide 30 s of requests in one second of a
      -- per-second window. Either way a step of any size costs at most one
      -- window of wrong answers. Every window is then decided at the one
      -- instant chosen.
      now = tnow
      for i = 1, n do
        local key = K[k + i - 1]
        local v = known[key]
        if v == nil then
          v = mget[k + i - 1 - base]
          if v == false and redis.call('EXISTS', key) == 1 then
            v = '-' -- a foreign value of another type: corrupt
          end
        end
        local id, c = split(v)
        cnt[i], wid[i] = c or 0, id
        if id == pl.ids[i] then
          ws[i], found[i] = pl.id[i], true -- the current window: the common case
        else
          ws[i] = windowID(id)
          found[i] = id ~= nil
          -- Only a malformed id (not a plain whole number) is corrupt:
          -- refused, its value left as it is, and never allowed to move the
          -- instant decided at.
          if found[i] and ws[i] == nil then
            cnt[i] = -1
          end
        end
        if ws[i] ~= nil and ws[i] ~= pl.id[i] then
          local start = ws[i] -- a calendar window's id is its start
          if not pl.cal[i] then
            start = ws[i] * wms[i]
          end
          if start > tnow and start - tnow <= shortest and start > now then
            now = start
          end
        end
      end
      for i = 1, n do
        local id, e = pl.id[i], pl.ends[i]
        if now ~= tnow then
          id, e = window(pl, i, now)
        end
        if id == nil then
          named = false -- moved past the calendar windows sent
          break
        end
        ends[i] = e
        fresh[i] = nil
        local c = cnt[i]
        if not found[i] or ws[i] ~= nil and ws[i] ~= id then
          c = 0
          cnt[i], fresh[i] = c, id
        end
        if fresh[i] ~= nil then
          wid[i] = string.format('%.0f', id)
        end
        if cost > lim[i] or c < 0 or c > lim[i] - cost then
          allowed = false
        end
      end
    else
      for i = 1, n do
        local key = K[k + i - 1]
        local v = known[key]
        if v == nil then
          v = mget[k + i - 1 - base]
          if v == false and redis.call('EXISTS', key) == 1 then
            v = '-1' -- a foreign value of another type: corrupt
          end
        end
        local c = seen[v]
        if c == nil then
          c = count(v)
        end
        found[i] = c ~= nil
        c = c or 0
        cnt[i] = c
        if cost > lim[i] or c < 0 or c > lim[i] - cost then
          allowed = false
        end
      end
    end

    if not named then
      undecided(-2, n)
    else
      -- The lease: what every window can spare after this request.
      local granted = 0
      if allowed and not peek and want > 0 then
        granted = want
        for i = 1, n do
          granted = math.min(granted, lim[i] - cnt[i] - cost)
        end
        if granted > 0 then
          costArg = cost + granted
        else
          granted = 0
        end
      end
      costArg = costArg or cost

      if not peek then
        -- A key found with no expiry (a foreign PERSIST, a restore) is
        -- looked for only where one matters: a refusal, which is how a bare
        -- key would lock its client out (a full or corrupt count that never
        -- ends), and an admission that takes a window's count across a
        -- power of two (to 1, 2, 4, 8, ...), so that a bare key never
        -- refused is still repaired once it has taken as many admissions
        -- again as it had, and does not outlive its window for ever. That
        -- is a PTTL per window every log2(limit) admissions instead of one
        -- per admission. A fresh window (clock "s") is given its expiry
        -- anyway.
        local charged = cost + granted
        for i = 1, n do
          local c = cnt[i]
          bare[i] = found[i] and (not allowed or fresh[i] == nil and crosses(c, charged))
              and redis.call('PTTL', K[k + i - 1]) == -1
        end
        for i = 1, n do
          local key = K[k + i - 1]
          if server then
            if allowed then
              local v = wid[i] .. string.format(':%.0f', cnt[i] + charged)
              if fresh[i] ~= nil then
                redis.call('SET', key, v, 'PXAT', ends[i] + margin)
              elseif bare[i] then
                redis.call('SET', key, v, 'PXAT', ends[i] + margin)
              else
                redis.call('SET', key, v, 'KEEPTTL')
              end
              known[key] = v
            elseif bare[i] then
              redis.call('PEXPIREAT', key, ends[i] + margin)
            end
          elseif allowed and found[i] then
            known[key] = redis.call('INCRBY', key, costArg)
            if bare[i] then
              redis.call('PEXPIRE', key, ttl(pl, i, now))
            end
          elseif allowed then
            redis.call('SET', key, costArg, 'PX', ttl(pl, i, now))
            known[key] = cost + granted
          elseif bare[i] then
            redis.call('PEXPIRE', key, ttl(pl, i, now))
          end
        end
      end

      local verdict = allowed and 1 + granted or 0
      if server and now ~= tnow then
        out[o + 1], out[o + 2] = -verdict - 3, now
        o = o + 2
      else
        o = o + 1
        out[o] = verdict
      end
      for i = 1, n do
        o = o + 1
        out[o] = cnt[i]
      end
    end
  end
  k = k + n
end
return out
