package verdict

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// CheckPlans reports the first of plans, declared to a door (option
// names the door's option in the error), that cannot apply to the door's
// rates and caps (see CheckPlan). A door checks them when it is built,
// so that a plan's mistake is found at start rather than by a customer's
// request.
func CheckPlans(option string, plans []*limiter.Plan, rules []Rule, caps []*limiter.InFlight) error {
	if len(plans) == 0 {
		return fmt.Errorf("%s: no plan given", option)
	}
	policies := make([]*limiter.Policy, 0, len(rules)+len(caps))
	for _, r := range rules {
		policies = append(policies, r.Lim.Policy())
	}
	for _, f := range caps {
		policies = append(policies, f.Policy())
	}
	for i, p := range plans {
		if p == nil {
			return fmt.Errorf("%s: plan %d is nil", option, i)
		}
		if err := CheckPlan(p, policies...); err != nil {
			return fmt.Errorf("%s: %w", option, err)
		}
	}
	return nil
}

// CheckPlan reports, as an error wrapping limiter.ErrInvalidPolicy that
// names the plan, the policy and the problem, what in p cannot apply to
// the policies given (rate policies, and caps: an InFlight's Policy):
// limits named for no rate policy given, or a maximum for no cap (a
// misspelt name, which For would ignore); another count of limits than
// the policy's rates; limits out of a rate's range (as NewPolicy checks
// them), or out of order (see checkOrder); a cap's maximum out of [1,
// limiter.MaxLimit].
func CheckPlan(p *limiter.Plan, policies ...*limiter.Policy) error {
	var rates, caps []string
	for _, q := range policies {
		if q.MaxInFlight() > 0 {
			caps = append(caps, q.Name())
			continue
		}
		rates = append(rates, q.Name())
		limits, ok := p.Limits[q.Name()]
		if !ok {
			continue
		}
		if len(limits) != q.NumRates() {
			return fmt.Errorf("%w: plan %q: policy %q has %d rates (%s), given %d limits", limiter.ErrInvalidPolicy, p.Name, q.Name(), q.NumRates(), q, len(limits))
		}
		rs := make([]limiter.Rate, len(limits))
		for i := range rs {
			rs[i] = q.Rate(i)
			rs[i].Limit = limits[i]
		}
		_, err := limiter.NewPolicy(q.Name(), rs...)
		if err == nil {
			err = checkOrder(q.Name(), rs)
		}
		if err != nil {
			return fmt.Errorf("plan %q: %w", p.Name, err)
		}
	}
	for _, name := range sortedKeys(p.Limits) {
		if !slices.Contains(rates, name) {
			return fmt.Errorf("%w: plan %q: limits for policy %q, which no rate here has (policies: %s)", limiter.ErrInvalidPolicy, p.Name, name, strings.Join(rates, ", "))
		}
	}
	for _, name := range sortedKeys(p.Caps) {
		if !slices.Contains(caps, name) {
			return fmt.Errorf("%w: plan %q: a maximum for in-flight cap %q, which no cap here has (caps: %s)", limiter.ErrInvalidPolicy, p.Name, name, strings.Join(caps, ", "))
		}
		if m := p.Caps[name]; m <= 0 || m > limiter.MaxLimit {
			return fmt.Errorf("%w: plan %q: in-flight cap %q: max %d must be in [1, %d]", limiter.ErrInvalidPolicy, p.Name, name, m, limiter.MaxLimit)
		}
	}
	return nil
}

// sortedKeys returns m's keys in order, so that an error names the
// first bad one whatever the map's order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// checkOrder reports two rates whose limits contradict their windows: a
// window always longer than another, with a lower limit. The shorter
// could never bind (a month of 600 over a minute of 10,000 refuses at
// the 600th request of the month whatever the minute), which is what
// limits given the wrong way round look like. A calendar window is
// compared by the lengths it may have in its zone (a day 23 to 25 hours,
// a month 28 to 31 days): windows whose lengths overlap (a day and 24
// hours, a month and 30 days) are not ordered. Equal limits pass: the
// shorter is redundant, not wrong. limiter.NewPolicy does not apply the
// rule to a policy's own limits.
func checkOrder(name string, rates []limiter.Rate) error {
	for i, a := range rates {
		for _, b := range rates[i+1:] {
			long, short := a, b
			if shortest(b) > longest(a) {
				long, short = b, a
			} else if shortest(a) <= longest(b) {
				continue // neither is always longer
			}
			if long.Limit < short.Limit {
				return fmt.Errorf("%w: policy %q: rate %v allows fewer than rate %v, whose window is shorter: "+
					"the shorter could never bind (limits in the wrong order?)", limiter.ErrInvalidPolicy, name, long, short)
			}
		}
	}
	return nil
}

// calendarBounds are the shortest and longest windows of each calendar
// period: an hour either way of a clock change.
var calendarBounds = map[string][2]time.Duration{
	"day":   {23 * time.Hour, 25 * time.Hour},
	"week":  {7*24*time.Hour - time.Hour, 7*24*time.Hour + time.Hour},
	"month": {28*24*time.Hour - time.Hour, 31*24*time.Hour + time.Hour},
}

// shortest and longest bound the length of r's windows.
func shortest(r limiter.Rate) time.Duration {
	if period, _, ok := r.Calendar(); ok {
		return calendarBounds[period][0]
	}
	return r.Window
}

func longest(r limiter.Rate) time.Duration {
	if period, _, ok := r.Calendar(); ok {
		return calendarBounds[period][1]
	}
	return r.Window
}
