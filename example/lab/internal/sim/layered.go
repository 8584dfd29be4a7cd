package sim

import (
	"fmt"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// LayeredParts is how many short windows the layered limiter cuts each long
// window into: the layered limiter is "limit per window plus limit/5 per
// window/5".
const LayeredParts = 5

// LayeredRates returns the two rates of the layered limiter for cfg: the
// long rate cfg.Limit per cfg.Window (or per cfg's calendar period), and
// a short rate of ceil(cfg.Limit/5) per cfg.Window/5.
//
// The short limit rounds up, never down: rounded down (12/5 → 2), five
// short windows would admit 10 < 12 per long window and the long limit
// could never be reached. Rounded up it is at least 1, so limits below 5
// still run, though such a short layer cannot narrow the boundary burst
// (see LayeredBound). The short window must be a whole number of
// milliseconds (the limiter counts in them), so cfg.Window must be a
// multiple of 5ms; any other window is an error, not a silent rounding,
// because a short window that does not divide the long one would let the
// two sets of boundaries drift apart and change the bound.
func LayeredRates(cfg Config) (long, short limiter.Rate, err error) {
	if err := cfg.Validate(); err != nil {
		return long, short, err
	}
	if cfg.Window%(LayeredParts*time.Millisecond) != 0 {
		return long, short, fmt.Errorf("%w: layered needs a window that splits into %d whole milliseconds; %v does not (use a multiple of %dms)",
			ErrInvalidConfig, LayeredParts, cfg.Window, LayeredParts)
	}
	if long, err = cfg.longRate(); err != nil {
		return long, short, err
	}
	short = limiter.Rate{Limit: (cfg.Limit + LayeredParts - 1) / LayeredParts, Window: cfg.Window / LayeredParts}
	return long, short, nil
}

func newLayered(cfg Config, keys int) (Model, error) {
	long, short, err := LayeredRates(cfg)
	if err != nil {
		return nil, err
	}
	p, err := limiter.NewPolicy("sim-layered", long, short)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return newLimiterModel(p, keys, cfg.base())
}

// LayeredBound returns the most requests a layered fixed-window limiter
// (long rate L per W, short rate S per w, where w divides W into m = W/w
// parts, every window aligned to the epoch) can admit for one key inside
// any half-open span of length W.
//
// A span [s, s+W) that starts exactly on a short boundary covers m whole
// short windows. One that starts inside short window j (0 ≤ j < m) of long
// window k ends inside short window j of long window k+1, so it touches
// m+1 short windows: m−j at the tail of window k and j+1 at the head of
// window k+1. The tail holds at most min(L, (m−j)·S) requests (both its
// long window and its short windows cap it) and the head min(L, (j+1)·S),
// and both caps can be met at once: fill the tail's short windows from
// their ends (the first one from s on) and the head's from their starts.
// So the bound is
//
//	max over j of min(L, (m−j)·S) + min(L, (j+1)·S)  ≤  min(2L, (m+1)·S)
//
// It is not L + L/m in general. With L = 10 and S = 2 per fifth it is 12
// (= 6·S, which happens to equal L + L/5 because 5 divides 10). With L = 12,
// S = ceil(12/5) = 3 it is 18, not 14.4 or 15. With L < 5, S = 1 and it is
// 2L: a short layer that small cannot narrow the burst at all. The classic
// layering, 100 per minute with 5 per second, gives 200 = 2L for a
// minute's span: sixty seconds of 5 hold more than 100, so the short layer
// caps the burst inside any second (10 across a second boundary) but not
// over the long window. In general the bound is below 2L when
// (m+1)·S < 2L, and exactly 2L once m+1 ≥ 2·ceil(L/S) (the short windows
// of each half of the span can then hold a whole L).
func LayeredBound(long, short limiter.Rate) int64 {
	m := int64(long.Window / short.Window)
	L, S := long.Limit, short.Limit
	capped := func(parts int64) int64 {
		if parts > 0 && S > L/parts {
			return L
		}
		return min(L, parts*S)
	}
	var worst int64
	for j := int64(0); j < m; j++ {
		worst = max(worst, capped(m-j)+capped(j+1))
	}
	return worst
}

// CalendarLayeredBound returns the most requests the layered limiter with
// a calendar long window (L per day, week or month of a zone) and short
// rate S per w can admit for one key inside any half-open span of length
// span = m·w: min(2L, (m+1)·S). Such a span touches at most m+1 short
// windows and, being shorter than a day, at most two calendar windows,
// each holding at most L. LayeredBound's finer formula assumes the long
// boundary falls on a short one; a calendar boundary is a whole second,
// inside a short window that does not divide a second, whose S it then
// shares between the two days, so only the coarser bound holds for
// every w.
func CalendarLayeredBound(long, short limiter.Rate, span time.Duration) int64 {
	m := int64(span / short.Window)
	return min(2*long.Limit, (m+1)*short.Limit)
}
