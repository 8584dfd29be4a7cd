// Command chi puts the rate limiter in front of a chi router, in the three
// ways chi offers:
//
//   - r.Group with r.Use inside it: one budget per client shared by every
//     route of the group (GET /api/items and GET /api/items/{id}: 10 a
//     minute in all).
//   - r.With on one route: a tighter limit for that route alone (POST
//     /api/login: 3 a minute per client).
//   - route-pattern keys: GET /api/users/{id} is limited per client on the
//     route as a whole, so /api/users/1 and /api/users/2 spend one budget.
//
// GET /healthz is never limited. The limiters are installed with r.With or
// inside r.Group, never with r.Use on the root router: only there has chi
// matched the route, so that RoutePattern has a pattern to key by.
//
// Run it and try it:
//
//	go run ./example/chi
//	for i in $(seq 5); do curl -s -o /dev/null -w '%{http_code}\n' -X POST localhost:8082/api/login; done
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

	"github.com/go-chi/chi/v5"

	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, "127.0.0.1:8082"); err != nil {
		slog.Error("chi example", "err", err)
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
	r, err := newRouter(limiter.WithStore(store))
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: addr, Handler: r, ReadHeaderTimeout: 5 * time.Second}
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

// newRouter builds the routes, every limiter with opts (the shared store;
// a test adds its clock). The policies have distinct names, so that their
// counters in the one store stay apart.
func newRouter(opts ...limiter.Option) (chi.Router, error) {
	host, err := keyfunc.RemoteHost()
	if err != nil {
		return nil, err
	}
	perClient, err := limit(opts, limiter.MustPolicy("api", limiter.PerMinute(10)))
	if err != nil {
		return nil, err
	}
	login, err := limit(opts, limiter.MustPolicy("login", limiter.PerMinute(3)))
	if err != nil {
		return nil, err
	}
	route, err := keyfunc.RoutePattern()
	if err != nil {
		return nil, err
	}
	clientOnRoute, err := keyfunc.Join(route, host)
	if err != nil {
		return nil, err
	}
	perRoute, err := limit(opts, limiter.MustPolicy("users", limiter.PerMinute(5)),
		middleware.WithKey(clientOnRoute))
	if err != nil {
		return nil, err
	}

	r := chi.NewRouter()
	r.Get("/healthz", reply("ok"))
	r.Group(func(r chi.Router) {
		r.Use(perClient)
		r.Get("/api/items", reply("items"))
		r.Get("/api/items/{id}", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "item %s\n", chi.URLParam(r, "id"))
		})
	})
	r.With(login).Post("/api/login", reply("welcome"))
	r.With(perRoute).Get("/api/users/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "user %s\n", chi.URLParam(r, "id"))
	})
	return r, nil
}

// limit returns middleware enforcing p with a limiter built with lopts.
func limit(lopts []limiter.Option, p *limiter.Policy, opts ...middleware.Option) (func(http.Handler) http.Handler, error) {
	l, err := limiter.New(p, lopts...)
	if err != nil {
		return nil, err
	}
	return middleware.New(l, opts...)
}

func reply(s string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, s) }
}
