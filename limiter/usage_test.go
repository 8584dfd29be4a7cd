package limiter_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/storetest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// Usage reads every window, the month beside the minute, charging
// nothing, and marshals as its documentation shows.
func TestUsageEveryWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	paris := storetest.Zone(t, "Europe/Paris")
	at := time.Date(2026, 12, 3, 10, 30, 0, 250_000_000, paris)
	clk := limitertest.New(at)
	l := limiter.MustNew(limiter.MustPolicy("plan", limiter.PerMonthIn(1000, paris), limiter.PerMinute(20)), limiter.WithClock(clk))
	defer l.Close()

	u, err := l.Usage(ctx, "never-seen")
	if err != nil {
		t.Fatal(err)
	}
	if u.Windows[0].Used != 0 || u.Windows[0].Remaining != 1000 || u.Windows[1].Used != 0 || u.Windows[1].Remaining != 20 {
		t.Fatalf("a key never seen: %+v, want nothing used", u.Windows)
	}
	for range 3 {
		if _, err := l.Allow(ctx, "acme", 1); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // reading twice charges nothing
		if u, err = l.Usage(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
	}
	if u.Policy != l.Policy() || !u.At.Equal(at.Truncate(time.Millisecond)) || u.Held != 0 {
		t.Fatalf("usage %+v: want l's policy at %v", u, at)
	}
	got, err := json.Marshal(u)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"policy":"plan","at":"2026-12-03T09:30:00.25Z","windows":[` +
		`{"window":"month@Europe/Paris","limit":1000,"used":3,"remaining":997,"reset":"2026-12-31T23:00:00Z","window_seconds":2678400},` +
		`{"window":"1m0s","limit":20,"used":3,"remaining":17,"reset":"2026-12-03T09:31:00Z","window_seconds":60}]}`
	if string(got) != want {
		t.Fatalf("JSON\n got %s\nwant %s", got, want)
	}
	// A full minute: Usage still reads (a Peek refused is no error).
	for range 17 {
		l.Allow(ctx, "acme", 1)
	}
	if u, err = l.Usage(ctx, "acme"); err != nil || u.Windows[1].Used != 20 || u.Windows[1].Remaining != 0 || u.Windows[0].Used != 20 {
		t.Fatalf("a spent minute: %+v, %v", u.Windows, err)
	}
}

// A store that answered without counting (failing open) has no usage to
// tell: ErrUncounted, not a usage of nothing.
func TestUsageUncounted(t *testing.T) {
	t.Parallel()
	l := limiter.MustNew(limiter.MustPolicy("api", limiter.PerMinute(10)), limiter.WithStore(openStore{}))
	defer l.Close()
	if _, err := l.Usage(context.Background(), "acme"); !errors.Is(err, limiter.ErrUncounted) {
		t.Fatalf("Usage on a store failing open: %v, want ErrUncounted", err)
	}
}

// openStore admits everything, charged to nothing, as a store failing
// open does.
type openStore struct{ limiter.Store }

func (openStore) Take(_ context.Context, req limiter.Request) (limiter.Decision, error) {
	_, d := limiter.Decide(req.Policy, [limiter.MaxWindows]limiter.State{}, req.Now, req.Cost)
	return limiter.Uncharged(d), nil
}

// InFlight.Usage reads the slots a key holds, taking none.
func TestInFlightUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := limiter.MustInFlight("exports", 3)
	defer f.Close()
	var releases []func()
	for want := range int64(3) {
		u, err := f.Usage(ctx, "acme")
		if err != nil || u.Held != want || u.Policy != f.Policy() || len(u.Windows) != 0 {
			t.Fatalf("before acquire %d: %+v, %v; want %d held", want+1, u, err, want)
		}
		_, release, err := f.Acquire(ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
	}
	if d, _, _ := f.Acquire(ctx, "acme"); d.Allowed {
		t.Fatal("a fourth slot of 3: Usage took one")
	}
	got, err := json.Marshal(mustUsage(t, f, "acme"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"in_flight":{"limit":3,"used":3,"remaining":0}`; !strings.Contains(string(got), want) {
		t.Fatalf("JSON %s, want it to hold %s", got, want)
	}
	for _, r := range releases {
		r()
	}
	if u := mustUsage(t, f, "acme"); u.Held != 0 {
		t.Fatalf("after every release: %d held", u.Held)
	}
	if _, err := f.Usage(ctx, ""); !errors.Is(err, limiter.ErrInvalidKey) {
		t.Fatalf("empty key: %v", err)
	}
}

func mustUsage(t *testing.T, f *limiter.InFlight, key string) limiter.Usage {
	t.Helper()
	u, err := f.Usage(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
