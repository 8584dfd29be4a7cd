// Package limiter is a fixed-window rate limiter.
//
// Time is cut into windows aligned to the Unix epoch: a one-minute window
// runs from hh:mm:00.000 to hh:mm:59.999 UTC for every key at once. Each key
// holds one counter per window; the counter starts again, lazily, at the
// first request of the next window. No timer runs per key.
//
// Calendar rates cut time at a zone's local boundaries instead: [PerDayIn]
// at every local midnight, [PerWeekIn] on Mondays, [PerMonthIn] on the 1st,
// with the zone's real days (23 or 25 hours where the clocks change) and
// months (28 to 31 days), for plans sold as "10,000 a day" that reset at
// the customer's midnight. They layer with fixed windows in one policy. A
// program on a system without the tz database (a minimal container image)
// cannot load a zone: its main package imports time/tzdata to embed one.
// This package does not, so that programs that load no zone are spared its
// 450 KB.
//
// A [Policy] names one or more [Rate]s. With several ("100 per minute and 5
// per second") a request is admitted only if every window has room, and
// then every window is charged; if any window refuses, none is charged.
//
// Fixed windows admit up to twice the limit across a boundary: a client may
// spend a whole budget at 12:00:59.9 and a fresh one at 12:01:00.0. That is
// the algorithm, not a bug. Layer a short window under the long one to bound
// the burst.
//
// A denial is a [Decision] with Allowed false, never an error. Errors mean
// bad input (a non-positive cost, an empty key), a closed store, a cancelled
// context, or a store that could not answer. A decision that timed out or
// was cancelled on its way through a remote store may still have been
// charged (see [Store]).
//
// The limiter owns the one clock ([WithClock], the system clock by
// default) and reads it once per decision; its store, and the middleware
// and headers built on it, take their instants from it, so no other clock
// is kept in step. Tests move a limitertest.Clock to cross a window
// without sleeping; [Limiter.AllowAt] decides at an instant given instead.
//
// An [InFlight] caps concurrency rather than rate: at most max requests
// of a key at once (NewInFlight), each holding a slot from Acquire until
// it calls the release func Acquire returned. Slots live in the memory
// store, or in Redis to share one cap across replicas (a slot there is
// leased, renewed while held and given back within the lease when its
// holder dies). A cap's Policy names it in headers and metrics; it has no
// rates, and New refuses it.
//
//	p, err := limiter.NewPolicy("api", limiter.PerMinute(100), limiter.PerSecond(5))
//	if err != nil {
//		log.Fatal(err)
//	}
//	l, err := limiter.New(p) // in-memory store
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer l.Close()
//	d, err := l.Allow(ctx, "client-42", 1)
//	if err == nil && !d.Allowed {
//		// refuse; retry after d.RetryAfter
//	}
package limiter
