package middleware

import (
	"fmt"

	"github.com/fixedwindow/ratelimit/internal/verdict"
)

// checkDeclared checks the plans of WithDeclaredPlans against the
// middleware's rates and caps.
func (c *config) checkDeclared() error {
	if !c.declaredOn {
		return nil
	}
	if c.lookup == nil {
		return fmt.Errorf("%w: WithDeclaredPlans needs WithPlans, which looks the plans up", ErrInvalidOption)
	}
	if err := verdict.CheckPlans("WithDeclaredPlans", c.declared, c.shared, c.capLimits); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidOption, err)
	}
	return nil
}
