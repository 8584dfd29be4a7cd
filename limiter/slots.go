package limiter

import (
	"context"
	"fmt"
	"time"
)

// A SlotStore keeps the slots of in-flight caps (InFlight): how many
// requests of each key hold a slot now. It is a second, small interface
// beside Store, so that Store stays as it is: MemoryStore and the Redis
// store implement both, and NewInFlight refuses a store that lacks it.
//
// AcquireSlot must be one atomic step per key: count the key's slots,
// refuse at req.Max, else take one, with no other call on the same key
// and cap able to interleave. ReleaseSlot gives the slot back, once: a
// second release of one slot, or a release of a slot the store no longer
// holds (a Redis slot whose lease ran out), changes nothing. A store that
// outlives its callers (Redis, shared by replicas) must let a slot whose
// holder died go after req.Lease, and keep the slots of live holders for
// as long as they hold them.
//
// Stores namespace slots by the cap's Policy (its name), apart from the
// counters of rate policies.
type SlotStore interface {
	// AcquireSlot takes one of req.Max slots of req.Key, or refuses
	// (Acquired false, and no error) when all are held. An error does not
	// say whether a slot was taken: a store across a network may take it
	// and lose the reply, and must then let it go by itself (the Redis
	// store releases it in the background, or its lease ends).
	//
	// With req.Peek it takes no slot and renews none: it answers how
	// many slots req.Key holds now (Held; Acquired false). A key whose
	// slots the store cannot read (a foreign value under it) reads as
	// req.Max, as a take refuses it. A store that ignores Peek and takes
	// a slot has it given back at once by InFlight.Usage (a round trip
	// more, and a slot held for its duration): implement Peek.
	AcquireSlot(ctx context.Context, req SlotRequest) (Slot, error)
	// ReleaseSlot gives back s, a slot AcquireSlot granted for req. It
	// is applied at most once per slot, and its error (the store could
	// not be reached) leaves the store to let the slot go by itself.
	ReleaseSlot(ctx context.Context, req SlotRequest, s Slot) error
}

// A SlotRequest asks a SlotStore about one key's slots.
type SlotRequest struct {
	// Key identifies the client; never empty.
	Key string
	// Policy is the cap's (InFlight.Policy): its name namespaces the
	// slots.
	Policy *Policy
	// Max is the number of slots the key may hold, 1 to MaxLimit: the
	// cap's, or a smaller one a store applies while degraded (the Redis
	// store's WithFailLocal).
	Max int64
	// Lease is how long a slot outlives a holder that died holding it,
	// for stores shared across processes; ≥ 1s.
	Lease time.Duration
	// Peek asks how many slots Key holds, taking none (InFlight.Usage).
	Peek bool
}

// A Slot is a SlotStore's answer to AcquireSlot.
type Slot struct {
	// Acquired reports whether a slot was taken.
	Acquired bool
	// Held is how many slots the key holds after the call, this one
	// included when it was acquired: Max when refused (or more, after a
	// cap was lowered).
	Held int64
	// Max is the number of slots the decision was made against: the
	// request's Max, or a store's own while degraded.
	Max int64
	// Token names the slot for ReleaseSlot, as the store sees fit.
	Token uint64
}

// minInFlightLease is the shortest lease WithInFlightLease accepts: a
// slot must outlive the round trips that renew it.
const minInFlightLease = time.Second

// check reports a slot request no store should act on.
func (r *SlotRequest) check() error {
	switch {
	case r.Policy == nil || r.Policy.inFlight <= 0:
		return fmt.Errorf("%w: nil Policy or one of rates; slots need an InFlight's", ErrInvalidPolicy)
	case r.Max <= 0 || r.Max > MaxLimit:
		return fmt.Errorf("%w: slot max %d must be in [1, %d]", ErrInvalidPolicy, r.Max, MaxLimit)
	case r.Key == "":
		return ErrInvalidKey
	}
	return nil
}
