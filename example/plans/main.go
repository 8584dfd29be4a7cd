// Command plans sells API plans whose quotas reset at each customer's own
// midnight, or on the 1st of the customer's month, picked per request:
//
//   - starter: 5 requests a day, from the customer's local midnight.
//   - pro: 1,000 a month, from the 1st at 00:00 local time, and at most 20
//     in any minute, so that a month's budget cannot be spent in a burst.
//   - trial (an API key the service does not know): 3 a day, by UTC.
//
// The customers are a table in code: an API key, a plan and a time zone.
// Each (plan, zone) pair has one limiter, built at start; a resolver picks
// the customer's limiter per request, keyed by the API key. A policy's ID
// names its zone (starter in Paris is "starter:5/day@Europe/Paris"), so
// two customers of one plan in two zones never share counters, and each
// day ends at its own midnight: 23 hours long where the clocks spring
// forward.
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
//	curl -si -H 'X-API-Key: key-lumiere' localhost:8083/api/quote | grep -i -e ratelimit -e retry-after
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
	_ "time/tzdata" // zones without the system's tz database

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// plans are the rates of each plan, in the customer's zone.
var plans = map[string]func(loc *time.Location) []limiter.Rate{
	"starter": func(loc *time.Location) []limiter.Rate { return []limiter.Rate{limiter.PerDayIn(5, loc)} },
	"pro": func(loc *time.Location) []limiter.Rate {
		return []limiter.Rate{limiter.PerMonthIn(1000, loc), limiter.PerMinute(20)}
	},
}

// A customer is an account: its plan and the zone its quotas follow.
type customer struct{ plan, zone string }

// customers are the accounts, by API key.
var customers = map[string]customer{
	"key-lumiere":   {"starter", "Europe/Paris"},
	"key-himalaya":  {"starter", "Asia/Kathmandu"},
	"key-nullarbor": {"pro", "Australia/Eucla"},
	"key-hudson":    {"pro", "America/New_York"},
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

// newHandler builds GET /api/quote behind the plans' limiters, every one
// made with opts (the shared store; a test adds its clock), and returns a
// function that closes them.
func newHandler(opts ...limiter.Option) (http.Handler, func(), error) {
	var all []*limiter.Limiter
	closeAll := func() {
		for _, l := range all {
			l.Close()
		}
	}
	build := func(plan, zone string) (*limiter.Limiter, error) {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			return nil, fmt.Errorf("customer zone: %w", err)
		}
		p, err := limiter.NewPolicy(plan, plans[plan](loc)...)
		if err != nil {
			return nil, err
		}
		l, err := limiter.New(p, opts...)
		if err != nil {
			return nil, err
		}
		all = append(all, l)
		return l, nil
	}
	byAccount := make(map[string]*limiter.Limiter, len(customers))
	byPlanZone := make(map[customer]*limiter.Limiter)
	for key, c := range customers {
		l := byPlanZone[c]
		if l == nil {
			var err error
			if l, err = build(c.plan, c.zone); err != nil {
				closeAll()
				return nil, nil, err
			}
			byPlanZone[c] = l
		}
		byAccount[key] = l
	}
	trial, err := limiter.New(limiter.MustPolicy("trial", limiter.PerDayIn(3, time.UTC)), opts...)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	all = append(all, trial)
	apiKey, err := keyfunc.Header("X-API-Key")
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	account := func(r *http.Request) middleware.Limiter {
		if l, ok := byAccount[r.Header.Get("X-API-Key")]; ok {
			return l
		}
		return nil // the trial's limiter, given to New
	}
	hw, err := headers.New(headers.WithDraftHeaders())
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	mw, err := middleware.New(trial, middleware.WithKey(apiKey), middleware.WithResolver(account), middleware.WithHeaders(hw))
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /api/quote", mw(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "quote: 42")
	})))
	return mux, closeAll, nil
}
