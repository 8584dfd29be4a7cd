// Package cow is a map read without a lock: a copy-on-write map behind
// an atomic pointer, for caches that every request reads and that seldom
// grow (a plan's limiters, a time zone by name). A read is one atomic
// load and one map lookup, with no lock shared between readers and no
// allocation; a write copies the map under a mutex, so a cache that
// grows per request would cost O(n) a request: each has a bound, past
// which the map starts afresh, so that what is no longer used (the plans
// of a configuration reloaded) is not kept for good.
package cow

import (
	"sync"
	"sync/atomic"
)

// A Map is a copy-on-write map from K to V holding at most its bound:
// an Add to a full map empties it first. The zero Map is empty and holds
// nothing: call SetBound.
type Map[K comparable, V any] struct {
	m     atomic.Pointer[map[K]V]
	mu    sync.Mutex
	bound int
}

// SetBound sets how many entries the map holds at most.
func (c *Map[K, V]) SetBound(n int) {
	c.mu.Lock()
	c.bound = n
	c.mu.Unlock()
}

// Get returns k's value, and whether there is one.
func (c *Map[K, V]) Get(k K) (V, bool) {
	if m := c.m.Load(); m != nil {
		v, ok := (*m)[k]
		return v, ok
	}
	var zero V
	return zero, false
}

// Add stores v under k unless k has a value already, which it returns
// (a racing writer's). A map that holds its bound is emptied first: the
// entries in use come back, one Add each, and those no longer used go. A
// map of bound 0 keeps nothing, and returns v.
func (c *Map[K, V]) Add(k K, v V) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bound <= 0 {
		return v
	}
	old := c.m.Load()
	if old != nil {
		if prev, ok := (*old)[k]; ok {
			return prev
		}
		if len(*old) >= c.bound {
			old = nil // start afresh
		}
	}
	n := 1
	if old != nil {
		n += len(*old)
	}
	next := make(map[K]V, n)
	if old != nil {
		for ok, ov := range *old {
			next[ok] = ov
		}
	}
	next[k] = v
	c.m.Store(&next)
	return v
}

// Len returns how many entries the map holds.
func (c *Map[K, V]) Len() int {
	if m := c.m.Load(); m != nil {
		return len(*m)
	}
	return 0
}
