// Package console is a support console for the limits of a service: an
// http.Handler that support and on-call mount behind the service's own
// admin authentication to answer "why is customer X refused?" and fix
// it, in a browser or from a script.
//
// Look a key (a customer) up and the page shows every window of every
// limiter the service registered (used, limit, remaining, debt past the
// limit, when it resets, in the window's own zone) and the slots the key
// holds of every in-flight cap, updated every second while the page is
// open. Reset a key, or refund an amount under one limiter, each with a
// reason: on the memory store at once, on Redis at once in Redis and on
// every replica within a second, as limiter.Limiter.Reset. The same as
// JSON serves scripts (see New).
//
// It is secure by construction. New requires an authorizer, which says
// who asks and whether they may look or also change: a request it
// refuses gets 403 and nothing about the key, and a person who may only
// look sees no change form and is refused a change (403, audited). A change is a POST from
// the console's own origin that carries a CSRF token bound to the person;
// every key, name and reason is escaped by html/template and the page
// runs its own script alone (a content security policy); no key is
// listed unless the service hands the console a lister; every action,
// done or refused, reaches the observer: who, what, which key, when.
//
//	h, err := console.New(console.Config{
//		Authorize: func(r *http.Request) (string, console.Access) {
//			u, ok := admins.User(r) // the service's own admin auth
//			switch {
//			case !ok:
//				return "", 0 // refused
//			case u.OnCall:
//				return u.Name, console.Change // look, reset and refund
//			}
//			return u.Name, console.Look
//		},
//		Observe:  func(e console.Event) { audit.Info("console", "who", e.Who, "action", e.Action, "key", e.Key, "err", e.Err) },
//		Limiters: []*limiter.Limiter{api, monthly},
//		Caps:     []*limiter.InFlight{exports},
//	})
//	if err != nil {
//		log.Fatal(err)
//	}
//	mux.Handle("/admin/limits/", h)
//
// With Config.Refusals, fed by the doors' observers (NewRefusals), the
// page also says why a key was refused in the last hour, after its
// window rolled over, and which keys are limited now, across replicas
// that share Redis.
//
// The console reads the limiters and caps it is given with their own
// limits; Config.Plan reads each key under its own plan and zone.
// docs/console.md shows the page and lists the JSON.
package console
