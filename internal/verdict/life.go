package verdict

import (
	"context"
	"time"

	"github.com/fixedwindow/ratelimit/internal/rank"
	"github.com/fixedwindow/ratelimit/limiter"
)

// An Outcome is what became of a request under one limit. Its values
// are middleware.Outcome's, in the same order: each door converts.
type Outcome uint8

// The outcomes, as middleware.Outcome documents them.
const (
	Allowed Outcome = iota + 1
	Denied
	ShadowDenied
	Error
	KeyError
	Misconfigured
	Canceled
	Refunded
	KeyFailed
	Released
	Settled
)

// An Event is what a door's observer is told of one limit, the door
// adding its own request.
type Event struct {
	Key      string
	Policy   *limiter.Policy
	Outcome  Outcome
	Decision limiter.Decision
	Err      error
	FailOpen bool
	Duration time.Duration
	Cost     int64
}

// The most rates and caps one door applies to a request.
const (
	MaxRules = 4
	MaxCaps  = 2
)

// A RuleLimiter decides a rate and names its policy: middleware.Limiter.
type RuleLimiter interface {
	Limiter
	Policied
}

// A Refunder returns a charge, as *limiter.Limiter does.
type Refunder interface {
	Refund(ctx context.Context, key string, cost int64, d limiter.Decision) error
}

// A Settler settles an admission at its actual cost, as
// *limiter.Limiter does (limiter.Limiter.Settle).
type Settler interface {
	Settle(ctx context.Context, key string, reserved, actual int64, d limiter.Decision) error
}

// A Meter says when a rule's cost is known.
type Meter uint8

const (
	// Fixed: at admission (the door's cost, or 1), and never settled.
	Fixed Meter = iota
	// Reported: by the handler, once it has served the request
	// (middleware.Report); the rule admits at a reservation and settles
	// at the cost reported, or at the reservation if none was.
	Reported
	// Bytes: the bytes of content the response sent, counted by the door
	// and settled once the response has ended.
	Bytes
)

// A Rule is one rate a request is decided by: its limiter and, when the
// limiter decides by a clock of its own, the same value as Clocked; how
// its cost is known (Meter), and, for a metered rule, the limiter as a
// Settler and the unit its policy counts in.
type Rule struct {
	Lim     RuleLimiter
	Clocked Clocked
	Meter   Meter
	Settler Settler
	Unit    string
}

// NewRule returns the rule of l.
func NewRule(l RuleLimiter) Rule {
	c, _ := l.(Clocked)
	return Rule{Lim: l, Clocked: c}
}

// Limits are how a door applies its rates and caps, fixed when it is
// built.
type Limits struct {
	Shadow   bool // decide and count, never refuse
	FailOpen bool // a limit that cannot decide lets the request through
	Refunds  bool // keep each charge: a charge may be returned (a status that does not count, a cap's refusal)
	// Settles: some rule is metered (its cost known after the request).
	// Each charge is kept, and a request any rate refuses (or that
	// fails, or whose caller left, before it is served) is charged by
	// none: the charges of the rates before it are returned.
	Settles bool
	// Reported are the units the door's handlers report costs in, each
	// once, and whom to tell of a report in none; Bytes, whether a rule
	// counts the bytes responses send.
	Reported Units
	Bytes    bool
	// Every: the door's answer describes every rule's decision (its
	// writer's draft fields or unit sets, or a metered rule), so each
	// admission is kept (Charges) even with nothing to refund.
	Every bool
}

// An Answer says how the door answers a request once its limits have
// been asked.
type Answer uint8

const (
	// Admit: serve it.
	Admit Answer = iota
	// Deny: a limit refused it; Life.Best is the refusal.
	Deny
	// Fail: a limit could not decide; Life.Err says why.
	Fail
	// Gone: the caller left, or its deadline passed, before a limit
	// could decide.
	Gone
)

// A Life is one request's passage through a door's limits, in the order
// STYLE.md gives a request's life: the door identifies it (Keys,
// CapKeys, the rules that apply), admits it (Admit: rates, then caps),
// serves it, settles it (Refund, Release) and describes it (Best and
// Applied, for the headers). It lives on the door's stack, one per
// request, and is not safe for concurrent use.
type Life struct {
	Ctx context.Context
	// Costs are what each rule charges at admission: the door's cost,
	// or a metered rule's reservation.
	Costs [MaxRules]int64
	// Rules are the rates that apply to the request, in order, and
	// Caps the in-flight caps: the door's, or its plan's (Plans).
	Rules   []Rule
	Caps    []*limiter.InFlight
	Keys    [MaxRules]string
	CapKeys [MaxCaps]string
	// Observe, when set, is told of every limit's outcome.
	Observe func(Event)

	// What admission found.
	Answer   Answer
	Err      error            // Fail: the limit's error
	Best     limiter.Decision // the most restrictive decision that let the request on; for Deny, the refusal
	Decided  bool             // Best is set: some limit let the request on
	Applied  [MaxRules + MaxCaps]*limiter.Policy
	NApplied int
	Stopped  bool     // a shadow refusal: enforcing would ask no more
	Charged  Charges  // the admissions kept for settling (Limits.Refunds)
	Held     HeldCaps // the slots taken
	nRates   int      // Applied[:nRates] are the rates'
}

// RatesApplied returns the policies of the rates that applied, in order:
// the caps' are told apart (a door's headers list them after the rates).
func (l *Life) RatesApplied() []*limiter.Policy { return l.Applied[:l.nRates] }

// Charges are the admissions a request's rules charged, kept for
// settling (Limits.Refunds, Settles) and for the answer (Limits.Every):
// the decision of each rule that charged.
type Charges struct {
	N    int
	Rule [MaxRules]int
	D    [MaxRules]limiter.Decision
	// Owed: the charges are the door's to return or settle, until Refund
	// or Settle has; the decisions are kept for the answer all the same,
	// a returned one read as charged nothing (limiter.Settled).
	Owed bool
}

// HeldCaps are the slots a request holds, in the order the caps were
// asked, the first Len with a cap, and what the headers and the observer
// need of them. It keeps no count, so that the HTTP door's per-request
// state that holds a copy fits its allocation size class.
type HeldCaps [MaxCaps]HeldCap

// Len returns how many caps hc holds a decision of.
func (hc *HeldCaps) Len() int {
	n := 0
	for n < MaxCaps && hc[n].F != nil {
		n++
	}
	return n
}

// A HeldCap is one cap's decision for a request.
type HeldCap struct {
	F         *limiter.InFlight
	Key       string
	ReleaseFn func()          // nil once given back, or for a shadow refusal
	Policy    *limiter.Policy // the decision's (a store's reduced cap while it degrades)
	Remaining int64
	At        int64 // the decision's instant, Unix ns by the cap's clock
}

// Decision returns the cap's decision as the headers and the observer
// see it.
func (hc *HeldCap) Decision() limiter.Decision {
	return limiter.Dated(limiter.Decision{Allowed: true, Limit: hc.Policy.MaxInFlight(), Remaining: hc.Remaining, Policy: hc.Policy}, time.Unix(0, hc.At))
}

// HeldOut returns the place among l's charges of rule's (a door's one
// Reported rule, whose decision its tally holds: Tally.Hold), and sets
// others to the most restrictive of the other charges; -1 when rule
// made no charge, or made the only one (it is then merged as any other).
func (l *Life) HeldOut(rule int, others *limiter.Decision) int {
	c := &l.Charged
	held, found := -1, false
	for i := range c.N {
		switch {
		case c.Rule[i] == rule:
			held = i
		case !found || rank.More(&c.D[i], others):
			*others, found = c.D[i], true
		}
	}
	if !found {
		return -1
	}
	return held
}

// RuleOf returns the rule that made the request's i'th charge
// (Charged.D[i]).
func (l *Life) RuleOf(i int) *Rule { return l.rule(l.Charged.Rule[i]) }

// rule returns the request's i'th rule.
func (l *Life) rule(i int) *Rule { return &l.Rules[i] }

// observe tells the observer of e, if there is one.
func (l *Life) observe(e Event) {
	if l.Observe != nil {
		l.Observe(e)
	}
}

// apply records that p applied to the request.
func (l *Life) apply(p *limiter.Policy) {
	l.Applied[l.NApplied] = p
	l.NApplied++
}

// Admit asks the rules, in order, then the caps of lim, each at most
// once, and stops at the first refusal, enforced or shadow, or at the
// first limit that cannot decide (unless lim.FailOpen); Answer says how
// the door answers. A rate asked before a refusal stays charged, as
// stacked doors would have charged it; a cap's refusal returns every
// rate's charge (lim.Refunds must then be set) and every slot taken, so
// that it charges nothing. A request whose context is done when a limit
// fails is Gone, with or without FailOpen: its caller left. A request
// not admitted is Unserved: no handler serves it.
func (l *Life) Admit(lim *Limits) {
	if l.admitRates(lim) && len(l.Caps) > 0 && !l.Stopped {
		l.admitCaps(lim)
	}
	if l.Answer != Admit {
		l.Unserved()
	}
}

// Unserved marks the request's tallies (Unserved) for a door that
// answers it itself without asking its limits (a key it cannot find);
// Admit marks those it does not admit.
func (l *Life) Unserved() { Unserved(l.Ctx) }

// admitRates asks the rules; false when the request is answered.
func (l *Life) admitRates(lim *Limits) bool {
	timed := l.Observe != nil
	for i := range l.Rules {
		r := l.rule(i)
		d, at, took, err := Ask(l.Ctx, r.Lim, r.Clocked, l.Keys[i], l.Costs[i], timed)
		outcome := outcomeOf(l.Ctx, &d, err, lim.Shadow)
		if err == nil && d.NumWindows() == 0 && d.DecidedAt().IsZero() {
			// A custom Limiter's decision, built field by field: dated
			// here, by the limiter's clock when it has one, so that its
			// headers are too.
			if at.IsZero() {
				at = time.Now()
			}
			d = limiter.Dated(d, at)
		}
		if err == nil && d.Policy == nil {
			d.Policy = r.Lim.Policy()
		}
		l.observe(Event{Key: l.Keys[i], Policy: r.Lim.Policy(), Outcome: outcome, Decision: d, Err: err,
			FailOpen: outcome == Error && lim.FailOpen, Duration: took, Cost: l.Costs[i]})
		if lim.Settles && (outcome == Canceled || outcome == Denied || outcome == Error && !lim.FailOpen) {
			l.Refund() // a request any unit refuses, or no door serves, is charged by none
		}
		switch outcome {
		case Canceled:
			l.Answer = Gone
			return false
		case Error:
			if lim.FailOpen {
				continue
			}
			l.Answer, l.Err = Fail, err
			return false
		case Denied:
			l.apply(d.Policy)
			l.Answer, l.Best = Deny, d
			return false
		}
		l.apply(d.Policy)
		if !l.Decided || rank.More(&d, &l.Best) {
			l.Best, l.Decided = d, true
		}
		if outcome == ShadowDenied {
			// Enforcing would have refused here and asked no later
			// limit, so shadow mode charges and reports nothing more:
			// its counts and outcomes are the ones enforcing would
			// make, not inflated by requests a refusal would have
			// stopped. A door that settles returns the charges before,
			// as enforcing would.
			if lim.Settles {
				l.Refund()
			}
			l.Stopped = true
			break
		}
		if lim.Refunds || lim.Settles || lim.Every {
			c := &l.Charged
			c.Rule[c.N], c.D[c.N] = i, d
			c.N++
			c.Owed = c.Owed || lim.Refunds || lim.Settles
		}
	}
	l.nRates = l.NApplied
	return true
}

// admitCaps asks every cap for a slot, in order, for a request the rates
// admitted (or let through failing open).
func (l *Life) admitCaps(lim *Limits) {
	for i, f := range l.Caps {
		var (
			clk  limiter.Clock
			at   time.Time
			took time.Duration
		)
		if l.Observe != nil {
			clk = f.Clock()
			at = clk.Now()
		}
		d, release, err := f.Acquire(l.Ctx, l.CapKeys[i])
		outcome := outcomeOf(l.Ctx, &d, err, lim.Shadow)
		if l.Observe != nil {
			took = clk.Now().Sub(at)
			l.observe(Event{Key: l.CapKeys[i], Policy: f.Policy(), Outcome: outcome, Decision: d, Err: err,
				FailOpen: outcome == Error && lim.FailOpen, Duration: took})
		}
		switch outcome {
		case Canceled:
			l.Release()
			if lim.Settles {
				l.Refund() // not served: charged by none
			}
			l.Answer = Gone
			return
		case Error:
			if lim.FailOpen {
				continue
			}
			l.Release()
			if lim.Settles {
				l.Refund()
			}
			l.Answer, l.Err = Fail, err
			return
		case Denied, ShadowDenied:
			// Enforcing answers the request here: nothing it took stays
			// taken, and no later cap is asked. Shadow mode counts as
			// enforcing would, and lets the request through holding
			// nothing.
			l.Release()
			l.Refund()
			l.apply(d.Policy)
			if outcome == ShadowDenied {
				l.Held.add(f, l.CapKeys[i], nil, &d)
				return
			}
			l.Answer, l.Best = Deny, d
			return
		}
		l.Held.add(f, l.CapKeys[i], release, &d)
		l.apply(d.Policy)
	}
}

// add records cap f's decision d (release nil for a shadow refusal).
func (hc *HeldCaps) add(f *limiter.InFlight, key string, release func(), d *limiter.Decision) {
	hc[hc.Len()] = HeldCap{F: f, Key: key, ReleaseFn: release, Policy: d.Policy, Remaining: d.Remaining, At: d.DecidedAt().UnixNano()}
}

// Refund returns every charge the request's rules made, and tells the
// observer of each; the charges are then no longer owed, so that nothing
// is returned twice, and each one returned reads as charged nothing, for
// the answer. The door has answered, or a cap refused: the caller may be
// gone, and the charge is returned all the same. Every rule that charges
// what is owed is a Refunder: the doors check it when built (a plan's
// limiters are *limiter.Limiter).
func (l *Life) Refund() {
	c := &l.Charged
	if !c.Owed {
		return
	}
	ctx := context.WithoutCancel(l.Ctx)
	for i := range c.N {
		r := l.rule(c.Rule[i])
		key, cost := l.Keys[c.Rule[i]], l.Costs[c.Rule[i]]
		err := r.Lim.(Refunder).Refund(ctx, key, cost, c.D[i])
		l.observe(Event{Key: key, Policy: r.Lim.Policy(), Outcome: Refunded, Decision: c.D[i], Err: err, Cost: cost})
		if err == nil {
			c.D[i] = limiter.Settled(c.D[i], cost, 0)
		}
	}
	c.Owed = false
}

// Settle settles every metered rule's charge at its actual cost, once,
// and tells the observer of each (Settled, with the settle's error if it
// failed: a store across a network may have applied it all the same);
// the charges are then no longer owed, and t takes no more reports. A
// Reported rule's actual cost is what the handler reported to t, or its
// reservation if it reported nothing; a Bytes rule's is sent, the bytes
// the door counted; a request a door inside answered itself (Unserved)
// costs nothing. Like Refund it runs once the door has answered: the
// caller may be gone, so the stores are asked under t.Detached(), the
// request's context without its cancellation.
func (l *Life) Settle(t *Tally, sent int64) {
	ctx := t.Detached()
	tot := t.close()
	served := t.flags.Load()&unservedFlag == 0
	c := &l.Charged
	if !c.Owed {
		return
	}
	for i := range c.N {
		r := l.rule(c.Rule[i])
		if r.Meter == Fixed {
			continue
		}
		key, reserved := l.Keys[c.Rule[i]], l.Costs[c.Rule[i]]
		var cost int64 // a request a door inside answered itself cost nothing
		switch {
		case !served:
		case r.Meter == Bytes:
			cost = sent
		default:
			cost = t.cost(&tot, r.Unit, reserved)
		}
		err := r.Settler.Settle(ctx, key, reserved, cost, c.D[i])
		if l.Observe != nil {
			l.observe(Event{Key: key, Policy: r.Lim.Policy(), Outcome: Settled, Decision: c.D[i], Err: err, Cost: cost})
		}
	}
	c.Owed = false
}

// Release gives back every slot the request holds, once, last taken
// first, and tells the observer of each.
func (l *Life) Release() {
	for i := l.Held.Len() - 1; i >= 0; i-- {
		cp := &l.Held[i]
		if cp.ReleaseFn == nil {
			continue
		}
		cp.ReleaseFn()
		cp.ReleaseFn = nil
		if l.Observe != nil {
			l.observe(Event{Key: cp.Key, Policy: cp.F.Policy(), Outcome: Released,
				Decision: cp.Decision(), Duration: time.Duration(cp.F.Clock().Now().UnixNano() - cp.At)})
		}
	}
}

// outcomeOf names what a decision made of the request. An error with the
// request's context done is the caller's leaving (or its deadline), not
// a store failure: Canceled.
func outcomeOf(ctx context.Context, d *limiter.Decision, err error, shadow bool) Outcome {
	switch {
	case err != nil && ctx.Err() != nil:
		return Canceled
	case err != nil:
		return Error
	case d.Allowed:
		return Allowed
	case shadow:
		return ShadowDenied
	default:
		return Denied
	}
}
