package limiter

import (
	"reflect"
	"runtime"
	"sync"
)

// Stores keep a key's counters by policy name and window (see Policy),
// so two limiters of one policy ID (name and windows) on one store count
// into one budget (and two InFlights of one name into one cap: their
// policy ids are "<name>:in-flight"). Nothing in their use says so: two
// routes each given a limiter of the policy "by-ip" on one Redis store
// admit the limit across both, where each was meant to admit it. So a
// limiter given a store claims its policy id on that store for as long
// as it lives, and New refuses a second live claim, whatever the limits.
// Sharing a budget on purpose means sharing one Limiter, or deciding
// under a plan's limits with Limiter.For, which shares its claim;
// replicas share one through their own store values, each claiming
// once. A limiter built again to replace a live one (a configuration
// reloaded) takes its claim over by naming it (WithReplace), so that a
// claim still refuses what nobody said was meant. Policies of one name and other windows (a plan per time zone:
// a month in Paris and a minute, a month in Tokyo and a minute) are
// other ids: each limiter counts its own windows, and the windows they
// have in common (the minute) are one per client key, as they should be.
//
// The claims are kept here, by store value, rather than by the stores:
// Store is an interface users implement, and a claim must hold for every
// store alike. An entry is removed when its limiter is closed or, for a
// limiter never closed (the one-line middlewares need no Close), when the
// garbage collector finds it unreachable, so the table holds only live
// limiters and the stores they keep alive anyway.
var claims = struct {
	mu sync.Mutex
	m  map[claimKey]*claimToken
}{m: map[claimKey]*claimToken{}}

// A claimKey is one id on one store value.
type claimKey struct {
	store any
	id    string
}

// A claimToken is one holder's claim; its address tells holders apart,
// so that a release finds its own entry and never another's.
type claimToken struct{ _ byte }

// claim claims id on store for owner, until release is called or owner
// becomes unreachable. It reports false, and claims nothing, when a live
// holder other than prev has the claim: a claim prev holds passes to
// owner, and prev's release and cleanup then leave it alone. A store
// whose dynamic type is not comparable (a struct value holding a map,
// say) cannot be told apart from a copy, and is not claimed: release is
// then a no-op and tok nil.
func claim[T any](owner *T, store any, id string, prev *claimToken) (release func(), tok *claimToken, ok bool) {
	if !reflect.TypeOf(store).Comparable() {
		return func() {}, nil, true
	}
	k := claimKey{store: store, id: id}
	tok = new(claimToken)
	claims.mu.Lock()
	defer claims.mu.Unlock()
	if cur, held := claims.m[k]; held && (prev == nil || cur != prev) {
		return nil, nil, false
	}
	claims.m[k] = tok
	var once sync.Once
	release = func() { once.Do(func() { unclaim(k, tok) }) }
	runtime.AddCleanup(owner, func(k claimKey) { unclaim(k, tok) }, k)
	return release, tok, true
}

// unclaim removes k's entry if tok still holds it.
func unclaim(k claimKey, tok *claimToken) {
	claims.mu.Lock()
	defer claims.mu.Unlock()
	if claims.m[k] == tok {
		delete(claims.m, k)
	}
}
