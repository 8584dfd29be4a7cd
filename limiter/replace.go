package limiter

import "fmt"

// WithReplace says that the limiter New (or the cap NewInFlight) builds
// replaces old, a live one of the same policy on the same store: the one
// a configuration reload, or a test building its router again, built
// before. The new one takes over old's claim on the store (see
// WithStore), where New would refuse a second live limiter of the
// policy, and counts the same usage: counters belong to the key, the
// policy's name and its windows, never to a limiter, so what a client
// spent through old it has spent through the new one, and nothing is
// counted twice. Old keeps deciding, into the same counters, until it is
// closed; close it once the new one serves (after swapping the handler
// that uses it). Its Close then gives up nothing the new one holds and
// leaves the store, its counters, its leases and the slots held through
// old as they are: a slot taken through the old cap goes back on its
// release, into the counts the new one reads.
//
// Only the limiter named can be replaced, and once: a second limiter of
// the policy built without naming the live holder (two routes each given
// the policy by mistake) is refused as before. Old of another policy ID
// or on another store value has no claim to take over: the new one
// claims its own, as without the option. A closed old is no holder: the
// claim is free. WithReplace needs WithStore (a limiter on its own
// memory store shares no usage with another): New refuses it without,
// and refuses a nil old.
func WithReplace[T *Limiter | *InFlight](old T) Option {
	return func(c *config) {
		c.replaceSet = true
		switch o := any(old).(type) {
		case *Limiter:
			if o != nil && o.shared != nil {
				c.replaces = o.shared.claimed
			} else {
				c.replaceNil = true
			}
		case *InFlight:
			if o != nil {
				c.replaces = o.root().claimed
			} else {
				c.replaceNil = true
			}
		}
	}
}

// checkReplace reports a WithReplace that cannot apply.
func (c *config) checkReplace() error {
	switch {
	case !c.replaceSet:
		return nil
	case c.replaceNil:
		return fmt.Errorf("%w: WithReplace(nil): nothing to replace; leave the option out", ErrInvalidOption)
	case !c.storeSet:
		return fmt.Errorf("%w: WithReplace needs WithStore: a limiter on a memory store of its own counts no usage of the one it replaces", ErrInvalidOption)
	}
	return nil
}

// replacedNote explains a refusal despite WithReplace: the limiter named
// no longer holds the claim.
func replacedNote(c *config) string {
	if !c.replaceSet {
		return ""
	}
	return " (not the one WithReplace names, which was replaced already or counts another policy or store)"
}
