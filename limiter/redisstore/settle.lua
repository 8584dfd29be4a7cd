-- settle.lua settles admissions, one or more per call, each atomically
-- and at most once (limiter.Settler): what a request cost beyond its
-- reservation is charged to the windows current at the settle, whatever
-- their count (a settle is never refused: a key may go past its limit,
-- into debt, which take.lua then refuses until the window ends); what it
-- cost below its reservation goes back to the windows its admission
-- charged that are still current, never below zero, never to a later
-- window, as refund.lua returns a charge.
--
-- At most once: each settle names a marker key, in its client key's hash
-- tag, made of a token its store drew (the store's random id and a
-- counter: unique across replicas). A settle whose marker is there has
-- been applied already (its first call's reply was lost, and the store
-- sent it once more): it changes nothing. Otherwise the script writes the
-- marker, to expire after ARGV[5] ms, and applies the settle, in the same
-- atomic run.
--
-- KEYS: per request, the key of each window of its policy (take.lua's
--       keys: with clock "a" those of the settle's instant), then its
--       marker, then each window's reset mark (reset.lua); none for a
--       node call (below).
-- ARGV[1]: clock, "a" (the application's) or "s" (Redis's TIME).
-- ARGV[2]: expiry margin in ms, added to a window's end.
-- ARGV[3]: number of requests.
-- ARGV[4]: nk, the number of keys passed in ARGV: 0, or for a node call
--          every request's keys, as KEYS would hold them.
-- ARGV[5]: how long a marker lives, in ms.
-- Then the nk keys; then per request: n, its windows; delta, what to
--          charge (> 0) or to return (< 0), never 0; for a return, the
--          instant its admission was decided at (ms; the limiter's clock,
--          or TIME under clock "s"): a window whose reset mark is at or
--          after it gets nothing back, the budget the admission was
--          counted in having ended; then per window:
--   clock "a", delta > 0: the expiry (ms) of a count made now: the time
--     left in the window of the settle's instant, plus the margin;
--   clock "a", delta < 0: 1 when the window the admission charged is the
--     settle's (the key names it), else 0: an ended window gets nothing;
--   clock "s", delta > 0: the window's length in ms, or for a calendar
--     rate -nominal_ms (its usual length, as take.lua takes it for the
--     shortest window) followed by the starts of three consecutive
--     windows and the end of the last, around the client's estimate of
--     TIME: the script charges the one that holds TIME (Lua has no time
--     zones);
--   clock "s", delta < 0: the id of the window charged, its start and
--     its end (ms): it gets the units back only if it is the one stored
--     and TIME lies within it (refund.lua's rule).
--
-- Reply: with clock "s", {sec, usec} of TIME first; then per request its
--        verdict: 1 settled now, 0 settled already (its marker was there:
--        nothing done), -1 its keys are not on this node (a node call;
--        nothing done), -2 TIME lies outside the calendar windows sent
--        (clock "s", delta > 0; nothing done, no marker written, for the
--        client to send it again around TIME); then per window the count
--        it holds after the settle, 0 where the settle left it alone (an
--        ended window, nothing to return, a verdict other than 1), -1
--        when corrupt.
--
-- Clock "s" finds the window by TIME as take.lua does: a key per window
-- length holds "<window id>:<count>"; a stored window ahead of TIME by at
-- most the request's shortest window (Redis's clock stepped back) is the
-- one to charge, at its start, every window of the request at that one
-- instant; a stored window behind, or further ahead, is stale: the
-- current window starts afresh with the settle's units and a fresh
-- expiry.
--
-- A node call settles the requests of many slots that one master of a
-- Cluster serves, declaring no key, as take.lua's do: each request first
-- reads all of its keys (one slot) in one MGET under pcall, before any
-- write; a node that does not serve them now fails that read and the
-- request is answered -1, for the caller to send again with its keys
-- declared. A host that refuses undeclared keys refuses the first
-- request's read, and the call ends with that error before any write.
--
-- Errors: a value the store did not write (take.lua's definition: not a
-- plain count, a malformed window id, a value of another type) is left
-- as it is, reported as -1, and that window skipped; the request's other
-- windows are settled. Any other error reply of a command (NOPERM, OOM)
-- ends the script with it: requests settled earlier in the same call
-- stay settled, as for any call whose reply is lost. The marker is
-- written before the windows, so a request that an error cut short is
-- never settled a second time by a later call.
--
-- Expiry: a count this script creates gets its window's end plus the
-- margin (SET PX, or PXAT with clock "s"); one it adds to keeps its
-- expiry (INCRBY, SET KEEPTTL), and a key found with none when a charge
-- takes its count across a power of two gets the one it should have had,
-- as in take.lua.

local server = ARGV[1] == 's'
local margin = tonumber(ARGV[2])
local nreq = tonumber(ARGV[3])
local nk = tonumber(ARGV[4])
local markerTTL = ARGV[5]
local sec, usec, tnow = 0, 0, 0
if server then
  local t = redis.call('TIME')
  sec, usec = tonumber(t[1]), tonumber(t[2])
  tnow = sec * 1000 + math.floor(usec / 1000)
end

local K, k, a = KEYS, 1, 6
if nk > 0 then
  K, k, a = ARGV, 6, 6 + nk
end
local exact = 9007199254740992 -- 2^53: counts are kept at most this, as take.lua reads them

-- parse reads a stored count as take.lua does: nil when absent, -1 when
-- corrupt (anything but a plain decimal integer of at most 18 digits
-- with no leading zero).
local function parse(v)
  if v == false or v == nil then
    return nil
  end
  if type(v) ~= 'string' or #v > 18 or not string.find(v, '^%d+$')
      or (#v > 1 and string.byte(v, 1) == 48) then
    return -1
  end
  return math.min(tonumber(v), exact)
end

-- split reads a stored "<window id>:<count>" (clock "s") as take.lua
-- does: the id as stored and the count, both nil when absent; a value of
-- another form is the id 'corrupt' and the count -1.
local function split(v)
  if v == false or v == nil then
    return nil, nil
  end
  local id, c = string.match(v, '^(%d+):(%d+)$')
  if id == nil or #id > 15 or (#id > 1 and string.byte(id, 1) == 48) then
    return 'corrupt', -1
  end
  return id, parse(c)
end

-- windowID parses a stored window id as take.lua does: nil unless a
-- plain whole number of at most 15 digits with no leading zero.
local function windowID(v)
  if type(v) ~= 'string' or #v > 15 or not string.find(v, '^%d+$')
      or (#v > 1 and string.byte(v, 1) == 48) then
    return nil
  end
  return tonumber(v)
end

-- crosses is take.lua's: it reports whether adding d to the count c
-- (both whole, at least zero) takes it across a power of two, to 2^e,
-- the least power above c (math.frexp: 1 for c = 0), or past 2^31: when
-- take.lua looks for a key with no expiry, so that a bare key is
-- repaired at a PTTL per window every log2(count) charges. Plain
-- arithmetic, not the bit library, which miniredis lacks;
-- TestCrossesMatchesBitXor checks it against the bit.bxor form it
-- replaced.
local function crosses(c, d)
  local _, e = math.frexp(c)
  return c + d >= 2147483648 or c + d >= 2 ^ e
end

local function num(x)
  return string.format('%.0f', x)
end

-- reset reports whether a window's reset mark (reset.lua), as MGET read
-- it, is at or after at: the window was reset since the admission.
local function reset(mark, at)
  local m = tonumber(mark)
  return m ~= nil and m >= at
end

local out, o = {}, 0
if server then
  out[1], out[2], o = sec, usec, 2
end
local first = o -- the reply's length before any request

-- undecided answers a request of n windows that was not settled.
local function undecided(verdict, n)
  o = o + 1
  out[o] = verdict
  for _ = 1, n do
    o = o + 1
    out[o] = 0
  end
end

-- Per-window scratch, reused by every request.
local arg, len, cal, cnt, wid, ws, bad, ends = {}, {}, {}, {}, {}, {}, {}, {}

-- window returns the id and end (ms) of the request's i'th window that
-- holds t (clock "s"): for a window of fixed length, its number since the
-- epoch; for a calendar rate, the start of the one of the windows sent
-- that holds t, nil when none does.
local function window(i, t)
  local b = cal[i]
  if b == nil then
    local id = math.floor(t / len[i])
    return id, (id + 1) * len[i]
  end
  for j = 1, 3 do
    if b[j] <= t and t < b[j + 1] then
      return b[j], b[j + 1]
    end
  end
  return nil, nil
end

for _ = 1, nreq do
  local n, deltaArg = tonumber(ARGV[a]), ARGV[a + 1]
  local delta = tonumber(deltaArg)
  a = a + 2
  local at
  if delta < 0 then
    at = tonumber(ARGV[a])
    a = a + 1
  end
  local shortest
  for i = 1, n do
    if server and delta > 0 then
      local w = tonumber(ARGV[a])
      a = a + 1
      cal[i] = nil
      if w < 0 then
        w = -w
        cal[i] = {tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3])}
        a = a + 4
      end
      len[i] = w
      if shortest == nil or w < shortest then
        shortest = w
      end
    elseif server then
      arg[i] = {ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])}
      a = a + 3
    else
      arg[i] = ARGV[a]
      a = a + 1
    end
  end

  -- Every key of the request, the windows', the marker and the reset
  -- marks, in one read: for a node call, the probe of whether its slot
  -- is here (see the top).
  local vals
  if nk > 0 then
    vals = redis.pcall('MGET', unpack(K, k, k + 2 * n))
    if type(vals) == 'table' and vals.err then
      if o == first and string.find(vals.err, 'undeclared', 1, true) then
        return vals -- the host refuses undeclared keys (see the top)
      end
      vals = nil
    end
  else
    vals = redis.call('MGET', unpack(K, k, k + 2 * n))
  end

  if vals == nil then
    undecided(-1, n)
  elseif vals[n + 1] then
    undecided(0, n) -- settled already: the store sent it again
  else
    -- A value of another type reads as absent in MGET: corrupt.
    for i = 1, n do
      if vals[i] == false and redis.call('EXISTS', K[k + i - 1]) == 1 then
        vals[i] = '-'
      end
    end
    local named, now = true, tnow
    if server and delta > 0 then
      -- The instant to charge at: TIME, or the start of a stored window
      -- ahead of it by at most the shortest window (see the top).
      for i = 1, n do
        local id, c = split(vals[i])
        cnt[i], ws[i] = c, windowID(id)
        -- Only a malformed id is corrupt whatever the window: it never
        -- moves the instant charged at (take.lua's rule).
        bad[i] = id ~= nil and ws[i] == nil
        if ws[i] ~= nil then
          local start = ws[i]
          if not cal[i] then
            start = ws[i] * len[i]
          end
          if start > tnow and start - tnow <= shortest and start > now then
            now = start
          end
        end
      end
      for i = 1, n do
        local id, e = window(i, now)
        if id == nil then
          named = false
          break
        end
        wid[i], ends[i] = id, e
      end
    end

    if not named then
      undecided(-2, n)
    else
      redis.call('SET', K[k + n], '1', 'PX', markerTTL)
      for i = 1, n do
        local key = K[k + i - 1]
        local after = 0
        if server and delta > 0 then
          local id = wid[i] -- the window charged, at the instant chosen
          if bad[i] or ws[i] == id and cnt[i] < 0 then
            after = -1 -- corrupt: left as it is
          elseif ws[i] == id then
            after = math.min(cnt[i] + delta, exact)
            local v = num(id) .. ':' .. num(after)
            if crosses(cnt[i], delta) and redis.call('PTTL', key) == -1 then
              redis.call('SET', key, v, 'PXAT', ends[i] + margin)
            else
              redis.call('SET', key, v, 'KEEPTTL')
            end
          else
            -- Absent, or a stale window: the current one starts afresh.
            after = delta
            redis.call('SET', key, num(id) .. ':' .. deltaArg, 'PXAT', ends[i] + margin)
          end
        elseif delta < 0 and reset(vals[n + 1 + i], at) then
          -- A return of an admission decided before a Reset: nothing
          -- goes back into the fresh count.
        elseif server then
          local charged, start, stop = arg[i][1], arg[i][2], arg[i][3]
          local id, c = split(vals[i])
          if id ~= nil and windowID(id) == nil or id == charged and c < 0 then
            after = -1
          elseif id == charged and start <= tnow and tnow < stop then
            after = c - math.min(-delta, c)
            if after ~= c then
              redis.call('SET', key, id .. ':' .. num(after), 'KEEPTTL')
            end
          end
        elseif delta > 0 then
          local c = parse(vals[i])
          if c == nil then
            after = delta
            redis.call('SET', key, deltaArg, 'PX', arg[i])
          elseif c < 0 then
            after = -1
          elseif c + delta > exact then
            after = exact
            redis.call('SET', key, num(exact), 'KEEPTTL')
          else
            after = c + delta
            redis.call('INCRBY', key, deltaArg)
            if crosses(c, delta) and redis.call('PTTL', key) == -1 then
              redis.call('PEXPIRE', key, arg[i])
            end
          end
        elseif arg[i] == '1' then
          local c = parse(vals[i])
          if c ~= nil and c < 0 then
            after = -1
          elseif c ~= nil and c > 0 then
            local back = math.min(-delta, c)
            after = c - back
            redis.call('INCRBY', key, num(-back))
          end
        end
        cnt[i] = after
      end
      o = o + 1
      out[o] = 1
      for i = 1, n do
        o = o + 1
        out[o] = cnt[i]
      end
    end
  end
  k = k + 2 * n + 1
end
return out
