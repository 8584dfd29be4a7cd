package redisstore

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
)

// A dest is one server decisions go to (a single node or Sentinel's
// master, a Cluster master, a Ring shard), or on the Plain path the
// client, which routes each call itself. Each dest has its own circuit
// breaker and health, and every call for its decisions goes through
// them, however it is sent: a server that fails fails only its own
// decisions.
type dest struct {
	name string // the server's address; "client" on the Plain path
	// p is the server's own client (the store's client on the Plain path).
	// one: p is one server, so one call may carry the decisions of many
	// client keys, its reply read raw, unless every key must be declared
	// (Store.declared). node: a Cluster master, whose one call is a node
	// call, declaring no key (take.lua); its requests found off the master
	// come back.
	p         redis.UniversalClient
	one, node bool
	// keyed sends this dest's calls per client key, each with its keys
	// declared: p, or for a Cluster master the Cluster client, which
	// follows MOVED and ASK (the slot may have moved).
	keyed   redis.UniversalClient
	breaker *gobreaker.CircuitBreaker[any]
	health  atomic.Uint32
	lastErr atomic.Pointer[error]
	dialErr atomic.Pointer[dialFailure] // the last failed dial, until one succeeds (see dialWatch)
	used    atomic.Int64                // when a round last sent here, Unix ns
}

// A router says which dest decides each client key: one small router per
// kind of client, and the round loop (round.go) does the rest. An error
// concerns every key (no slot map could be loaded, no shard is up): the
// round fails the decisions left with it.
type router interface {
	route(ctx context.Context, key string) (*dest, error)
}

// oneDest sends everything to one dest: a single node, or a client left
// to route by itself.
type oneDest struct{ d *dest }

func (r oneDest) route(context.Context, string) (*dest, error) { return r.d, nil }

// clusterRouter sends each decision to the master serving its slot, as
// go-redis's slot map has it: in a node call, or in calls per key that
// go-redis routes (every key declared; decisions a node call found off
// its master), through that master's breaker either way. Once go-redis
// has a slot map it always names a master; before it has loaded one
// (no node reachable since the client was made), the decisions fail
// with its error.
type clusterRouter struct {
	s *Store
	c *redis.ClusterClient
}

func (r clusterRouter) route(ctx context.Context, key string) (*dest, error) {
	n, err := r.c.MasterForKey(ctx, tag(key))
	if err != nil {
		return nil, err
	}
	return r.s.destFor(n, r.c), nil
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
	return r.s.destFor(n, nil), nil
}

// destFor returns the dest of one server's client, made on first use;
// cluster, for a Cluster master, is the client that routes its calls per
// key.
func (s *Store) destFor(c *redis.Client, cluster *redis.ClusterClient) *dest {
	if v, ok := s.dests.Load(c); ok {
		return v.(*dest)
	}
	d := &dest{name: c.Options().Addr, p: c, one: true, keyed: c}
	if cluster != nil {
		d.node, d.keyed = true, cluster
	}
	d.breaker = s.newBreaker(d)
	v, loaded := s.dests.LoadOrStore(c, d)
	if !loaded { // the dest kept, not one that lost a race
		watchDials(c, d)
	}
	return v.(*dest)
}

// newRouter returns the router for the store's client and path.
func (s *Store) newRouter() router {
	if s.path == pathPlain {
		d := &dest{name: "client", p: s.client, keyed: s.client}
		d.breaker = s.newBreaker(d)
		s.dests.Store(s.client, d)
		return oneDest{d}
	}
	switch c := s.client.(type) {
	case *redis.ClusterClient:
		return clusterRouter{s, c}
	case *redis.Ring:
		return ringRouter{s, c}
	case *redis.Client:
		return oneDest{s.destFor(c, nil)}
	}
	return nil // unreachable: New forces Plain for other clients
}
