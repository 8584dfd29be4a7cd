package sim_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/fixedwindow/ratelimit/example/lab/internal/sim"
)

// Four requests each side of the one-second boundary, against a limit of 4
// per second: the fixed window admits all eight within 40ms.
func Example() {
	csv := "# t,key\n0.97\n0.98\n0.99\n0.995\n1.00\n1.005\n1.01\n1.02\n"
	p, err := sim.Parse(strings.NewReader(csv), "boundary")
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := sim.Config{Limit: 4, Window: time.Second}
	results, err := sim.Simulate(context.Background(), p, cfg, []string{sim.FixedWindow, sim.SlidingLog})
	if err != nil {
		fmt.Println(err)
		return
	}
	sim.WriteTable(os.Stdout, p, cfg, results)
	// Output:
	// pattern boundary: 8 requests, limit 4 per second
	//
	// limiter        allowed  rejected  worst 1s
	// fixed-window         8         0         8
	// sliding-log          4         4         4
}

// A malformed line is reported with its number.
func ExampleParse_error() {
	_, err := sim.Parse(strings.NewReader("0.1\n0.2,alice\n0,2,bob\n"), "access.csv")
	fmt.Println(err)
	// Output:
	// access.csv:3: 3 fields, want a timestamp and at most a key
}
