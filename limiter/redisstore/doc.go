// Package redisstore is a limiter.Store kept in Redis, so that every
// replica of a service shares one limit: N replicas admit the limit, not N
// times it.
//
//	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
//	store, err := redisstore.New(client) // fail closed, 100ms per decision
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer store.Close()
//	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(100)), limiter.WithStore(store))
//	if err != nil {
//		log.Fatal(err)
//	}
//	d, err := l.Allow(ctx, "client-42", 1) // errors.Is(err, redisstore.ErrUnavailable) when Redis is away
//
// # One script call, decided atomically
//
// Each decision is one Lua script (take.lua, embedded), run by EVALSHA and
// re-sent by EVAL when Redis answers NOSCRIPT (after a restart or SCRIPT
// FLUSH). Redis runs it atomically: it reads every window of the policy,
// starts a fresh count when the window changed, refuses when cost > limit
// or count > limit − cost in any window, and otherwise adds the cost to
// every window. The expiry is set when a window's count is created (the
// window's end plus a margin), never on later calls, so busy traffic can
// never push a window's end back; a refusal charges nothing and moves no
// expiry. A count found with no expiry at all is given the one it should
// have had, by the first refusal that finds it (before it can refuse a
// client beyond its window) or the first admission that takes its count
// across a power of two. The script returns the counts it found, and the Go side builds
// the Decision with limiter.Decide, the same rule as the in-memory store,
// and checks that the script's verdict agrees.
//
// # Keys
//
//	<prefix>{<client key>}:<policy name>:<window ms>[:<window id>]
//
// The braces make the client key the Redis Cluster hash tag: all windows of
// one client live in one slot, so one script can decide them together
// (no CROSSSLOT), while different clients spread over the cluster. Braces
// and '%' inside client keys are percent-encoded; WithKeyHash puts a
// keyed hash of the client key there instead, so that no address or API
// key is stored in clear. A key names the policy's
// name and one window, never a limit: a limit changed by a deploy or a
// plan (limiter.Limiter.For) keeps the counts, and two versions of
// a service side by side count one usage. On the limiter's clock the key
// names its window and holds the count; with WithServerClock it names no
// window and holds "<window id>:<count>". A calendar rate (limiter.PerDayIn,
// PerWeekIn, PerMonthIn) names its windows by period and zone
// ("day@Europe/Paris") in place of a length, and its window id is the
// window's start in Unix milliseconds; its key expires when that local
// day, week or month ends, plus the margin. docs/redis.md says what an
// upgrade from the format that named limits costs.
//
// # Clocks
//
// By default requests are placed with the limiter's clock (Request.Now,
// and the instant the limiter passes to Reset) and the window id is in
// the key; the store keeps no clock of its own. WithServerClock reads
// Redis's TIME in the script instead: one clock for every replica. Its
// documentation has the failure modes of each, and how a calendar
// window is found by Redis's clock when Lua has no time zones.
//
// # Leases
//
// WithLeases lets a replica decide a hot key locally: a request that goes
// to Redis may also lease part of its key's budget, charged to every
// window in the same atomic script call, and the replica spends it with
// no round trip until it is spent or its window ends. The limit stays an
// exact upper bound across replicas; units leased and not spent by the
// window's end are lost to it, a bounded under-admission. See
// docs/leases.md.
//
// # In-flight slots
//
// The store also keeps the slots of in-flight caps (limiter.InFlight,
// limiter.SlotStore), so that every replica shares one cap: a key's
// slots are a sorted set,
//
//	<prefix>{<client key>}:<cap name>:inflight
//
// one member per slot, named by a token the holding store made (its
// random id and a counter), scored by when the slot's lease ends in ms
// of Redis's TIME. Taking, renewing and giving back a slot are each one
// run of a script (inflight.lua), batched in rounds as decisions are,
// on a single node, a Cluster (node calls per master) and a Ring, with
// the same per-server breakers, failure policy (fail closed; WithFailOpen
// admits a slot charged to nothing; WithFailLocal takes one from a local
// cap of max/divisor) and named errors. The token makes each call
// idempotent: a call sent again counts once.
//
// The store renews the slots it holds, in the background, about every
// quarter of their lease (limiter.WithInFlightLease, 10s by default), so
// a request keeps its slot however long it runs; a replica that dies
// holding slots (kill -9) gives them back when their leases end, within
// one lease. Redis's clock alone judges a lease: a step of a replica's
// clock frees nothing early. A renewal that finds its slot's lease ended
// (Redis away for most of a lease) takes it again only if the cap has
// room, so a renewal racing an expiry never exceeds the cap; a slot that
// finds none is lost (Stats.SlotsLost), and its request runs on without
// it. A hold whose reply was lost, and a release that failed, are given
// back in the background once they can no longer be running. The set
// expires with its latest lease: a key with nothing in flight holds no
// memory. It needs Redis 6.2 or later (ZADD GT).
//
// # Settling
//
// The store is a limiter.Settler: a cost known only once a request has
// been served (limiter.Reserve, the middlewares' reported costs) is
// settled in one atomic run of a script (settle.lua), batched in rounds
// as decisions are: more than the reservation is charged to the windows
// current at the settle, never refused (a key may go into debt, and every
// replica then refuses it until the window ends); less is returned to the
// windows its admission charged that are still current. Each settle is
// applied at most once: it carries a token, of which Redis keeps a marker
// key in the client key's hash tag for a minute, and a call whose reply
// was lost is sent once more with its token, within the timeout, and
// counted once. A settle that fails returns its error whatever the
// failure policy.
//
// # Time and failure
//
// Every decision is bounded by a timeout (default 100ms) on top of the
// caller's context, waiting for another caller's lease included, which is
// why the client must set ContextTimeoutEnabled. When Redis cannot decide,
// Take returns an error wrapping ErrUnavailable and the cause, named by
// its Reason method (out_of_memory, permission_denied, timeout, ...), by
// default; WithFailOpen admits instead; WithFailLocal decides with an
// in-memory store at limit/N. Each server (the single node, each
// Cluster master, each Ring shard) has its own circuit breaker: one that
// keeps failing is not called, its decisions answered by the policy at
// once, until a probe finds it back; the other servers' decisions go on.
// On a Cluster every call counts for a master, the calls go-redis routes
// by slot for the master the slot map names. Each change of health is
// reported to the observer (WithObserver), with the server's address;
// Health says where the store stands, server by server. Error replies
// that are answers (OOM, NOPERM, and CLUSTERDOWN and TRYAGAIN, which tell
// a slot's state, not the server's) fail their decisions without opening
// a breaker. Time a decision spends queued under load is not counted as
// Redis failing.
//
// A decision that timed out or whose context ended may still have been
// charged: the script may have run in Redis, only its reply given up on.
//
// Redis replicates asynchronously: a master lost before its replica had
// a charge loses it, and a failover then admits past the limit.
// WithReplicaAcks makes every answer wait until replicas hold it (WAIT,
// once per round of decisions and server), so that what the store
// answered survives the failover; docs/redis.md has what it costs.
//
// A decision is charged at most once. A reply lost after Redis ran the
// script (a connection reset, a proxy restarting) is a failure of that
// decision, answered as any failure is, never a second run: every
// script call is a command whose NoRetry reports true, which go-redis
// (v9.22 and later) never sends again after a network error, whatever
// the client's MaxRetries and MaxRedirects; the client's other commands
// keep their retries. A Cluster client still follows MOVED and ASK for
// the script (a redirected script ran nowhere), and the store sends a
// script answered TRYAGAIN again itself. A hook of the user's own
// (redis.Hook) that retries commands is outside the store's reach: such
// a hook must leave EVALSHA and EVAL alone, or check Cmder.NoRetry.
//
// With the HTTP middleware, pick one place to fail open: either the store
// (WithFailOpen or WithFailLocal: the middleware sees no error) or the
// middleware's own fail-open option on the errors of a store built
// without either.
//
// # Sharing round trips
//
// A key found over its limit in a window is refused locally for a second
// at most (the over-limit cache): no round trip. Concurrent decisions
// share rounds: the decisions that queue while earlier ones are in flight
// go out together, one script call per server, each decided atomically
// in turn, the servers in parallel. On a *redis.Client (a single node or
// a Sentinel failover client) that is one call; on a *redis.ClusterClient
// one per master serving their slots (go-redis's slot map), sent straight
// to it, declaring no key; a decision whose slot has left that master is
// charged nothing there and sent again at once in a call that follows
// MOVED and ASK (Stats.Resent). A client that reads from replicas
// (ReadOnly, RouteByLatency, RouteRandomly) makes one call per client
// key, its keys declared, routed by go-redis. So does every client once
// a server has refused a call for its keys (DragonflyDB refuses
// undeclared keys; proxies that route a script by its first key cannot
// route a call with none), or from the start with WithDeclaredKeys: see
// the KeysDeclared event. On a *redis.Ring, one call per shard the Ring
// routes their keys to; a shard that is down fails its decisions until
// the Ring's heartbeat takes it out. When the round trip is long beside
// the timeout, more rounds start for a burst, up to the pool's
// connections. docs/performance.md has the figures.
//
// Calls per master or shard go to that node's own client, so hooks added
// with the ClusterClient's or the Ring's AddHook (tracing, metrics) do not
// see them. Add such hooks to every node's client instead: in
// ClusterOptions.NewClient or RingOptions.NewClient, or with
// ForEachMaster or ForEachShard, plus OnNewNode for nodes added later.
package redisstore
