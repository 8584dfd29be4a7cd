package redisstore

import (
	"context"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// A leftover is what a lease held unspent when it ended (maxLocalAge
// after its grant, or a settle that charged more): units charged in
// Redis to the windows that held at, the instant of the grant that
// leased them (Redis's time under serverClock), and spent by nobody;
// and older units, leased by grants at olderAt or later.
type leftover struct {
	units, at      int64
	older, olderAt int64
}

// giveBack returns left to the windows of req's key under its policy that
// charged it, if they are still current (a refund: never below zero,
// never to a later window), before req is decided, so that req and every
// replica after it find the units in Redis: the request that found its
// replica's lease ended pays the round trip, once per lease. now is req's instant, which says on the
// limiter's clock whether the windows are current. It is bounded by the
// store's timeout and by deadline; a failure leaves the units charged,
// as a lease stranded at a window's end leaves them.
//
// Units leased before a Reset go back to nothing: the Reset's marks
// (reset.lua) refuse them, since the budget they were counted in has
// ended. Stats.GivenBack counts the units that went back.
func (s *Store) giveBack(ctx context.Context, req *limiter.Request, left leftover, deadline time.Time) {
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	back := limiter.Request{Key: req.Key, Policy: req.Policy, Now: req.Now, Cost: left.units}
	d := limiter.Dated(limiter.Decision{Allowed: true, Policy: req.Policy}, time.UnixMilli(left.at))
	if n, err := s.refundRedis(ctx, back, &d, leftPart{left.older, left.olderAt}); err == nil {
		s.stats.givenBack.Add(uint64(n))
	}
}
