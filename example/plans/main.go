// Command plans sells API plans whose quotas reset at each customer's own
// midnight and on the 1st of the customer's month. Every plan counts the
// same windows, a day and a month in the customer's zone and a minute,
// with limits of its own, so a customer moved to another plan keeps what
// they used:
//
//   - starter: 5 a day, 50 a month, 5 a minute.
//   - pro: 500 a day, 10,000 a month, and at most 20 in any minute, so
//     that a day's budget cannot be spent in a burst.
//   - trial (an API key the service does not know): 3 a day, by UTC.
//
// and every customer runs at most 2 exports at once.
//
// The customers are a table in code: an API key, a plan and a time zone.
// Each zone has one limiter, built at start, and each plan is that
// limiter under the plan's limits (Limiter.WithLimits): the counters
// belong to the customer, the limits to the plan, looked up per request by
// a resolver keyed by the API key. A policy's ID names its zone
// ("api:day@Europe/Paris:month@Europe/Paris:60000"), so two customers in
// two zones never share a day, and each day ends at its own midnight: 23
// hours long where the clocks spring forward.
//
//	GET  /api/quote    a request under the customer's plan
//	GET  /api/export   a long one, at most 2 at once per customer
//	GET  /usage        the customer's balance, every window, and the exports running, as JSON
//	POST /plan?to=pro  move the customer to another plan, keeping their usage
//
// The blank import of time/tzdata embeds the tz database in the binary, so
// that it loads zones in a minimal container image, which has none. The
// library does not import it: a program that loads no zone does not pay
// its 450 KB.
//
// Run it and try it:
//
//	go run ./example/plans
//	for i in $(seq 6); do curl -s -o /dev/null -w '%{http_code} ' -H 'X-API-Key: key-lumiere' localhost:8083/api/quote; done
//	curl -s -H 'X-API-Key: key-lumiere' localhost:8083/usage
//	curl -s -X POST -H 'X-API-Key: key-lumiere' 'localhost:8083/plan?to=pro'
//	curl -si -H 'X-API-Key: key-lumiere' localhost:8083/api/quote | grep -i -e ratelimit -e retry-after
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
	_ "time/tzdata" // zones without the system's tz database

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// plans are the limits of each plan: a day, a month, a minute, in the
// order of usage's rates.
var plans = map[string][]int64{
	"starter": {5, 50, 5},
	"pro":     {500, 10_000, 20},
}

// usage is the policy every plan counts into, in the customer's zone:
// its limits are the starter plan's, which WithLimits replaces.
func usage(loc *time.Location) (*limiter.Policy, error) {
	l := plans["starter"]
	return limiter.NewPolicy("api", limiter.PerDayIn(l[0], loc), limiter.PerMonthIn(l[1], loc), limiter.PerMinute(l[2]))
}

// An account is a customer: their plan and the zone their quotas follow.
type account struct {
	plan string
	zone string
}

// accounts are the customers, by API key; a plan may change while the
// server runs.
type accounts struct {
	mu sync.RWMutex
	m  map[string]account
}

func (a *accounts) get(apiKey string) (account, bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	acct, ok := a.m[apiKey]
	return acct, ok
}

func (a *accounts) setPlan(apiKey, plan string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	acct, ok := a.m[apiKey]
	if ok {
		acct.plan = plan
		a.m[apiKey] = acct
	}
	return ok
}

// newAccounts returns the table of customers.
func newAccounts() *accounts {
	return &accounts{m: map[string]account{
		"key-lumiere":   {"starter", "Europe/Paris"},
		"key-himalaya":  {"starter", "Asia/Kathmandu"},
		"key-nullarbor": {"pro", "Australia/Eucla"},
		"key-hudson":    {"pro", "America/New_York"},
	}}
}

// export is the work of GET /api/export: long, and so capped in flight.
// A test replaces it.
var export = func(w http.ResponseWriter, r *http.Request) {
	select {
	case <-time.After(2 * time.Second):
		fmt.Fprintln(w, "export: done")
	case <-r.Context().Done():
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, "127.0.0.1:8083"); err != nil {
		slog.Error("plans example", "err", err)
		os.Exit(1)
	}
}

// run serves on addr until ctx is done.
func run(ctx context.Context, addr string) error {
	store, err := limiter.NewMemoryStore()
	if err != nil {
		return err
	}
	defer store.Close()
	h, closeAll, err := newHandler(limiter.WithStore(store))
	if err != nil {
		return err
	}
	defer closeAll()
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	slog.Info("listening", "url", "http://"+addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newHandler builds the service behind the plans' limiters, every one
// made with opts (the shared store; a test adds its clock), and returns a
// function that closes them.
func newHandler(opts ...limiter.Option) (http.Handler, func(), error) {
	var closers []func() error
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	fail := func(err error) (http.Handler, func(), error) {
		closeAll()
		return nil, nil, err
	}
	accts := newAccounts()
	// byZone[zone][plan] is the limiter of a plan in a zone: the zone's
	// limiter under the plan's limits, one usage for every plan.
	byZone := map[string]map[string]*limiter.Limiter{}
	for _, acct := range accts.m {
		if byZone[acct.zone] != nil {
			continue
		}
		loc, err := time.LoadLocation(acct.zone)
		if err != nil {
			return fail(fmt.Errorf("customer zone: %w", err))
		}
		p, err := usage(loc)
		if err != nil {
			return fail(err)
		}
		l, err := limiter.New(p, opts...)
		if err != nil {
			return fail(err)
		}
		closers = append(closers, l.Close)
		byZone[acct.zone] = map[string]*limiter.Limiter{}
		for plan, limits := range plans {
			if byZone[acct.zone][plan], err = l.WithLimits(limits...); err != nil {
				return fail(fmt.Errorf("plan %s: %w", plan, err))
			}
		}
	}
	trial, err := limiter.New(limiter.MustPolicy("trial", limiter.PerDayIn(3, time.UTC)), opts...)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, trial.Close)
	exports, err := limiter.NewInFlight("exports", 2, opts...)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, exports.Close)
	apiKey, err := keyfunc.Header("X-API-Key")
	if err != nil {
		return fail(err)
	}
	// planOf returns the limiter of the customer of r, false for an API
	// key the service does not know.
	planOf := func(r *http.Request) (*limiter.Limiter, bool) {
		acct, ok := accts.get(r.Header.Get("X-API-Key"))
		if !ok {
			return nil, false
		}
		return byZone[acct.zone][acct.plan], true
	}
	resolve := func(r *http.Request) middleware.Limiter {
		if l, ok := planOf(r); ok {
			return l
		}
		return nil // the trial's limiter, given to New
	}
	hw, err := headers.New(headers.WithDraftHeaders())
	if err != nil {
		return fail(err)
	}
	rate := []middleware.Option{middleware.WithKey(apiKey), middleware.WithResolver(resolve), middleware.WithHeaders(hw)}
	quotes, err := middleware.New(trial, rate...)
	if err != nil {
		return fail(err)
	}
	capped, err := middleware.New(trial, append(rate, middleware.WithInFlight(exports, nil))...)
	if err != nil {
		return fail(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /api/quote", quotes(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "quote: 42")
	})))
	mux.Handle("GET /api/export", capped(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { export(w, r) })))
	mux.HandleFunc("GET /usage", func(w http.ResponseWriter, r *http.Request) {
		l, ok := planOf(r)
		key, err := apiKey(r)
		if !ok || err != nil {
			http.Error(w, "unknown API key", http.StatusNotFound)
			return
		}
		acct, _ := accts.get(r.Header.Get("X-API-Key"))
		rates, err := l.Usage(r.Context(), key)
		if err != nil {
			http.Error(w, "usage unavailable", http.StatusServiceUnavailable)
			return
		}
		running, err := exports.Usage(r.Context(), key)
		if err != nil {
			http.Error(w, "usage unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(struct {
			Plan    string        `json:"plan"`
			Zone    string        `json:"zone"`
			Rates   limiter.Usage `json:"rates"`
			Exports limiter.Usage `json:"exports"`
		}{acct.plan, acct.zone, rates, running})
	})
	mux.HandleFunc("POST /plan", func(w http.ResponseWriter, r *http.Request) {
		to := r.URL.Query().Get("to")
		if _, ok := plans[to]; !ok {
			http.Error(w, "no such plan", http.StatusBadRequest)
			return
		}
		if !accts.setPlan(r.Header.Get("X-API-Key"), to) {
			http.Error(w, "unknown API key", http.StatusNotFound)
			return
		}
		fmt.Fprintf(w, "plan: %s\n", to)
	})
	return mux, closeAll, nil
}
