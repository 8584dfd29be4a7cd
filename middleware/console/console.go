package console

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/fixedwindow/ratelimit/internal/keyhash"
	"github.com/fixedwindow/ratelimit/limiter"
)

// A Config says what a console shows, to whom, and who hears of what is
// done with it. New checks it once; Authorize and Observe are required.
// The zero Config is refused by New.
type Config struct {
	// Authorize names the person a request comes from, by the service's
	// own admin authentication (a session, a client certificate, a
	// header its proxy sets), and says what they may do: Look, or
	// Change (look, reset and refund). who names them in the audit
	// trail and binds their CSRF token, so it must be the same for
	// every request of one person. The zero Access, or an empty who,
	// refuses the request: 403 and a body that says nothing about the
	// key. Required: a console has no open door.
	Authorize func(r *http.Request) (who string, may Access)
	// Observe is told of every action asked of the console, done or not,
	// and of every request Authorize refused (see Event): the audit
	// trail. It runs on the request's goroutine before the answer is
	// written, so it must not block for long. Required.
	Observe func(Event)
	// Limiters are the limiters whose windows the console shows, resets
	// and refunds, in this order, each under its policy's name (which
	// must differ). Reset forgets a key under every one.
	Limiters []*limiter.Limiter
	// Caps are the in-flight caps whose slots the console shows, each
	// under its name. A cap's slots are held by requests running: the
	// console never takes them away.
	Caps []*limiter.InFlight
	// Plan, if set, returns key's plan and the zone its calendar rates
	// count in, as the service's middleware.WithPlans lookup does for a
	// request: each limiter and cap is then read under the plan's limits
	// and in that zone (limiter.Limiter.For, limiter.InFlight.For), on
	// the same usage. Nil: each is read under its own limits.
	Plan func(ctx context.Context, key string) (plan *limiter.Plan, zone string, err error)
	// List, if set, returns the keys that start with prefix, for the
	// page to list the first 100 of. Stores keep no index of keys: a
	// service lists them from where it knows its customers. Nil: the
	// console lists no key, and a key is found by typing it. Under
	// redisstore.WithKeyHash, Redis holds only keyed hashes of the keys,
	// which no prefix finds and the console cannot look up: a List that
	// returns one (a key starting "hmac:", as a SCAN of Redis would) is
	// refused with an error saying so; list the clear keys from the
	// service's own records, and each is then found by its clear key.
	List func(ctx context.Context, prefix string) ([]string, error)
	// CSRFSecret keys the CSRF tokens (which rotate every hour by the
	// console's clock and are taken for two at most) and the notices
	// after a change: at least 32 bytes. Default: 32 random bytes drawn
	// by New, so that tokens hold while the process lives. Replicas
	// behind one balancer need one secret, or a page one served is
	// refused by another.
	CSRFSecret []byte
	// Refusals, if set, is what the service's doors refused in the last
	// hour (fed by their observers): the page and the JSON then say
	// when a key looked up was refused, under which policy's window,
	// how many times, and which keys are limited now. Nil: neither is
	// shown.
	Refusals *Refusals
}

// Bounds on the console's own work.
const (
	// readTimeout bounds a lookup in case a store does not bound its
	// own calls (the Redis store does, with its timeout).
	readTimeout = 10 * time.Second
	// maxListed is the most keys a page or a JSON listing shows.
	maxListed = 100
)

// handler is the console; New builds it.
type handler struct {
	authorize func(*http.Request) (string, Access)
	observer  func(Event)
	list      func(context.Context, string) ([]string, error)
	refusals  *Refusals
	src       source
	clock     limiter.Clock
	secret    []byte
	origin    *http.CrossOriginProtection
}

// New returns the console's handler, to mount behind the service's admin
// authentication at a path of its own that ends in a slash:
// mux.Handle("/admin/limits/", h). It serves, relative to that path:
//
//	GET  ./?key=K        the page: K's windows and slots, kept up to date while open
//	GET  ./usage?key=K   the same as JSON, with the CSRF token for a change
//	POST ./reset         forget a key under every limiter (key, reason; a form also confirm=reset)
//	POST ./refund        give units back under one limiter (key, policy, amount, reason)
//	GET  ./keys?prefix=P keys listed by Config.List, as JSON
//	GET  ./limited       the keys limited now, by Config.Refusals, as JSON
//	GET  ./events?key=K  the page's live updates: K's report every second (server-sent events)
//
// A key is key=K, or key64=base64url(K) as the page carries it. A POST
// is a form, or JSON with the token in an X-CSRF-Token header; it must
// come from the console's own origin, from a person Authorize lets
// Change. New reports a Config it cannot serve: no Authorize or Observe,
// no limiter and no cap, a nil one, two of one name, a CSRFSecret under
// 32 bytes.
func New(cfg Config) (http.Handler, error) {
	switch {
	case cfg.Authorize == nil:
		return nil, errors.New("console: Config.Authorize is nil: the console has no open door; give it the check of your admin authentication")
	case cfg.Observe == nil:
		return nil, errors.New("console: Config.Observe is nil: every action must reach an audit trail")
	case len(cfg.Limiters) == 0 && len(cfg.Caps) == 0:
		return nil, errors.New("console: no Limiters and no Caps to show")
	case cfg.CSRFSecret != nil && len(cfg.CSRFSecret) < minSecret:
		return nil, fmt.Errorf("console: Config.CSRFSecret is %d bytes, fewer than %d", len(cfg.CSRFSecret), minSecret)
	}
	for i, l := range cfg.Limiters {
		if l == nil {
			return nil, fmt.Errorf("console: Config.Limiters[%d] is nil", i)
		}
	}
	for i, f := range cfg.Caps {
		if f == nil {
			return nil, fmt.Errorf("console: Config.Caps[%d] is nil", i)
		}
	}
	h := &handler{
		authorize: cfg.Authorize, observer: cfg.Observe, list: cfg.List, refusals: cfg.Refusals,
		src:    source{limiters: cfg.Limiters, caps: cfg.Caps, plan: cfg.Plan},
		secret: cfg.CSRFSecret, origin: http.NewCrossOriginProtection(),
	}
	ls, cs := h.src.policyNames()
	for _, names := range [][]string{ls, cs} {
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] {
				return nil, fmt.Errorf("console: two limiters or two caps named %q: a refund names the one it means", n)
			}
			seen[n] = true
		}
	}
	h.clock = h.src.clock()
	if h.secret == nil {
		h.secret = make([]byte, minSecret)
		_, _ = rand.Read(h.secret) // never fails (crypto/rand)
	}
	return h, nil
}

// ServeHTTP authorizes r, then serves the route its path ends in.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secure(w.Header())
	who, may := h.authorize(r)
	if may < Look || who == "" {
		h.observe(Event{At: h.clock.Now(), Action: "forbidden", Err: errors.New("console: refused by Config.Authorize"), Request: r})
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	name := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	post := name == "reset" || name == "refund"
	switch {
	case !post && r.Method != http.MethodGet && r.Method != http.MethodHead:
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	case post && r.Method != http.MethodPost:
		// A GET of a change is the classic forgery (an <img> of
		// ./reset?key=K): refused, and the audit trail hears of it with
		// the key it aimed at.
		ev := Event{At: h.clock.Now(), Who: who, Action: name, Request: r,
			Err: &refusal{http.StatusMethodNotAllowed, "console: " + name + " must be a POST, not a " + r.Method}}
		if key, err := carriedKey(r.URL.Query()); err == nil && checkKey("key", key) == nil {
			ev.Key = key
		}
		h.observe(ev)
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch name {
	case "":
		h.page(w, r, who, may)
	case "usage":
		h.usage(w, r, who, may)
	case "events":
		h.watch(w, r, who, may)
	case "keys":
		h.keys(w, r, who)
	case "limited":
		h.limited(w, r, who)
	case "reset", "refund":
		h.change(w, r, who, name, may)
	default:
		if !serveAsset(w, name) {
			http.NotFound(w, r)
		}
	}
}

// observe tells the observer of e, without the request's CSRF token.
func (h *handler) observe(e Event) {
	e.Request = withoutToken(e.Request)
	h.observer(e)
}

// secure sets the headers every answer carries: a content security
// policy that runs the console's own script and style sheet and nothing
// else (no inline script, no other origin, no framing), no sniffing, no
// referrer, no caching of a customer's usage.
func secure(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "+
		"img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// lookup reads key's usage of every limiter and cap, and tells the
// observer who looked (action "lookup" or "watch").
func (h *handler) lookup(r *http.Request, who, action, key string) *report {
	rep, err := h.read(r, key)
	h.observe(Event{At: h.clock.Now(), Who: who, Action: action, Key: key, Err: err, Request: r})
	return rep
}

// read reads key's usage of every limiter and cap, and returns the first
// failure beside the report, which shows them all.
func (h *handler) read(r *http.Request, key string) (*report, error) {
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	at := h.clock.Now()
	ls, cs := h.src.read(ctx, key)
	var err error
	for _, rd := range append(ls, cs...) {
		if rd.err != nil && err == nil {
			err = rd.err
		}
	}
	return newReport(key, at, ls, cs), err
}

// usage answers GET usage?key=K: K's report as JSON, with the CSRF token
// a script sends back with a change (for a person who may change). A
// store that failed makes it a 503, with what could be read.
func (h *handler) usage(w http.ResponseWriter, r *http.Request, who string, may Access) {
	key, ok := h.queryKey(w, r, who, "lookup")
	if !ok {
		return
	}
	rep := h.lookup(r, who, "lookup", key)
	rep.CSRFToken = h.tokenFor(who, may)
	rep.Refused = h.refused(r, key)
	writeJSON(w, reportStatus(rep), rep)
}

// refused returns key's refusals of the last hour, or nil without
// Config.Refusals.
func (h *handler) refused(r *http.Request, key string) *refusedView {
	if h.refusals == nil {
		return nil
	}
	return h.refusals.about(r.Context(), key, h.clock.Now())
}

// limitedNow returns the keys limited now, or nil without
// Config.Refusals; it tells the observer who looked (action "limited").
func (h *handler) limitedNow(r *http.Request, who string) *limitedView {
	if h.refusals == nil {
		return nil
	}
	v := h.refusals.limitedNow(r.Context(), h.clock.Now())
	var err error
	if v.Error != "" {
		err = errors.New(v.Error)
	}
	h.observe(Event{At: h.clock.Now(), Who: who, Action: "limited", Err: err, Request: r})
	return v
}

// limited answers GET limited: the keys limited now as JSON, or 404
// when the service gave the console no Refusals. Other replicas'
// refusals that could not be read leave this one's, and an "error".
func (h *handler) limited(w http.ResponseWriter, r *http.Request, who string) {
	v := h.limitedNow(r, who)
	if v == nil {
		http.NotFound(w, r)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// queryKey returns the key r's query asks about; a bad one it answers
// as JSON (400, saying why) and tells the observer of, as action.
func (h *handler) queryKey(w http.ResponseWriter, r *http.Request, who, action string) (string, bool) {
	key, err := carriedKey(r.URL.Query())
	if err == nil {
		err = checkKey("key", key)
	}
	if err != nil {
		h.observe(Event{At: h.clock.Now(), Who: who, Action: action, Err: err, Request: r})
		writeError(w, err)
		return "", false
	}
	return key, true
}

// reportStatus is a report's status: 503 if a store could not be read.
func reportStatus(rep *report) int {
	if rep.Failed {
		return http.StatusServiceUnavailable
	}
	return http.StatusOK
}

// keys answers GET keys?prefix=P with what Config.List returns, or 404
// when the service gave the console no lister.
func (h *handler) keys(w http.ResponseWriter, r *http.Request, who string) {
	if h.list == nil {
		http.NotFound(w, r)
		return
	}
	keys, more, err := h.listKeys(r, who)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Keys []string `json:"keys"`
		More bool     `json:"more"`
	}{keys, more})
}

// listKeys asks Config.List for the keys of r's prefix, the first
// maxListed of them, and tells the observer.
func (h *handler) listKeys(r *http.Request, who string) (keys []string, more bool, err error) {
	var prefix string
	ev := Event{At: h.clock.Now(), Who: who, Action: "list", Request: r}
	if prefix, err = okPrefix(r); err == nil {
		ev.Key = prefix
		ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
		keys, err = h.list(ctx, prefix)
		cancel()
		if err != nil {
			err = fmt.Errorf("console: list: %w", err)
		} else if err = hashedKeys(keys); err != nil {
			keys = nil
		}
	}
	ev.Err = err
	h.observe(ev)
	if len(keys) > maxListed {
		keys, more = keys[:maxListed], true
	}
	return keys, more, err
}

// hashedKeys reports a listing of keys a store hashed
// (redisstore.WithKeyHash), which the console would hash again and never
// find.
func hashedKeys(keys []string) error {
	for _, k := range keys {
		if strings.HasPrefix(k, keyhash.Kind) {
			return errors.New("console: list: Config.List returned hashed keys (" + keyhash.Kind + "..., as redisstore.WithKeyHash stores them), " +
				"which cannot be looked up: list the clear keys from the service's own records")
		}
	}
	return nil
}

// okPrefix returns r's prefix to list, or why it is refused.
func okPrefix(r *http.Request) (string, error) {
	prefix := r.URL.Query().Get("prefix")
	return prefix, checkKey("prefix", prefix)
}

// change answers POST reset and POST refund. It acts only on a request
// from the console's origin (Sec-Fetch-Site, or Origin against Host)
// that carries the token of the person Authorize named, with a good key
// and a reason; a refund also names a limiter and an amount from 1 to
// what the key used. A form is answered with a redirect to the key's
// page (Post/Redirect/Get) or the page with the problem; JSON with the
// key's report or {"error": ...}.
func (h *handler) change(w http.ResponseWriter, r *http.Request, who, action string, may Access) {
	refund := action == "refund"
	ev := Event{At: h.clock.Now(), Who: who, Action: action, Request: r}
	c, err := h.admit(w, r, who, may, refund)
	if checkKey("key", c.Key) == nil {
		ev.Key = c.Key
	}
	if ev.Key != "" && errorStatus(err) != http.StatusForbidden {
		if reason := strings.TrimSpace(c.Reason); checkReason(reason) == nil {
			ev.Reason = reason // never one that could forge a line of the audit log
		}
		if refund && !strings.ContainsFunc(c.Policy, hidden) {
			ev.Policy, ev.Amount = c.Policy, c.Amount
		}
	}
	var notice string
	if err == nil {
		ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
		if refund {
			var back []returned
			if back, err = h.src.refund(ctx, c.Key, c.Policy, c.Amount); err == nil {
				notice = refundText(h.clock.Now(), c.Policy, c.Amount, back)
			}
		} else if err = h.src.reset(ctx, c.Key); err == nil {
			notice = resetNotice(h.clock.Now())
		}
		cancel()
	}
	ev.Err = err
	h.observe(ev)
	switch {
	case wantsJSON(r) && err != nil:
		writeError(w, err)
	case wantsJSON(r):
		rep := h.lookup(r, who, "lookup", c.Key)
		rep.CSRFToken, rep.Done, rep.Notice = h.tokenFor(who, may), action, notice
		writeJSON(w, reportStatus(rep), rep)
	case errorStatus(err) == http.StatusForbidden:
		http.Error(w, err.Error(), http.StatusForbidden) // a forged request gets no page
	case err != nil && ev.Key == "":
		h.render(w, r, who, pageData{Problem: err.Error(), CanChange: true}, errorStatus(err))
	case err != nil:
		h.render(w, r, who, pageData{Key: c.Key, Report: h.lookup(r, who, "lookup", c.Key), Problem: err.Error(), CanChange: true}, errorStatus(err))
	default:
		// Relative, so that it holds wherever the console is mounted,
		// with or without http.StripPrefix.
		w.Header().Set("Location", "./?key="+url.QueryEscape(c.Key)+"&done="+h.signNotice(who, c.Key, notice))
		w.WriteHeader(http.StatusSeeOther)
	}
}

// admit reads and checks a change: the person's access, the origin, then
// the token, then the input. They are checked before anything in the
// body is believed.
func (h *handler) admit(w http.ResponseWriter, r *http.Request, who string, may Access, refund bool) (change, error) {
	err := mayChange(who, may)
	if err == nil {
		if err = h.origin.Check(r); err != nil {
			err = &refusal{http.StatusForbidden, "console: refused a request from another origin: " + err.Error()}
		}
	}
	if err != nil {
		// Read, not believed: only for the audit trail to name the key
		// it aimed at.
		c, _ := readChange(w, r, refund)
		return change{Key: c.Key}, err
	}
	c, err := readChange(w, r, refund)
	if err != nil {
		return change{}, err
	}
	if !h.validToken(who, c.token, h.clock.Now()) {
		return change{Key: c.Key}, &refusal{http.StatusForbidden, "console: missing or invalid CSRF token"}
	}
	return c, c.check(refund)
}

// errorStatus is the status that answers err: a refusal's own, else 503
// (a store that could not act), and 200 for no error.
func errorStatus(err error) int {
	var ref *refusal
	switch {
	case err == nil:
		return http.StatusOK
	case errors.As(err, &ref):
		return ref.status
	}
	return http.StatusServiceUnavailable
}

// writeError answers err as JSON: {"error": "..."}, with its status.
func writeError(w http.ResponseWriter, err error) {
	writeJSON(w, errorStatus(err), struct {
		Error string `json:"error"`
	}{err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
