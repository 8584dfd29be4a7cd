// Package limitertest helps test code that is rate limited: a Clock that
// moves only when told, so that a test crosses a window without sleeping.
//
// Give the clock to the limiter with limiter.WithClock; it is the only
// clock to set, since the store, the middleware and the headers all take
// their instants from the limiter:
//
//	clk := limitertest.New(time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC))
//	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(2)), limiter.WithClock(clk))
//	if err != nil {
//		t.Fatal(err)
//	}
//	defer l.Close()
//	// ... spend the budget through the handler under test ...
//	clk.Advance(time.Minute) // the next window: the budget is back
//
// A limiter given this clock makes its in-memory store with no background
// sweep, since the sweep runs on real time and would free a window the
// clock stands in: a spent budget stays spent until the clock moves. A
// limiter.MemoryStore passed with limiter.WithStore under this clock
// should be made with limiter.WithSweepInterval(0) for the same reason.
package limitertest
