package middleware

import (
	"github.com/fixedwindow/ratelimit/internal/verdict"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
)

// maxCaps is the most in-flight caps one middleware applies
// (WithInFlight): a cap per client and one for everyone, say.
const maxCaps = verdict.MaxCaps

// A capRule is one in-flight cap and the key it is applied to.
type capRule struct {
	f   *limiter.InFlight
	key keyfunc.Func // nil: the middleware's key, rule 0's, resolved once
}

// heldCaps are the slots one middleware holds for a request, as the
// headers describe them: the innermost middleware's is in the request's
// state, linked to the outer ones'. The slots themselves are given back
// through the request's verdict.Life, which holds the release funcs.
type heldCaps = verdict.CapsList
