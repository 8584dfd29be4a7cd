// Package sim replays a traffic pattern through rate limiters on a fake
// clock, so that the lab can show where fixed windows are weak without
// waiting for real time to pass.
//
// A [Pattern] is a list of request instants (offsets from the Unix epoch,
// so that they fall in the same epoch-aligned windows as the limiter's) and
// keys. [Simulate] runs it through limiters chosen by name: "none",
// "fixed-window" and "layered" are the module's real limiter.Limiter over
// its in-memory store with a fake clock; "sliding-log" and "token-bucket"
// are small reference models, kept for comparison only.
//
//	p, err := sim.Parse(f, "access.csv")
//	if err != nil {
//		return err // "access.csv:12: ..."
//	}
//	cfg := sim.Config{Limit: 10, Window: time.Second}
//	results, err := sim.Simulate(ctx, p, cfg, sim.Names())
//	if err != nil {
//		return err
//	}
//	sim.WriteTable(os.Stdout, p, cfg, results)
//
// The package draws nothing: plotting lives in the lab command, so that no
// plotting library enters this package's import graph.
package sim
