// Command llmproxy is a gateway in front of a model: a reverse proxy that
// charges each API key for the tokens its calls really used, known only
// once the model has answered. Per API key, on the standard plan:
//
//   - 60 requests a minute;
//   - 40,000 tokens a minute, and 1,000,000 a month from the 1st at the
//     customer's midnight (Paris, New York);
//   - 4 requests in flight.
//
// The scale plan (key-sakura, in Tokyo) has four times the tokens a
// minute, five times the month's and 8 requests in flight. One
// middleware limits every customer, whatever their plan and zone: it
// looks both up per request (middleware.WithPlans).
//
// A call is admitted against a reservation, its prompt as estimated (a
// token per 4 bytes) and the longest answer it allows (max_tokens), so
// that concurrent calls cannot pass the limits. The proxy reads the
// model's answer as it streams to the client and reports the usage the
// model states in its last event (middleware.Report); the middleware
// settles the call at it once the answer has ended, returning what the
// reservation did not use, or charging what the estimate missed. A
// client that leaves mid-answer is charged the prompt's estimate and the
// tokens streamed until then. A settle that takes a key past its tokens
// puts it in debt: refused, with Retry-After to the minute's end (or the
// month's), until the window that holds the debt ends.
//
// The model is a fake in this process (no network, no socket between
// the proxy and it): its tokenizer counts a token per word, and it
// answers a prompt of n words with 2n tokens at most, as server-sent
// events, one per token, and the usage last.
//
//	POST /v1/chat/completions  {"messages":[{"role":"user","content":"..."}],"max_tokens":64,"stream":true}
//	GET  /usage                the key's tokens (minute, month) and requests, as JSON
//
// Run it and try it:
//
//	go run ./example/llmproxy
//	curl -sN -H 'Authorization: Bearer key-lumiere' localhost:8084/v1/chat/completions \
//	  -d '{"messages":[{"role":"user","content":"tell me about fixed windows"}],"max_tokens":64,"stream":true}'
//	curl -si -H 'Authorization: Bearer key-lumiere' localhost:8084/v1/chat/completions \
//	  -d '{"messages":[{"role":"user","content":"again"}]}' | grep -i ratelimit
//	curl -s -H 'Authorization: Bearer key-lumiere' localhost:8084/usage
package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
	_ "time/tzdata" // zones without the system's tz database

	"github.com/fixedwindow/ratelimit/limiter"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8084", "address to listen on")
	delay := flag.Duration("token-delay", 20*time.Millisecond, "the fake model's time per token")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *delay); err != nil {
		slog.Error("llmproxy example", "err", err)
		os.Exit(1)
	}
}

// run serves on addr until ctx is done.
func run(ctx context.Context, addr string, delay time.Duration) error {
	store, err := limiter.NewMemoryStore()
	if err != nil {
		return err
	}
	defer store.Close()
	h, closeAll, err := newHandler(config{limiterOpts: []limiter.Option{limiter.WithStore(store)}, model: &model{delay: delay}})
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
