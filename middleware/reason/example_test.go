package reason_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware/reason"
)

// outOfMemory stands for a Redis store error, which names its own reason.
type outOfMemory struct{}

func (outOfMemory) Error() string  { return "redisstore: out of memory" }
func (outOfMemory) Reason() string { return "out_of_memory" }

func ExampleOf() {
	for _, err := range []error{
		fmt.Errorf("take: %w", context.DeadlineExceeded),
		limiter.ErrClosed,
		fmt.Errorf("take: %w", outOfMemory{}),
		errors.New("something else"),
	} {
		fmt.Println(reason.Of(err))
	}
	// Output:
	// timeout
	// closed
	// out_of_memory
	// other
}
