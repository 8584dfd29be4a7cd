package limiter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// TestCloseIsIdempotent: Close returns nil however often it is called,
// one call after another or two at once, on every closer of this package
// in the states it can be closed in; after it, each answers ErrClosed.
// The Redis store's rows are redisstore's TestCloseIsIdempotent.
func TestCloseIsIdempotent(t *testing.T) {
	ctx := context.Background()
	p := MustPolicy("closing", PerMinute(10))
	memStore := func(t *testing.T, opts ...MemoryOption) *MemoryStore {
		t.Helper()
		st, err := NewMemoryStore(opts...)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// A closed store answers a decision with ErrClosed.
	storeClosed := func(st *MemoryStore) error {
		_, err := st.Take(ctx, Request{Key: "k", Policy: p, Now: noon, Cost: 1})
		return err
	}
	newCap := func(t *testing.T, opts ...Option) *InFlight {
		t.Helper()
		f, err := NewInFlight("closing", 2, append([]Option{WithClock(limitertest.New(noon))}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, tc := range []struct {
		name string
		// setup returns the closer in the state to close it in, and what
		// a call after Close answers.
		setup func(t *testing.T) (close func() error, after func() error)
	}{
		{"memory_store_fresh", func(t *testing.T) (func() error, func() error) {
			st := memStore(t)
			return st.Close, func() error { return storeClosed(st) }
		}},
		{"memory_store_no_sweep", func(t *testing.T) (func() error, func() error) {
			st := memStore(t, WithSweepInterval(0))
			return st.Close, func() error { return storeClosed(st) }
		}},
		{"memory_store_after_decisions_and_slots", func(t *testing.T) (func() error, func() error) {
			st := memStore(t)
			if err := storeClosed(st); err != nil {
				t.Fatal(err)
			}
			f := newCap(t, WithStore(st))
			t.Cleanup(func() { _ = f.Close() })
			if _, release := acquire(t, f, "k"); release == nil {
				t.Fatal("no slot")
			} else {
				t.Cleanup(release) // after Close: gives back nothing
			}
			return st.Close, func() error { return storeClosed(st) }
		}},
		{"limiter_default_store", func(t *testing.T) (func() error, func() error) {
			l, err := New(p, WithClock(limitertest.New(noon)))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Allow(ctx, "k", 1); err != nil {
				t.Fatal(err)
			}
			return l.Close, func() error { _, err := l.Allow(ctx, "k", 1); return err }
		}},
		{"limiter_given_store", func(t *testing.T) (func() error, func() error) {
			st := memStore(t)
			t.Cleanup(func() { _ = st.Close() })
			l, err := New(p, WithStore(st), WithClock(limitertest.New(noon)))
			if err != nil {
				t.Fatal(err)
			}
			return l.Close, func() error { _, err := l.Allow(ctx, "k", 1); return err }
		}},
		{"inflight_default_store_slot_held", func(t *testing.T) (func() error, func() error) {
			f := newCap(t)
			_, release := acquire(t, f, "k")
			t.Cleanup(release)
			return f.Close, func() error { _, _, err := f.Acquire(ctx, "k"); return err }
		}},
		{"inflight_given_store_slot_released", func(t *testing.T) (func() error, func() error) {
			st := memStore(t, WithSweepInterval(0))
			t.Cleanup(func() { _ = st.Close() })
			f := newCap(t, WithStore(st))
			_, release := acquire(t, f, "k")
			release()
			return f.Close, func() error { _, _, err := f.Acquire(ctx, "k"); return err }
		}},
	} {
		for _, concurrent := range []bool{false, true} {
			name := tc.name + "/twice"
			if concurrent {
				name = tc.name + "/concurrently"
			}
			t.Run(name, func(t *testing.T) {
				closeFn, after := tc.setup(t)
				errs := make(chan error, 2)
				if concurrent {
					var wg sync.WaitGroup
					for range 2 {
						wg.Go(func() { errs <- closeNoPanic(closeFn) })
					}
					wg.Wait()
				} else {
					errs <- closeNoPanic(closeFn)
					errs <- closeNoPanic(closeFn)
				}
				close(errs)
				for err := range errs {
					if err != nil {
						t.Fatalf("Close: got %v, want nil", err)
					}
				}
				if err := after(); !errors.Is(err, ErrClosed) {
					t.Fatalf("a call after Close: got %v, want ErrClosed", err)
				}
			})
		}
	}
}

// closeNoPanic calls closeFn, and returns a panic of it as an error.
func closeNoPanic(closeFn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return closeFn()
}
