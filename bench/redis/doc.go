// Package redis compares the Redis store of github.com/fixedwindow/ratelimit
// with two Redis-backed peers, github.com/go-redis/redis_rate/v10 and
// ulule/limiter/v3's Redis store, in one run against the local Redis at
// 127.0.0.1:6379, with 64 concurrent callers. It is a benchmark-only
// package of the nested bench module, so that the peers never enter the
// main module.
//
//	cd bench && go test -run '^$' -bench . -benchmem -count 5 ./redis
//
// Every benchmark reports redis-cmds/op, the commands its client sent per
// decision (counted by a go-redis hook, so other users of the shared Redis
// do not blur it), and the CPU time per decision of the benchmark process
// (client-cpu-ns/op, getrusage) and of the Redis server (server-cpu-ns/op,
// INFO cpu, which counts every client of that server), and the time the
// server spent running scripts per decision (script-ns/op, INFO
// commandstats' EVALSHA and EVAL). REDIS_ADDR points
// the single-node benchmarks at another server, such as a private one:
//
//	REDIS_ADDR=127.0.0.1:6394 go test -run '^$' -bench . -count 5 ./redis
//
// BenchmarkClusterAdmit starts its own three-master Redis Cluster on
// loopback (redis-server and redis-cli must be installed), once for all its
// sub-benchmarks and runs, and stops it at the end. There the commands are
// counted on each node's client, so redirects would show, and
// server-cpu-ns/op adds up the three masters:
//
//	go test -run '^$' -bench Cluster -count 6 ./redis
//
// BenchmarkAdmit and BenchmarkClusterAdmit run the store beside its floor
// (floor_test.go) on every shape of policy: the limiter's clock and
// Redis's (WithServerClock), one window and two (layered). The floor is the least a fixed-window limiter
// can ask of Redis over the same keys and batches: one script call per
// round and server, batched as the store batches, that MGETs the keys,
// then INCRBYs each (SET with PX for a new one), with no check of what it
// read and one integer per request in its reply. Its server-cpu-ns/op is
// what the store's is to be measured against:
//
//	REDIS_ADDR=127.0.0.1:6394 go test -run '^$' -bench 'Admit$/(fixedwindow|floor)/' -count 6 ./redis
//
// BenchmarkRingAdmit does the same on a go-redis Ring of three servers it
// starts. The store runs its one path per client kind: Batch on a
// *redis.Client, Batch per node on a Cluster client, Batch per shard on a
// Ring.
//
// BenchmarkScriptCeiling, on a Cluster of its own, estimates what shapes of
// script calls (one per decision, pipelines per node, one per slot) could
// give, with a stand-in script lighter than the store's.
//
// BenchmarkHotKey runs 4 replicas (separate clients and stores) x 16
// callers on one key and on 10,000, for redis_rate, the store's default
// and the store with leases (redisstore.WithLeases): decisions/s,
// redis-cmds/op summed over the four clients, the p99 of one decision
// (p99-ns), client-cpu-ns/op and the share of decisions made from a lease
// (leased/op); no server CPU, which the shared Redis's other clients blur
// at these rates. See docs/leases.md.
//
//	go test -run '^$' -bench HotKey -count 6 ./redis
package redis
