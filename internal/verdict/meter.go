package verdict

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/fixedwindow/ratelimit/limiter"
)

// Metered makes r, a rule of a door's metered option (WithReported or
// WithBytes, as OptionOf names it), metered by m: its limiter must settle
// (a *limiter.Limiter on a store that is a limiter.Settler, or a limiter
// of a Settle method of its own), a Bytes rule count content-bytes, a
// Reported one a unit of its own for its handler to report in. The error
// says which, for the door to wrap in its ErrInvalidOption.
func Metered(r *Rule, m Meter) error {
	p, option := r.Lim.Policy(), OptionOf(m)
	s, ok := r.Lim.(Settler)
	if l, isLimiter := r.Lim.(*limiter.Limiter); isLimiter {
		// Settle refuses a store that cannot settle before it looks at
		// its arguments: with none, nothing else is done.
		if err := l.Settle(context.Background(), "", 0, 0, limiter.Decision{}); errors.Is(err, limiter.ErrInvalidOption) {
			return fmt.Errorf("%s (policy %q): %w", option, p.Name(), err)
		}
	}
	if !ok {
		return fmt.Errorf("%s (policy %q): the limiter (%T) cannot settle a cost: it has no Settle method", option, p.Name(), r.Lim)
	}
	unit := p.Unit()
	switch {
	case m == Bytes && unit != limiter.UnitContentBytes:
		return fmt.Errorf("%s (policy %q): the policy counts %s, not %s: make it with Policy.WithUnit(limiter.UnitContentBytes)", option, p.Name(), unit, limiter.UnitContentBytes)
	case m == Reported && (unit == limiter.UnitRequests || unit == limiter.UnitContentBytes):
		return fmt.Errorf("%s (policy %q): the policy counts %s: give it the unit its handler reports in, with Policy.WithUnit (\"acme-tokens\"); bytes are counted by WithBytes", option, p.Name(), unit)
	}
	r.Meter, r.Settler, r.Unit = m, s, unit
	return nil
}

// OptionOf names the doors' option that adds a rule metered by m:
// WithLimiter (Fixed), WithReported or WithBytes.
func OptionOf(m Meter) string {
	switch m {
	case Reported:
		return "WithReported"
	case Bytes:
		return "WithBytes"
	}
	return "WithLimiter"
}

// Meter makes r metered by m (Metered) for a door of limits lim, and
// notes it there: the door settles (Settles), its handlers report in r's
// unit (Reported), or it counts the bytes its responses send (Bytes).
func (lim *Limits) Meter(r *Rule, m Meter) error {
	if err := Metered(r, m); err != nil {
		return err
	}
	lim.Settles = true
	if m == Bytes {
		lim.Bytes = true
	} else if !slices.Contains(lim.Reported.List, r.Unit) {
		lim.Reported.List = append(lim.Reported.List, r.Unit)
	}
	return nil
}

// Price sets the cost each of the door's rules charges the request at
// admission: cost for a rule of fixed cost, reserve(i) for rule i
// metered as Reported (1 when it reports none given), a byte for one
// metered in Bytes, the least a reservation may be. A reservation is
// held to [1, limiter.MaxLimit]: it often comes from the client (a
// max_tokens of 0), and one the limiter refused as invalid would fail
// the request, or, failing open, let it through uncharged.
func (l *Life) Price(cost int64, reserve func(i int) (int64, bool)) {
	for i := range l.Rules {
		switch l.Rules[i].Meter {
		case Fixed:
			l.Costs[i] = cost
		case Reported:
			l.Costs[i] = 1
			if n, ok := reserve(i); ok {
				l.Costs[i] = min(max(n, 1), limiter.MaxLimit)
			}
		default:
			l.Costs[i] = 1
		}
	}
}

// Describing sets lim.Every for a door whose writer describes every
// decision (every: the draft fields, a set per unit), or that has
// several Reported rules, whose answer is written when the handler
// first sends, from the decisions as they stand then; and returns the
// door's one Reported rule otherwise, whose decision a metered
// request's tally holds instead (Tally.Hold): no list of decisions for
// the common door, X-RateLimit-* alone and one unit reported. -1 for
// none.
func (lim *Limits) Describing(rules []Rule, every bool) int {
	reported, held := 0, -1
	for i := range rules {
		if rules[i].Meter == Reported {
			reported++
			held = i
		}
	}
	lim.Every = every || reported > 1
	if lim.Every {
		return -1
	}
	return held
}
