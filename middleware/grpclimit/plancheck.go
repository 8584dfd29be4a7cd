package grpclimit

import (
	"fmt"

	"github.com/fixedwindow/ratelimit/internal/verdict"
)

// checkDeclared checks the plans of WithDeclaredPlans against every rate
// and cap the interceptor may ask: its own and each method's.
func (ic *Interceptor) checkDeclared(c *config) error {
	if !c.declOn {
		return nil
	}
	if c.lookup == nil {
		return fmt.Errorf("%w: WithDeclaredPlans needs WithPlans, which looks the plans up", ErrInvalidOption)
	}
	rules := ic.own.rules
	for _, ml := range ic.methods {
		rules = append(rules[:len(rules):len(rules)], ml.rules[0])
	}
	if err := verdict.CheckPlans("WithDeclaredPlans", c.declared, rules, ic.own.caps); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidOption, err)
	}
	return nil
}
