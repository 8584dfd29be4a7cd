package budgets

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/fixedwindow/ratelimit/middleware"
)

var clk = limitertest.New(time.Date(2026, 7, 31, 12, 0, 10, 0, time.UTC))

// stores makes a fresh store of each kind for one test: a memory store,
// and a Redis store on the shared Redis under a prefix of its own. The
// Redis row's second store is another replica's: a store value of its
// own on the same Redis and prefix.
func stores(t *testing.T) []struct {
	name        string
	store, peer limiter.Store
} {
	t.Helper()
	mem, err := limiter.NewMemoryStore(limiter.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mem.Close() })
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "test:budgets:" + hex.EncodeToString(b[:]) + ":"
	redisStore := func() limiter.Store {
		s, err := redisstore.New(redistest.Shared(t), redisstore.WithPrefix(prefix))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	return []struct {
		name        string
		store, peer limiter.Store
	}{
		{"memory", mem, nil},
		{"redis", redisStore(), redisStore()},
	}
}

// codes sends n requests from one address through h and returns their
// statuses.
func codes(h http.Handler, n int) string {
	var out []string
	for range n {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = "192.0.2.1:1"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		out = append(out, fmt.Sprint(w.Code))
	}
	return strings.Join(out, " ")
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})

// The newcomer's case: middleware.ByIP(2, time.Minute, WithStore(s)) on two
// routes. Both one-liners name their policy "by-ip", so on one store they
// would count into one budget (200, 200, 429, 429 across the routes): the
// second is refused where it is built, naming the policy, and a route of
// its own name keeps its own budget.
func TestOneLinersOnOneStoreRefused(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			login := middleware.ByIP(2, time.Minute, limiter.WithStore(st.store), limiter.WithClock(clk))(ok)
			v := func() (v any) {
				defer func() { v = recover() }()
				middleware.ByIP(2, time.Minute, limiter.WithStore(st.store), limiter.WithClock(clk))
				return nil
			}()
			err, isErr := v.(error)
			if !isErr || !errors.Is(err, limiter.ErrInvalidOption) ||
				!strings.Contains(err.Error(), `middleware: ByIP: limiter: invalid option: WithStore: policy "by-ip"`) {
				t.Fatalf("second ByIP on one store: panic %v, want an error naming the shared policy", v)
			}
			// Built as the refusal says: a policy of the route's own name.
			search := middleware.MustNew(limiter.MustNew(limiter.MustPolicy("search", limiter.PerMinute(2)),
				limiter.WithStore(st.store), limiter.WithClock(clk)))(ok)
			if got, want := codes(login, 3)+" | "+codes(search, 3), "200 200 429 | 200 200 429"; got != want {
				t.Fatalf("two routes on one store: %s, want %s", got, want)
			}
		})
	}
}

// Sharing on purpose: one Limiter behind two routes is one budget; two
// replicas, each with its own store value on one Redis, share the limit.
func TestSharingOnPurpose(t *testing.T) {
	for _, st := range stores(t) {
		t.Run(st.name, func(t *testing.T) {
			l := limiter.MustNew(limiter.MustPolicy("shared", limiter.PerMinute(3)), limiter.WithStore(st.store), limiter.WithClock(clk))
			defer l.Close()
			mw := middleware.MustNew(l)
			a, b := mw(ok), mw(ok)
			if got, want := codes(a, 2)+" | "+codes(b, 2), "200 200 | 200 429"; got != want {
				t.Fatalf("one limiter behind two routes: %s, want %s", got, want)
			}
			if st.peer == nil {
				return
			}
			replica, err := limiter.New(limiter.MustPolicy("shared", limiter.PerMinute(3)), limiter.WithStore(st.peer), limiter.WithClock(clk))
			if err != nil {
				t.Fatalf("a replica's limiter on a store value of its own: %v", err)
			}
			defer replica.Close()
			if got := codes(middleware.MustNew(replica)(ok), 1); got != "429" {
				t.Fatalf("replica on one Redis: %s, want 429 (the budget is shared)", got)
			}
		})
	}
}
