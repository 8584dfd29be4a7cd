package middleware

import (
	"github.com/fixedwindow/ratelimit/internal/verdict"
	"github.com/fixedwindow/ratelimit/limiter"
)

// moreRestrictive reports whether a tells the client less than b does about
// what it may still spend: verdict.More, the rule the gRPC interceptor
// shares.
func moreRestrictive(a, b *limiter.Decision) bool { return verdict.More(a, b) }
