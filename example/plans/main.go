// Command plans sells API plans, over HTTP and gRPC, whose quotas reset
// at each customer's own midnight and on the 1st of their month. Every
// plan counts the same windows with limits of its own (plans below), so
// a customer moved to another plan keeps what they used; a key the
// service does not know is on the trial, by UTC.
//
// One limiter counts every customer's requests, one their tokens, one
// cap their exports: each door looks the customer's plan and zone up per
// request (middleware.WithPlans, grpclimit.WithPlans) and applies the
// plan's limits in the customer's zone. A completion's tokens are known
// once the model has answered: reported (middleware.Report), and settled
// then. time/tzdata embeds the zones, for images that have none.
//
//	GET  /api/quote     a request under the customer's plan
//	GET  /api/export    a long one, capped in flight per plan
//	POST /api/complete  a completion, its tokens charged once answered
//	GET  /usage         the customer's balance, every window, as JSON
//	POST /plan?to=pro   move the customer to another plan, keeping their usage
//	gRPC plans.Model/Complete on 127.0.0.1:50053, the same usage as HTTP
//
//	go run ./example/plans    # then: curl -i -H 'X-API-Key: key-lumiere' localhost:8083/api/quote
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
	_ "time/tzdata" // zones without the system's tz database

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/grpclimit"
)

// plans are the limits of each plan, by policy (api: a day, a month, a
// minute; tokens: a day) and by cap.
var plans = map[string]*limiter.Plan{
	"starter": {Name: "starter", Limits: map[string][]int64{"api": {5, 50, 5}, "tokens": {2_000}}, Caps: map[string]int64{"exports": 2}},
	"pro":     {Name: "pro", Limits: map[string][]int64{"api": {500, 10_000, 20}, "tokens": {100_000}}, Caps: map[string]int64{"exports": 4}},
	"trial":   {Name: "trial", Limits: map[string][]int64{"api": {3, 90, 3}, "tokens": {500}}, Caps: map[string]int64{"exports": 1}},
}

// tokens is the unit of a completion's cost.
const tokens = "acme-tokens"

// accounts are the customers, by API key: a plan and the zone their
// quotas follow. A plan may change while the server runs.
type accounts struct {
	mu sync.RWMutex
	m  map[string][2]string
}

// lookup returns the plan and zone of apiKey, the trial's in UTC for a
// key the service does not know; known reports whether it does.
func (a *accounts) lookup(apiKey string) (plan *limiter.Plan, zone string, known bool) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if acct, ok := a.m[apiKey]; ok {
		return plans[acct[0]], acct[1], true
	}
	return plans["trial"], "UTC", false
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

// complete is the model: it answers a prompt, and reports the tokens
// the answer used, two per word of the prompt.
func complete(ctx context.Context, prompt string) string {
	n := len(strings.Fields(prompt))
	middleware.Report(ctx, tokens, int64(2*n))
	return strings.Repeat("ok ", n)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	s := newService() // each limiter on a memory store of its own
	defer s.close()
	lis, err := net.Listen("tcp", "127.0.0.1:50053")
	if err != nil {
		slog.Error("plans example", "err", err)
		os.Exit(1)
	}
	go func() { _ = s.grpc.Serve(lis) }()
	srv := &http.Server{Addr: "127.0.0.1:8083", Handler: s.http, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		s.grpc.GracefulStop()
		_ = srv.Shutdown(context.Background())
	}()
	slog.Info("listening", "http", "http://"+srv.Addr, "grpc", lis.Addr().String())
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		slog.Error("plans example", "err", err)
		os.Exit(1)
	}
}

// A service is the two doors over one usage.
type service struct {
	http  http.Handler
	grpc  *grpc.Server
	close func()
}

// newService builds the service, its limiters made with opts (the shared
// store; a test adds its clock).
func newService(opts ...limiter.Option) *service {
	// Each customer's own zone replaces UTC (Limiter.For).
	api := limiter.MustNew(limiter.MustPolicy("api", limiter.PerDayIn(5, time.UTC), limiter.PerMonthIn(50, time.UTC), limiter.PerMinute(5)), opts...)
	spent := limiter.MustNew(limiter.MustPolicy("tokens", limiter.PerDayIn(2_000, time.UTC)).MustUnit(tokens), opts...)
	exports := limiter.MustInFlight("exports", 2, opts...)
	s := &service{close: func() { api.Close(); spent.Close(); exports.Close() }}
	accts := &accounts{m: map[string][2]string{
		"key-lumiere":   {"starter", "Europe/Paris"},
		"key-himalaya":  {"starter", "Asia/Kathmandu"},
		"key-nullarbor": {"pro", "Australia/Eucla"},
		"key-hudson":    {"pro", "America/New_York"},
	}}
	plan := middleware.WithPlans(func(r *http.Request) (*limiter.Plan, string, error) {
		p, zone, _ := accts.lookup(r.Header.Get("X-API-Key"))
		return p, zone, nil
	})
	hw, _ := headers.New(headers.WithDraftHeaders()) // no error: no option takes an argument
	common := []middleware.Option{middleware.WithKey(keyfunc.Must(keyfunc.Header("X-API-Key"))), plan, middleware.WithHeaders(hw)}
	quotes := middleware.MustNew(api, common...)
	capped := middleware.MustNew(api, append(common, middleware.WithInFlight(exports, nil))...)
	metered := middleware.MustNew(api, append(common, middleware.WithReported(spent, nil, nil))...)
	mux := http.NewServeMux()
	mux.Handle("GET /api/quote", quotes(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "quote: 42") })))
	mux.Handle("GET /api/export", capped(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { export(w, r) })))
	mux.Handle("POST /api/complete", metered(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		prompt, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		fmt.Fprintln(w, complete(r.Context(), string(prompt)))
	})))
	// One endpoint for every limit a customer meets: the options of the
	// three middlewares together.
	usage, err := middleware.NewUsageHandler(api, append(common, middleware.WithInFlight(exports, nil), middleware.WithReported(spent, nil, nil))...)
	if err != nil {
		panic(err) // the options above are fixed in code
	}
	mux.HandleFunc("GET /usage", func(w http.ResponseWriter, r *http.Request) {
		if _, _, known := accts.lookup(r.Header.Get("X-API-Key")); !known {
			http.Error(w, "unknown API key", http.StatusNotFound)
			return
		}
		usage.ServeHTTP(w, r)
	})
	mux.HandleFunc("POST /plan", func(w http.ResponseWriter, r *http.Request) {
		to, key := r.URL.Query().Get("to"), r.Header.Get("X-API-Key")
		accts.mu.Lock()
		defer accts.mu.Unlock()
		switch acct, ok := accts.m[key]; {
		case plans[to] == nil || to == "trial":
			http.Error(w, "no such plan", http.StatusBadRequest)
		case !ok:
			http.Error(w, "unknown API key", http.StatusNotFound)
		default:
			accts.m[key] = [2]string{to, acct[1]}
			fmt.Fprintf(w, "plan: %s\n", to)
		}
	})
	s.http = mux
	ic, err := grpclimit.New(api, grpclimit.WithKey(grpclimit.Must(grpclimit.Metadata("x-api-key"))), // the header's key
		grpclimit.WithReported(spent, nil, nil), grpclimit.WithHeaders(hw),
		grpclimit.WithPlans(func(ctx context.Context, _ string) (*limiter.Plan, string, error) {
			md, _ := metadata.FromIncomingContext(ctx)
			p, zone, _ := accts.lookup(strings.Join(md.Get("x-api-key"), ","))
			return p, zone, nil
		}))
	if err != nil {
		panic(err) // options fixed in code
	}
	s.grpc = grpc.NewServer(grpc.ChainUnaryInterceptor(ic.Unary()))
	s.grpc.RegisterService(&modelService, nil)
	return s
}
