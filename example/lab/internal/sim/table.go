package sim

import (
	"bufio"
	"fmt"
	"io"
	"time"
)

// WriteTable writes the lab's table of results: a line naming the pattern
// and the limit, then one row per limiter with the requests it allowed and
// rejected and its worst span of one window ("worst 1s"). For a pattern of
// several keys the line says so and a column gives the busiest key's worst
// span, the figure the per-key limit bounds. When the layered limiter is
// among the results, a last line gives its two rates and its bound.
//
// The layout is 15 columns of name, then right-aligned numbers under
// headers "allowed", "rejected" and the span's.
func WriteTable(w io.Writer, p *Pattern, cfg Config, results []Result) error {
	bw := bufio.NewWriter(w)
	keys := p.Keys()
	span := "worst " + ShortDuration(cfg.Window)
	spanWidth := max(10, len(span)+2)
	fmt.Fprintf(bw, "%s\n\n", Caption(p, cfg))
	perKey := span + "/key"
	fmt.Fprintf(bw, "%-15s%7s%10s%*s", "limiter", "allowed", "rejected", spanWidth, span)
	if keys > 1 {
		fmt.Fprintf(bw, "%*s", len(perKey)+2, perKey)
	}
	fmt.Fprintln(bw)
	layered := false
	for _, r := range results {
		fmt.Fprintf(bw, "%-15s%7d%10d%*d", r.Limiter, r.Allowed, r.Rejected, spanWidth, r.Worst(p, cfg.Window))
		if keys > 1 {
			fmt.Fprintf(bw, "%*d", len(perKey)+2, r.WorstPerKey(p, cfg.Window))
		}
		fmt.Fprintln(bw)
		layered = layered || r.Limiter == Layered
	}
	if layered {
		long, short, err := LayeredRates(cfg)
		if err != nil {
			return err
		}
		per, bound := ShortDuration(long.Window), LayeredBound(long, short)
		if cfg.Calendar != "" {
			per, bound = cfg.perLong(), CalendarLayeredBound(long, short, cfg.Window)
		}
		fmt.Fprintf(bw, "\nlayered is %d per %s and %d per %s: at most %d in any %s per key\n",
			long.Limit, per, short.Limit, ShortDuration(short.Window), bound, ShortDuration(cfg.Window))
	}
	return bw.Flush()
}

// Caption describes a run in one line: "pattern edge: 20 requests, limit 10
// per second", and when the pattern starts at an instant of its own,
// "from 2026-03-28T23:59:59+01:00".
func Caption(p *Pattern, cfg Config) string {
	from := ""
	if !cfg.Start.IsZero() {
		from = ", from " + cfg.Start.Format(time.RFC3339Nano)
	}
	if keys := p.Keys(); keys > 1 {
		return fmt.Sprintf("pattern %s: %d requests from %d keys, limit %d per %s per key%s",
			p.Name, len(p.Requests), keys, cfg.Limit, cfg.perLong(), from)
	}
	return fmt.Sprintf("pattern %s: %d requests, limit %d per %s%s", p.Name, len(p.Requests), cfg.Limit, cfg.perLong(), from)
}
