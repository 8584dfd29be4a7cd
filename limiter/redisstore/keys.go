package redisstore

import (
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/fixedwindow/ratelimit/internal/cache"
	"github.com/fixedwindow/ratelimit/internal/calendar"
	"github.com/fixedwindow/ratelimit/internal/window"
	"github.com/fixedwindow/ratelimit/limiter"
)

// Key layout, one Redis key per window of a request, a string:
//
//	appClock:    <prefix>{<key>}:<policy name>:<window ms>:<window id>   "<count>"
//	serverClock: <prefix>{<key>}:<policy name>:<window ms>               "<window id>:<count>"
//
// such as rl:{alice}:api:60000:29675211 holding "5". The braces make the
// client's key the Cluster hash tag, so all of one client's windows share
// a slot and one script may touch them all (no CROSSSLOT). A key names
// the policy's name and one window, never a limit: a limit changed by a
// deploy or a plan keeps the counts (see limiter.Policy), and a policy
// that gains or loses a window keeps the others'. A calendar rate's
// windows are named by period and zone instead of a length, and its
// window id is the window's start in Unix ms:
// rl:{alice}:plan:month@Europe/Paris:1769900400000. Under serverClock the
// window a count belongs to is in the value, beside the count (see
// take.lua), so that the script names the window by Redis's TIME and one
// MGET still reads every count of a call.

// tagEscaper makes any client key safe inside a hash tag: a '}' would end
// the tag early (and "{}" would void it), so braces and the escape
// character itself are percent-encoded. The mapping is injective: two
// distinct client keys never share a Redis key.
var tagEscaper = strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D")

// tag returns the client key as it appears between the braces.
func tag(key string) string {
	if strings.ContainsAny(key, "%{}") {
		return tagEscaper.Replace(key)
	}
	return key
}

// policyKeys holds what every request under one policy repeats: the key
// suffix of each window and the script arguments of each rate, and the
// windows of its calendar rates.
type policyKeys struct {
	suffix [limiter.MaxWindows]string // ":<policy name>:<window ms>" or ":<policy name>:<period>@<zone>"
	wms    [limiter.MaxWindows]int64  // a fixed window's length; 0 for a calendar rate
	cal    [limiter.MaxWindows]*calendar.Cache
	ncal   int   // how many of the rates are calendar rates
	rates  []any // limit, window ms (−nominal ms for a calendar rate), for each rate
}

// window returns the id, start and end, in Unix ms, of the policy's i'th
// window that holds ms: for a calendar rate the id is the start.
func (pk *policyKeys) window(i int, ms int64) (id, start, end int64) {
	if c := pk.cal[i]; c != nil {
		start, end = c.Window(ms)
		return start, start, end
	}
	return window.ID(ms, pk.wms[i])
}

// policyMemo memoises a value per policy. Policies are usually few and
// long-lived, with one per plan and zone (limiter.Limiter.For); it keeps
// up to internal/cache.MemoBound (1,048,576) policies for the store,
// whatever the limiters' resolution bounds, past which each new one
// evicts one not used lately: a lookup that builds plans per request does
// not grow it without end, and the policies in use, while fewer than
// that, are not computed per request. The entry last found is kept
// aside: a store under one policy (the usual case) looks it up several
// times per decision, and a pointer comparison costs less than the map.
type policyMemo[V any] struct {
	m    cache.Memo[*limiter.Policy, *memoEntry[V]]
	last atomic.Pointer[memoEntry[V]]
}

type memoEntry[V any] struct {
	p *limiter.Policy
	v V
}

func (c *policyMemo[V]) get(p *limiter.Policy, compute func(*limiter.Policy) V) V {
	if e := c.last.Load(); e != nil && e.p == p {
		return e.v
	}
	e := c.m.Get(p, func(p *limiter.Policy) *memoEntry[V] { return &memoEntry[V]{p, compute(p)} })
	c.last.Store(e)
	return e.v
}

type keyCache struct{ policyMemo[*policyKeys] }

func (c *keyCache) get(p *limiter.Policy) *policyKeys { return c.policyMemo.get(p, newPolicyKeys) }

func newPolicyKeys(p *limiter.Policy) *policyKeys {
	pk := &policyKeys{rates: make([]any, 0, 2*p.NumRates())}
	for i := range p.NumRates() {
		r := p.Rate(i)
		if name, loc, ok := r.Calendar(); ok {
			period := calendar.PeriodOf(name)
			pk.cal[i] = calendar.NewCache(period, loc)
			pk.ncal++
			pk.suffix[i] = ":" + p.Name() + ":" + name + "@" + loc.String()
			pk.rates = append(pk.rates, strconv.FormatInt(r.Limit, 10), strconv.FormatInt(-calendar.Nominal(period), 10))
			continue
		}
		ms := r.Window.Milliseconds()
		pk.wms[i] = ms
		pk.suffix[i] = ":" + p.Name() + ":" + strconv.FormatInt(ms, 10)
		pk.rates = append(pk.rates, strconv.FormatInt(r.Limit, 10), strconv.FormatInt(ms, 10))
	}
	return pk
}

// appendKeys appends the Redis keys of key's windows under p at the instant
// ms (used only by appClock, whose keys name their window).
func appendKeys(dst []string, prefix, key string, pk *policyKeys, n int, clock clockSource, ms int64) []string {
	t := tag(key)
	var num [20]byte
	for i := range n {
		var id []byte
		if clock == appClock {
			w, _, _ := pk.window(i, ms)
			id = strconv.AppendInt(num[:0], w, 10)
		}
		dst = append(dst, windowKey(prefix, t, pk.suffix[i], ":", id))
	}
	return dst
}

// windowKey returns "<prefix>{<t>}<suffix>", and sep and tail after it
// when tail is not empty, in one allocation: this runs for every window
// of every decision.
func windowKey(prefix, t, suffix, sep string, tail []byte) string {
	var b strings.Builder
	b.Grow(len(prefix) + len(t) + len(suffix) + len(sep) + len(tail) + 2)
	b.WriteString(prefix)
	b.WriteByte('{')
	b.WriteString(t)
	b.WriteByte('}')
	b.WriteString(suffix)
	if len(tail) > 0 {
		b.WriteString(sep)
		b.Write(tail)
	}
	return b.String()
}
