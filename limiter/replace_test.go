package limiter

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A limiter built again over one store (a reload) takes the live one's
// claim by naming it, counts the same usage, and survives the old one's
// Close; nobody else takes the claim, and the old one is replaced once.
func TestReplaceTakesTheClaim(t *testing.T) {
	ctx := context.Background()
	store, err := NewMemoryStore(WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	old, err := New(MustPolicy("api", PerMinute(3)), WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := old.Allow(ctx, "k", 2); err != nil || !d.Allowed {
		t.Fatalf("old Allow: %+v, %v", d, err)
	}
	// The reloaded policy: same name and window, another limit.
	next, err := New(MustPolicy("api", PerMinute(4)), WithStore(store), WithReplace(old))
	if err != nil {
		t.Fatalf("New replacing the live limiter: %v, want it", err)
	}
	defer next.Close()
	if d, err := next.Allow(ctx, "k", 1); err != nil || !d.Allowed || d.Remaining != 1 {
		t.Fatalf("new Allow after 2 through the old: got %+v, %v; want admitted, 1 remaining of 4", d, err)
	}
	if _, err := New(MustPolicy("api", PerMinute(4)), WithStore(store)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("a third limiter naming nobody: err %v, want ErrInvalidOption", err)
	}
	_, err = New(MustPolicy("api", PerMinute(4)), WithStore(store), WithReplace(old))
	if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "replaced already") {
		t.Fatalf("old replaced a second time: err %v, want ErrInvalidOption saying it was replaced already", err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := New(MustPolicy("api", PerMinute(4)), WithStore(store)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("after the old limiter's Close: err %v, want the new one's claim held", err)
	}
	if d, err := next.Allow(ctx, "k", 1); err != nil || !d.Allowed || d.Remaining != 0 {
		t.Fatalf("new Allow after the old's Close: got %+v, %v; want admitted, 0 remaining", d, err)
	}
	// A closed limiter holds nothing: naming it is naming no holder.
	next.Close()
	again, err := New(MustPolicy("api", PerMinute(4)), WithStore(store), WithReplace(next))
	if err != nil {
		t.Fatalf("replacing a closed limiter: %v, want the free claim", err)
	}
	again.Close()
}

// WithReplace where it cannot apply is an error.
func TestReplaceRefused(t *testing.T) {
	store, err := NewMemoryStore(WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	old := MustNew(MustPolicy("api", PerMinute(3)), WithStore(store))
	defer old.Close()
	oldCap := MustInFlight("exports", 2, WithStore(store))
	defer oldCap.Close()
	for _, tt := range []struct {
		name string
		make func() error
		want string
	}{
		{"no_store", func() error { _, err := New(MustPolicy("api", PerMinute(3)), WithReplace(old)); return err }, "needs WithStore"},
		{"nil_limiter", func() error {
			_, err := New(MustPolicy("api", PerMinute(3)), WithStore(store), WithReplace((*Limiter)(nil)))
			return err
		}, "WithReplace(nil)"},
		{"nil_inflight", func() error {
			_, err := NewInFlight("exports", 2, WithStore(store), WithReplace((*InFlight)(nil)))
			return err
		}, "WithReplace(nil)"},
		{"inflight_no_store", func() error { _, err := NewInFlight("exports", 2, WithReplace(oldCap)); return err }, "needs WithStore"},
		// A cap does not hold a rate's claim, nor a rate a cap's.
		{"rate_naming_a_cap", func() error {
			_, err := New(MustPolicy("api", PerMinute(3)), WithStore(store), WithReplace(oldCap))
			return err
		}, "already counted"},
		{"cap_naming_a_rate", func() error { _, err := NewInFlight("exports", 2, WithStore(store), WithReplace(old)); return err }, "already live"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.make()
			if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want ErrInvalidOption saying %q", err, tt.want)
			}
		})
	}
}

// A cap built again over one store takes the old one's claim and its
// slots: a slot taken through the old cap counts against the new one
// until it is released, and its release after the old one's Close gives
// it back.
func TestReplaceInFlight(t *testing.T) {
	ctx := context.Background()
	store, err := NewMemoryStore(WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	old := MustInFlight("exports", 2, WithStore(store))
	_, release, err := old.Acquire(ctx, "k")
	if err != nil || release == nil {
		t.Fatalf("old Acquire: %v", err)
	}
	next, err := NewInFlight("exports", 2, WithStore(store), WithReplace(old))
	if err != nil {
		t.Fatalf("NewInFlight replacing the live cap: %v", err)
	}
	defer next.Close()
	if _, err := NewInFlight("exports", 2, WithStore(store)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("a third cap naming nobody: err %v, want ErrInvalidOption", err)
	}
	old.Close()
	if _, err := NewInFlight("exports", 2, WithStore(store)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("after the old cap's Close: err %v, want the new one's claim held", err)
	}
	if u, err := next.Usage(ctx, "k"); err != nil || u.Held != 1 {
		t.Fatalf("new cap's usage with a slot held through the old: got %+v, %v; want 1 held", u, err)
	}
	release()
	if u, err := next.Usage(ctx, "k"); err != nil || u.Held != 0 {
		t.Fatalf("after the old slot's release past the old's Close: got %+v, %v; want 0 held", u, err)
	}
}
