// Command stdlib puts the rate limiter in front of a standard library
// ServeMux, one middleware per route, as in
// mux.Handle("GET /api/items", perClient(items)). The routes:
//
//   - GET /api/items: 10 requests a minute per client address.
//   - GET /api/users/{id}: 5 a minute per client on the route as a whole:
//     the key joins the route pattern and the address, so /api/users/1
//     and /api/users/2 spend one budget rather than one each.
//   - GET /healthz: never limited.
//
// Run it and try it:
//
//	go run ./example/stdlib
//	for i in $(seq 12); do curl -s -o /dev/null -w '%{http_code}\n' localhost:8081/api/items; done
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

	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, "127.0.0.1:8081"); err != nil {
		slog.Error("stdlib example", "err", err)
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
	mux, err := newMux(limiter.WithStore(store))
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
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

// newMux builds the routes, both limiters with opts (the shared store; a
// test adds its clock). The policies have distinct names, so that their
// counters in the one store stay apart.
func newMux(opts ...limiter.Option) (*http.ServeMux, error) {
	perClient, err := limit(opts, limiter.MustPolicy("items", limiter.PerMinute(10)))
	if err != nil {
		return nil, err
	}
	clientOnRoute := keyfunc.Must(keyfunc.Join(keyfunc.RoutePattern(), keyfunc.Must(keyfunc.RemoteHost())))
	perRoute, err := limit(opts, limiter.MustPolicy("users", limiter.PerMinute(5)),
		middleware.WithKey(clientOnRoute))
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /api/items", perClient(reply("items")))
	mux.Handle("GET /api/users/{id}", perRoute(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "user %s\n", r.PathValue("id"))
	})))
	mux.Handle("GET /healthz", reply("ok"))
	return mux, nil
}

// limit returns middleware enforcing p with a limiter built with lopts.
func limit(lopts []limiter.Option, p *limiter.Policy, opts ...middleware.Option) (func(http.Handler) http.Handler, error) {
	l, err := limiter.New(p, lopts...)
	if err != nil {
		return nil, err
	}
	return middleware.New(l, opts...)
}

func reply(s string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, s) })
}
