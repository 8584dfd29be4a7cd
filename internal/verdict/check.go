package verdict

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/fixedwindow/ratelimit/limiter"
)

// A Policied limiter names the policy it applies, as every limiter of
// the middleware and the gRPC interceptor does.
type Policied interface {
	Policy() *limiter.Policy
}

// Check reports a limiter that cannot be asked: nil, a typed nil (a
// *limiter.Limiter left nil by a failed limiter.New whose error was
// dropped, which would panic on the first request), or one without a
// policy. Both doors' constructors call it, and wrap its error.
func Check(l Policied) error {
	if l == nil {
		return errors.New("limiter is nil")
	}
	if v := reflect.ValueOf(l); v.Kind() == reflect.Pointer && v.IsNil() {
		return fmt.Errorf("limiter is a nil %T (was the error of the constructor that made it dropped?)", l)
	}
	if l.Policy() == nil {
		return errors.New("limiter has no policy")
	}
	return nil
}
