package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/fixedwindow/ratelimit/example/lab/internal/sim"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

func init() {
	register("serve", "run a demo server: /api/fixed-window is limited per client, /api/demo is not; the console at "+consolePath, runServe)
}

// shutdownGrace bounds how long a stopping server waits for requests in
// flight.
const shutdownGrace = 5 * time.Second

// serveConfig is the settled configuration of "lab serve".
type serveConfig struct {
	addr     string
	limit    int64
	window   time.Duration
	store    storeConfig
	failOpen bool
	// clock is the limiter's clock: nil for the system clock; tests set a
	// fake one.
	clock limiter.Clock
}

func runServe(ctx context.Context, args []string, _, stderr io.Writer) error {
	cfg, err := parseServeFlags(args, stderr)
	if err != nil {
		return err
	}
	return serve(ctx, cfg, stderr, nil)
}

// parseServeFlags checks every flag before anything starts, so that a bad
// one ends the command at once with one line naming it.
func parseServeFlags(args []string, stderr io.Writer) (serveConfig, error) {
	cfg := serveConfig{}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "listen on `host:port`")
	fs.Int64Var(&cfg.limit, "limit", 10, "requests admitted per client per window")
	fs.DurationVar(&cfg.window, "window", time.Minute, "window length, a whole number of milliseconds")
	fs.StringVar(&cfg.store.Kind, "store", "memory", "where counters live: memory or redis")
	fs.StringVar(&cfg.store.RedisAddr, "redis-addr", "127.0.0.1:6379", "Redis `host:port`, for --store redis")
	fs.BoolVar(&cfg.failOpen, "fail-open", false, "let requests through when the store fails, instead of answering 500")
	fs.BoolVar(&cfg.store.Lease, "lease", false, "with --store redis, lease quota to hot keys (docs/leases.md)")
	h, err := parseFlags(fs, args, stderr, map[string]string{
		"addr": "127.0.0.1:8080", "limit": "10", "window": "1m", "store": "redis",
		"redis-addr": "127.0.0.1:6379", "fail-open": "", "lease": "--store redis",
	},
		"Serves until SIGINT (Ctrl-C) or SIGTERM, then lets requests in flight finish.",
		"With --store redis, Redis must answer PING at --redis-addr within 2s, or serve",
		"exits with status 1 and one line naming the address and the cause. Once serving,",
		"a Redis that goes away gets 500s (admissions with --fail-open) until it is back.")
	if err != nil {
		return cfg, err
	}
	switch {
	case cfg.addr == "":
		return cfg, h.bad("addr", cfg.addr, "must not be empty")
	case cfg.limit <= 0:
		return cfg, h.bad("limit", cfg.limit, "must be at least 1")
	case cfg.window < time.Millisecond:
		return cfg, h.bad("window", cfg.window, "must be at least 1ms")
	case cfg.window%time.Millisecond != 0:
		return cfg, h.bad("window", cfg.window, "must be a whole number of milliseconds")
	case cfg.store.Kind != "memory" && cfg.store.Kind != "redis":
		return cfg, h.bad("store", cfg.store.Kind, "must be memory or redis")
	case cfg.store.Lease && cfg.store.Kind != "redis":
		return cfg, h.bad("lease", "", "leases quota out of Redis, so it needs --store redis")
	}
	if _, err := limiter.NewPolicy("fixed-window", limiter.Rate{Limit: cfg.limit, Window: cfg.window}); err != nil {
		return cfg, h.bad("limit", cfg.limit, fmt.Sprintf("with --window %v: %v", sim.ShortDuration(cfg.window), err))
	}
	return cfg, nil
}

// serve runs the demo server until ctx is done, then shuts it down,
// letting requests in flight finish. It logs to logw. ready, if not nil,
// is told the listening address once requests can be served.
func serve(ctx context.Context, cfg serveConfig, logw io.Writer, ready func(net.Addr)) error {
	log := slog.New(slog.NewTextHandler(logw, nil))
	store, closeStore, err := openStore(ctx, cfg.store)
	if err != nil {
		return err
	}
	defer func() {
		if err := closeStore(); err != nil {
			log.Error("close store", "err", err)
		}
	}()
	handler, err := newServeHandler(cfg, store, log)
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.addr)
	if err != nil {
		return err
	}
	shutdown, endConsole := context.WithCancel(context.Background())
	defer endConsole()
	srv := &http.Server{
		Handler:           endOnShutdown(handler, shutdown),
		ReadHeaderTimeout: 5 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(endConsole)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	log.Info("listening", "url", url, "console", url+consolePath, "console_open_to", "loopback",
		"limit", cfg.limit, "window", cfg.window, "store", cfg.store.Kind, "lease", cfg.store.Lease, "fail_open", cfg.failOpen)
	if ready != nil {
		ready(ln.Addr())
	}
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("stopped")
	return nil
}

// newServeHandler builds the demo routes: /api/fixed-window limited per
// client host, /api/demo never, and the support console of the limiter
// at consolePath, open to loopback clients.
func newServeHandler(cfg serveConfig, store limiter.Store, log *slog.Logger) (http.Handler, error) {
	p, err := limiter.NewPolicy("fixed-window", limiter.Rate{Limit: cfg.limit, Window: cfg.window})
	if err != nil {
		return nil, err
	}
	lopts := []limiter.Option{limiter.WithStore(store)}
	if cfg.clock != nil {
		lopts = append(lopts, limiter.WithClock(cfg.clock))
	}
	l, err := limiter.New(p, lopts...)
	if err != nil {
		return nil, err
	}
	var seen seenKeys
	opts := []middleware.Option{middleware.WithObserver(logEvents(log, &seen))}
	if cfg.failOpen {
		opts = append(opts, middleware.WithFailOpen())
	}
	limit, err := middleware.New(l, opts...)
	if err != nil {
		return nil, err
	}
	admin, err := newConsole(l, &seen, log)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /api/fixed-window", limit(okJSON("fixed-window")))
	mux.Handle("GET /api/demo", okJSON("demo"))
	mux.Handle(consolePath, admin)
	return mux, nil
}

// logEvents logs refusals at debug level and failures at error level; the
// client's address appears in the log, never in a response. It keeps the
// keys decided for in seen, for the console to list.
func logEvents(log *slog.Logger, seen *seenKeys) func(middleware.Event) {
	return func(e middleware.Event) {
		if e.Key != "" {
			seen.add(e.Key)
		}
		switch e.Outcome {
		case middleware.Denied:
			log.Debug("rate limited", "key", e.Key, "retry_after", e.Decision.RetryAfter)
		case middleware.Error:
			log.Error("limiter failed", "policy", e.Policy.Name(), "fail_open", e.FailOpen, "err", e.Err)
		case middleware.KeyError:
			log.Warn("no rate-limit key", "remote_addr", e.Request.RemoteAddr, "err", e.Err)
		case middleware.KeyFailed, middleware.Misconfigured:
			log.Error("key function failed", "policy", e.Policy.Name(), "err", e.Err)
		}
	}
}

func okJSON(endpoint string) http.Handler {
	body := []byte(`{"status":"ok","endpoint":"` + endpoint + `"}` + "\n")
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}
