package limiter_test

import (
	"context"
	"testing"

	"github.com/fixedwindow/ratelimit/limiter"
)

// noPeekStore is a SlotStore written before SlotRequest.Peek: it takes a
// slot whatever the request.
type noPeekStore struct {
	*limiter.MemoryStore
}

func (s noPeekStore) AcquireSlot(ctx context.Context, req limiter.SlotRequest) (limiter.Slot, error) {
	req.Peek = false
	return s.MemoryStore.AcquireSlot(ctx, req)
}

// TestUsageOnAStoreWithoutPeek: InFlight.Usage on a store that ignores
// Peek gives back the slot the store took, and answers what was held
// before it: reading the usage never holds a slot.
func TestUsageOnAStoreWithoutPeek(t *testing.T) {
	ms, err := limiter.NewMemoryStore(limiter.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ms.Close() })
	f, err := limiter.NewInFlight("exports", 2, limiter.WithStore(noPeekStore{ms}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	ctx := context.Background()
	_, release, err := f.Acquire(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for range 3 {
		if u, err := f.Usage(ctx, "acme"); err != nil || u.Held != 1 {
			t.Fatalf("Usage: %+v, %v; want 1 held", u, err)
		}
	}
	if d, release2, err := f.Acquire(ctx, "acme"); err != nil || !d.Allowed {
		t.Fatalf("a second export after three reads: %+v, %v; want admitted (reads hold nothing)", d, err)
	} else {
		release2()
	}
}
