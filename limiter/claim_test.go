package limiter

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Two limiters of one policy on one store would count into one budget:
// New refuses the second while the first lives, and takes it once the
// first is closed or collected. Other stores, other names and other
// windows are other budgets; another limit of the same name and window
// is the same usage (counters carry no limit), refused too.
func TestEqualPoliciesOnOneStoreRefused(t *testing.T) {
	store, err := NewMemoryStore(WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	other, err := NewMemoryStore(WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	p := MustPolicy("by-ip", PerMinute(2))

	first, err := New(p, WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(MustPolicy("by-ip", PerMinute(2)), WithStore(store))
	if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), `policy "by-ip" (by-ip: 2/1m0s) is already counted on this store`) {
		t.Fatalf("second limiter of one policy on one store: err %v, want ErrInvalidOption naming the policy", err)
	}
	for _, tt := range []struct {
		name string
		p    *Policy
	}{
		{"other_limit", MustPolicy("by-ip", PerMinute(3))},
	} {
		if _, err := New(tt.p, WithStore(store)); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%s: err %v, want ErrInvalidOption: the two would share their counters", tt.name, err)
		}
	}
	for _, tt := range []struct {
		name  string
		p     *Policy
		store *MemoryStore
	}{
		{"other_store", p, other},
		{"other_name", MustPolicy("by-ip-login", PerMinute(2)), store},
		{"other_window", MustPolicy("by-ip", PerHour(10)), store},
		{"other_windows_one_shared", MustPolicy("by-ip", PerSecond(1), PerMinute(2)), store},
	} {
		l, err := New(tt.p, WithStore(tt.store))
		if err != nil {
			t.Errorf("%s: %v, want a limiter of its own budget", tt.name, err)
			continue
		}
		l.Close()
	}

	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := New(p, WithStore(store))
	if err != nil {
		t.Fatalf("after the first limiter's Close: %v, want the policy free again", err)
	}
	again.Close()
	again.Close() // idempotent, and gives up nothing of a later holder's
	held, err := New(p, WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
	if _, err := New(p, WithStore(store)); err == nil {
		t.Fatal("a closed limiter's second Close gave up its successor's claim")
	}
	held.Close()
}

// A limiter never closed (the one-line middlewares need no Close) gives
// its claim up when it is garbage collected.
func TestClaimEndsWithTheLimiter(t *testing.T) {
	store, err := NewMemoryStore(WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	p := MustPolicy("api", PerMinute(2))
	if _, err := New(p, WithStore(store)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		l, err := New(p, WithStore(store))
		if err == nil {
			l.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unreachable limiter's claim outlived 10 s of collections: %v", err)
		}
		runtime.Gosched()
	}
}

// A store of a type that cannot be a map key is not claimed, and never
// panics.
func TestUncomparableStoreNotClaimed(t *testing.T) {
	p := MustPolicy("api", PerMinute(2))
	for range 2 {
		l, err := New(p, WithStore(funcStore{take: nil}))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
	}
}

// funcStore is a Store value whose type is not comparable.
type funcStore struct {
	take func()
	Store
}
