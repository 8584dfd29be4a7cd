package headers

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// windowName names one window of a policy in the draft headers. A policy
// of one rate is named after the policy ("default"); a layered policy names
// each window after the policy and the window's length in its largest
// whole unit, ms, s, m, h or d ("api-1m", "api-1s", "api-90s",
// "api-500ms"). Policy names are [A-Za-z0-9_.-], so the name needs no
// escaping inside a structured-field string.
func windowName(p *limiter.Policy, window time.Duration) string {
	if p == nil || p.NumRates() <= 1 {
		if p == nil {
			return "default"
		}
		return p.Name()
	}
	return p.Name() + "-" + windowSuffix(window)
}

// windowSuffix formats a whole number of milliseconds in its largest whole
// unit.
func windowSuffix(w time.Duration) string {
	ms := w.Milliseconds()
	units := []struct {
		ms   int64
		unit string
	}{{86_400_000, "d"}, {3_600_000, "h"}, {60_000, "m"}, {1000, "s"}}
	for _, u := range units {
		if ms > 0 && ms%u.ms == 0 {
			return strconv.FormatInt(ms/u.ms, 10) + u.unit
		}
	}
	return strconv.FormatInt(ms, 10) + "ms"
}

// policyInfo is what the draft headers need of a policy, computed once:
// the quoted name of each window and the whole RateLimit-Policy value.
type policyInfo struct {
	windows []time.Duration
	quoted  []string // `"api-1m"`, in the order of windows
	policy  string   // `"api-1m";q=100;w=60, "api-1s";q=5;w=1`
}

// maxCachedPolicies bounds the policy cache: policies are normally fixed
// at startup, but a resolver could mint them per request.
const maxCachedPolicies = 256

// policyCache maps *limiter.Policy to its *policyInfo. A Policy is
// immutable, so its pointer identifies it.
type policyCache struct {
	m sync.Map
	n atomic.Int64
}

func (c *policyCache) get(p *limiter.Policy) *policyInfo {
	if v, ok := c.m.Load(p); ok {
		return v.(*policyInfo)
	}
	info := newPolicyInfo(p)
	if c.n.Load() < maxCachedPolicies {
		if _, loaded := c.m.LoadOrStore(p, info); !loaded {
			c.n.Add(1)
		}
	}
	return info
}

func newPolicyInfo(p *limiter.Policy) *policyInfo {
	if m := p.MaxInFlight(); m > 0 {
		q := `"` + p.Name() + `"`
		return &policyInfo{windows: []time.Duration{0}, quoted: []string{q}, policy: capPolicyItem(q, m)}
	}
	info := &policyInfo{}
	var b []byte
	for i := range p.NumRates() {
		r := p.Rate(i)
		q := `"` + windowName(p, r.Window) + `"`
		info.windows = append(info.windows, r.Window)
		info.quoted = append(info.quoted, q)
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendPolicyItem(b, q, r.Limit, r.Window)
	}
	info.policy = string(b)
	return info
}

// appendPolicyItem appends one RateLimit-Policy item: the quoted name, q,
// and w when the window is a whole number of seconds (the draft allows no
// fraction and w is optional).
func appendPolicyItem(b []byte, quoted string, limit int64, window time.Duration) []byte {
	b = append(b, quoted...)
	b = append(b, ";q="...)
	b = strconv.AppendInt(b, sfInteger(limit), 10)
	if window >= time.Second && window%time.Second == 0 {
		b = append(b, ";w="...)
		b = strconv.AppendInt(b, int64(window/time.Second), 10)
	}
	return b
}

// index returns the position of window w in the policy, or -1.
func (info *policyInfo) index(w time.Duration) int {
	for i, x := range info.windows {
		if x == w {
			return i
		}
	}
	return -1
}
