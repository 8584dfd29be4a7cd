package headers

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fixedwindow/ratelimit/internal/cache"
	"github.com/fixedwindow/ratelimit/internal/calendar"
	"github.com/fixedwindow/ratelimit/internal/refusal"
	"github.com/fixedwindow/ratelimit/limiter"
)

// windowName names one window of a policy in the draft headers. A policy
// of one rate is named after the policy ("default"); a layered policy names
// each window after the policy and the window's length in its largest
// whole unit, ms, s, m, h or d ("api-1m", "api-1s", "api-90s",
// "api-500ms"), and a calendar window after its period ("plan-day", see
// newPolicyInfo). Policy names are [A-Za-z0-9_.-], so the name needs no
// escaping inside a structured-field string.
func windowName(p *limiter.Policy, window time.Duration) string {
	if p == nil || p.NumRates() <= 1 {
		if p == nil {
			return "default"
		}
		return p.Name()
	}
	return p.Name() + "-" + refusal.WindowSuffix(window)
}

// policyInfo is what the headers need of a policy, computed once: the
// name of each window, quoted and not, and the whole RateLimit-Policy
// value.
//
// A calendar rate's window has no fixed length (limiter.PerDayIn: a day
// of 23 hours where the clocks spring forward), so for a policy that has
// one the RateLimit-Policy value depends on the instant: its w is the
// length of the window then current. policyAt builds it from the
// windows' caches and keeps the last value built, which serves until a
// window's length changes.
type policyInfo struct {
	p       *limiter.Policy // the policy it describes
	windows []time.Duration // each rate's Window: 0 for a calendar rate
	limits  []int64
	names   []string // "api-1m", "plan-day", in the order of the rates
	quoted  []string // `"api-1m"`
	qu      string   // `;qu="content-bytes"` for a policy not of requests (limiter.Policy.Unit), else ""
	unit    string   // the policy's unit (limiter.Policy.Unit)
	policy  string   // `"api-1m";q=100;w=60, "api-1s";q=5;w=1`, for a policy with no calendar rate

	cals   []*calendar.Cache // per rate, a calendar rate's windows (else nil); nil for a policy with none
	latest atomic.Pointer[policyValue]
}

// policyValue is a RateLimit-Policy value of a policy with calendar rates,
// and the windows' lengths it states.
type policyValue struct {
	lengths [limiter.MaxWindows]time.Duration
	value   string
}

// policyCache maps *limiter.Policy to its *policyInfo. A Policy is
// immutable, so its pointer identifies it. A door's policies are fixed at
// startup, and one per plan and zone under WithPlans: it keeps up to
// internal/cache.MemoBound (1,048,576) of them per Writer, past which
// each new one evicts one not used lately, so that the policies of plans
// no longer used do not stay and those in use, while fewer than that,
// are not computed per request.
//
// The entry last computed is kept aside: a door of one policy (the usual
// case) finds it by a pointer comparison, which costs less than the map.
type policyCache struct {
	m    cache.Memo[*limiter.Policy, *policyInfo]
	last atomic.Pointer[policyInfo]
}

func (c *policyCache) get(p *limiter.Policy) *policyInfo {
	if info := c.last.Load(); info != nil && info.p == p {
		return info
	}
	// Kept aside when first computed only: a door describing several
	// policies per request, on every core, then writes nothing shared
	// per request.
	return c.m.Get(p, func(p *limiter.Policy) *policyInfo {
		info := newPolicyInfo(p)
		c.last.Store(info)
		return info
	})
}

func newPolicyInfo(p *limiter.Policy) *policyInfo {
	if m := p.MaxInFlight(); m > 0 {
		q := `"` + p.Name() + `"`
		return &policyInfo{p: p, windows: []time.Duration{0}, limits: []int64{m}, names: []string{p.Name()},
			quoted: []string{q}, policy: capPolicyItem(q, m)}
	}
	info := &policyInfo{p: p, unit: p.Unit()}
	if info.unit != limiter.UnitRequests {
		info.qu = `;qu="` + info.unit + `"`
	}
	periods := map[string]int{} // how many calendar rates of each period
	for i := range p.NumRates() {
		if period, _, ok := p.Rate(i).Calendar(); ok {
			periods[period]++
		}
	}
	for i := range p.NumRates() {
		r := p.Rate(i)
		name := windowName(p, r.Window)
		if period, loc, ok := r.Calendar(); ok {
			// "plan-day"; "plan-day@Europe/Paris" where the policy has a
			// day in two zones. A zone's name is [A-Za-z0-9_+-./]
			// (NewPolicy checks), safe in a structured-field string.
			name = p.Name()
			if p.NumRates() > 1 {
				name += "-" + period
			}
			if periods[period] > 1 {
				name += "@" + loc.String()
			}
			if info.cals == nil {
				info.cals = make([]*calendar.Cache, p.NumRates())
			}
			info.cals[i] = calendar.NewCache(calendar.PeriodOf(period), loc)
		}
		info.windows = append(info.windows, r.Window)
		info.limits = append(info.limits, r.Limit)
		info.names = append(info.names, name)
		info.quoted = append(info.quoted, `"`+name+`"`)
	}
	if info.cals == nil {
		info.policy = string(info.appendPolicy(nil, info.windows))
	}
	return info
}

// appendPolicy appends the RateLimit-Policy items of the policy, its
// windows lasting lengths.
func (info *policyInfo) appendPolicy(b []byte, lengths []time.Duration) []byte {
	for i, q := range info.quoted {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendPolicyItem(b, q, info.limits[i], lengths[i])
		b = append(b, info.qu...)
	}
	return b
}

// policyAt returns the RateLimit-Policy value of the policy at the
// instant at: w of a calendar window is the length of the one current
// then (82800 on a day of 23 hours, 2678400 in a month of 31 days).
func (info *policyInfo) policyAt(at time.Time) string {
	if info.cals == nil {
		return info.policy
	}
	var lengths [limiter.MaxWindows]time.Duration
	ms := at.UnixMilli()
	for i, c := range info.cals {
		lengths[i] = info.windows[i]
		if c != nil {
			start, end := c.Window(ms)
			lengths[i] = time.Duration(end-start) * time.Millisecond
		}
	}
	if v := info.latest.Load(); v != nil && v.lengths == lengths {
		return v.value
	}
	v := &policyValue{lengths: lengths, value: string(info.appendPolicy(nil, lengths[:len(info.cals)]))}
	info.latest.Store(v)
	return v.value
}

// deciding returns the place of d's deciding window among its policy's
// rates (d.Policy's info), or -1 if it cannot be told. A window of fixed
// length is found by its length; a calendar window's varies, so a policy
// with one finds the window among the decision's own (WindowAt) whose
// numbers are d's.
func (info *policyInfo) deciding(d *limiter.Decision) int {
	if info.cals == nil {
		return info.index(d.Window)
	}
	return refusal.MatchWindow(d, len(info.names))
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
