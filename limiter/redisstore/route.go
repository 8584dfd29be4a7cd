package redisstore

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
)

// A dest is where script calls go: one server (a single node or
// Sentinel's master, a Cluster master, a Ring shard), or a client that
// routes each call itself (go-redis's Cluster routing for slot calls; any
// client on the Plain path). Each dest has its own circuit breaker and
// health, so a server that fails fails only its own decisions.
type dest struct {
	name string // the server's address, or the kind of routing client
	p    redis.UniversalClient
	// server: p is one server, so one call may carry the decisions of
	// many client keys, its reply read raw. Otherwise p routes each call
	// by its first declared key and must see MOVED and ASK: one call per
	// slot, its reply parsed by go-redis.
	server bool
	// undeclared: a Cluster master's node call, which declares no key
	// (take.lua); its requests found off the master come back.
	undeclared bool
	breaker    *gobreaker.CircuitBreaker[any]
	health     atomic.Uint32
	lastErr    atomic.Pointer[error]
	dialErr    atomic.Pointer[dialFailure] // the last failed dial, until one succeeds (see dialWatch)
	used       atomic.Int64                // when a round last sent here, Unix ns
}

// A router says which dest decides each client key: one small router per
// kind of client, and the round loop (round.go) does the rest.
type router interface {
	route(ctx context.Context, key string) (*dest, error)
}

// oneDest sends everything to one dest: a single node, or a client left
// to route by itself.
type oneDest struct{ d *dest }

func (r oneDest) route(context.Context, string) (*dest, error) { return r.d, nil }

// clusterRouter sends each decision to the master serving its slot, as
// go-redis's slot map has it; a decision whose master is not known goes
// to slots, calls per slot routed by go-redis, which reports what is
// wrong.
type clusterRouter struct {
	s     *Store
	c     *redis.ClusterClient
	slots *dest
}

func (r clusterRouter) route(ctx context.Context, key string) (*dest, error) {
	n, err := r.c.MasterForKey(ctx, tag(key))
	if err != nil {
		return r.slots, nil
	}
	return r.s.destFor(n, true), nil
}

// ringRouter sends each decision to the shard the Ring routes its key to
// (its own routing, GetShardClientForKey). A Ring has no other way to a
// shard: a key with no shard fails with the Ring's error.
type ringRouter struct {
	s *Store
	r *redis.Ring
}

func (r ringRouter) route(_ context.Context, key string) (*dest, error) {
	n, err := r.r.GetShardClientForKey(tag(key))
	if err != nil {
		return nil, err
	}
	return r.s.destFor(n, false), nil
}

// destFor returns the dest of one server's client, made on first use.
func (s *Store) destFor(c *redis.Client, undeclared bool) *dest {
	if v, ok := s.dests.Load(c); ok {
		return v.(*dest)
	}
	v, _ := s.dests.LoadOrStore(c, s.newDest(c.Options().Addr, c, true, undeclared))
	return v.(*dest)
}

// newDest returns a dest with a breaker of its own.
func (s *Store) newDest(name string, p redis.UniversalClient, server, undeclared bool) *dest {
	d := &dest{name: name, p: p, server: server, undeclared: undeclared}
	d.breaker = s.newBreaker(d)
	if c, ok := p.(*redis.Client); ok {
		watchDials(c, d)
	}
	return d
}

// newRouter returns the router and the resend dest (a Cluster's slot
// calls, else nil) for the store's client and path.
func (s *Store) newRouter() (router, *dest) {
	if s.path == pathPlain {
		d := s.newDest("client", s.client, false, false)
		s.dests.Store(s.client, d)
		return oneDest{d}, nil
	}
	switch c := s.client.(type) {
	case *redis.ClusterClient:
		slots := s.newDest("cluster", c, false, false)
		s.dests.Store(c, slots)
		o := c.Options()
		// A client that reads from replicas opens every connection with
		// READONLY, on which a master demoted by a failover the slot map
		// has not caught up with would answer a node call's probe as a
		// replica instead of redirecting it: such a client gets slot
		// calls only, which go-redis routes itself.
		if o.ReadOnly || o.RouteByLatency || o.RouteRandomly {
			return oneDest{slots}, nil
		}
		return clusterRouter{s, c, slots}, slots
	case *redis.Ring:
		return ringRouter{s, c}, nil
	case *redis.Client:
		return oneDest{s.destFor(c, false)}, nil
	}
	return nil, nil // unreachable: New forces Plain for other clients
}
