// Package headers writes the rate-limit headers of a limiter.Decision onto
// an HTTP response, and the 429 response of a denial.
//
// On every limited response a Writer sets X-RateLimit-Limit,
// X-RateLimit-Remaining and X-RateLimit-Reset (the Unix second at which
// the deciding window ends: windows are aligned, so this is the boundary,
// never "one window from now"). On a denial only it adds Retry-After, the
// seconds until that boundary rounded up and at least 1. Opt in to the
// IETF draft fields (draft-ietf-httpapi-ratelimit-headers-10) with
// WithDraftHeaders:
//
//	RateLimit-Policy: "api-1m";q=100;w=60, "api-1s";q=5;w=1
//	RateLimit: "api-1s";r=0;t=1
//
// An in-flight cap (limiter.InFlight) is a policy of the draft's unit
// concurrent-requests: "exports";q=5;qu="concurrent-requests" in
// RateLimit-Policy, its slots left in RateLimit ("exports";r=4, no t),
// and no X-RateLimit-Reset on its refusal; Write lists caps given
// among its decisions after the rates.
//
// Header names are case-insensitive, and net/http sends each in canonical
// form: X-RateLimit-Limit goes out as X-Ratelimit-Limit, and over HTTP/2
// every name is lowercase (x-ratelimit-limit). Match them without case, as
// Header.Get does; WithNames renames them.
//
// Write runs on every request, so it costs one allocation and no fmt
// (none with WriteBuffer). A decision is dated by its own instant
// (DecidedAt); the Writer keeps no clock. Write and WriteDenied take, for
// a response that several limits applied to, every one's decision: the
// draft fields then list every window of each, the X-RateLimit-* the
// most restrictive.
//
// Typical use, outside the middleware (which calls these for you):
//
//	hw, err := headers.New(headers.WithDraftHeaders(), headers.WithProblemJSON("", ""))
//	if err != nil {
//		log.Fatal(err)
//	}
//	d, err := lim.Allow(r.Context(), key, 1)
//	// handle err
//	if !d.Allowed {
//		hw.WriteDenied(w, r, &d)
//		return
//	}
//	hw.Write(w.Header(), &d)
package headers
