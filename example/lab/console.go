package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware/console"
)

// consolePath is where lab serve mounts the support console.
const consolePath = "/admin/limits/"

// newConsole returns the support console of the lab's limiter: open to
// loopback clients only (the lab has no admin authentication to put it
// behind), listing the keys the server has decided for, and logging
// every action it is asked for.
func newConsole(l *limiter.Limiter, seen *seenKeys, log *slog.Logger) (http.Handler, error) {
	return console.New(console.Config{
		Authorize: loopbackOnly,
		Observe: func(e console.Event) {
			if e.Action == "forbidden" {
				log.Warn("console refused a client that is not on loopback", "remote_addr", e.Request.RemoteAddr)
				return
			}
			attrs := []any{"who", e.Who, "action", e.Action, "key", e.Key}
			if e.Reason != "" {
				attrs = append(attrs, "reason", e.Reason)
			}
			if e.Action == "refund" {
				attrs = append(attrs, "policy", e.Policy, "amount", e.Amount)
			}
			if e.Err != nil {
				attrs = append(attrs, "err", e.Err)
			}
			log.Info("console", attrs...)
		},
		Limiters: []*limiter.Limiter{l},
		List:     seen.list,
	})
}

// endOnShutdown ends the console's requests when shutdown is done: a
// page left open holds a stream of updates, which the server's Shutdown
// would otherwise wait out. Other requests keep their own contexts, and
// finish.
func endOnShutdown(h http.Handler, shutdown context.Context) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, consolePath) {
			h.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer context.AfterFunc(shutdown, cancel)()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// loopbackOnly admits the requests of loopback clients, as "loopback",
// who may look and change; it refuses every other.
func loopbackOnly(r *http.Request) (string, console.Access) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return "", 0
	}
	a, err := netip.ParseAddr(host)
	if err != nil || !a.Unmap().IsLoopback() {
		return "", 0
	}
	return "loopback", console.Change
}

// maxSeen bounds the keys seenKeys keeps: a lab's clients are few.
const maxSeen = 1000

// seenKeys are the keys the limiter has decided for, the first maxSeen,
// for the console to list: the memory and Redis stores keep no index of
// keys, and a service lists its customers from where it knows them.
type seenKeys struct {
	mu sync.Mutex
	m  map[string]struct{}
}

func (s *seenKeys) add(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]struct{})
	}
	if len(s.m) < maxSeen {
		s.m[key] = struct{}{}
	}
}

// list returns the keys seen that start with prefix, sorted.
func (s *seenKeys) list(_ context.Context, prefix string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for k := range s.m {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys, nil
}
