package limiter_test

import (
	"context"
	"fmt"

	"github.com/fixedwindow/ratelimit/limiter"
)

// At most two exports of one tenant at once: the third waits for one of
// them to end.
func ExampleInFlight() {
	exports, err := limiter.NewInFlight("exports", 2) // in memory
	if err != nil {
		panic(err)
	}
	defer exports.Close()
	ctx := context.Background()
	var releases []func()
	for range 3 {
		d, release, err := exports.Acquire(ctx, "tenant-7")
		if err != nil {
			panic(err)
		}
		fmt.Printf("allowed=%v remaining=%d retry=%v\n", d.Allowed, d.Remaining, d.RetryAfter)
		if release != nil {
			releases = append(releases, release) // a handler would defer it
		}
	}
	releases[0]() // the first export ends
	d, release, _ := exports.Acquire(ctx, "tenant-7")
	fmt.Printf("allowed=%v remaining=%d\n", d.Allowed, d.Remaining)
	release()
	releases[1]()
	// Output:
	// allowed=true remaining=1 retry=0s
	// allowed=true remaining=0 retry=0s
	// allowed=false remaining=0 retry=1s
	// allowed=true remaining=0
}
