package metrics_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/fixedwindow/ratelimit/middleware/metrics"
)

func TestObserveStoreReportsHealthPerNode(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	changed := func(node string, from, to redisstore.Health) redisstore.Event {
		return redisstore.Event{Kind: redisstore.HealthChanged, Node: node, From: from, To: to}
	}
	for _, e := range []redisstore.Event{
		changed("10.0.0.1:6379", redisstore.Healthy, redisstore.Unavailable),
		changed("10.0.0.2:6379", redisstore.Healthy, redisstore.Unavailable),
		changed("10.0.0.2:6379", redisstore.Unavailable, redisstore.Probing),
		changed("10.0.0.3:6379", redisstore.Healthy, redisstore.Unavailable),
		changed("10.0.0.3:6379", redisstore.Unavailable, redisstore.Probing),
		changed("10.0.0.3:6379", redisstore.Probing, redisstore.Healthy),
		// Not health: ignored, and its Node (empty) makes no series.
		{Kind: redisstore.CorruptValue, Err: errors.New(`redisstore: corrupt value: key "rl:{user:42}"`)},
		{Kind: redisstore.RiskyMemoryPolicy, Err: errors.New("noeviction")},
	} {
		m.ObserveStore(e)
	}
	want := `
# HELP ratelimit_store_health Health of each Redis server the store decides on, as it last changed: 1 healthy, 0.75 failing, 0.5 probing, 0 unavailable.
# TYPE ratelimit_store_health gauge
ratelimit_store_health{node="10.0.0.1:6379"} 0
ratelimit_store_health{node="10.0.0.2:6379"} 0.5
ratelimit_store_health{node="10.0.0.3:6379"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ratelimit_store_health"); err != nil {
		t.Error(err)
	}
}

// The gauge follows a real store: a server that stops answering opens
// its breaker, and the observer passed to redisstore.WithObserver says so.
func TestObserveStoreWiredToRedisStore(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	unavailable := openBreaker(t, m.ObserveStore)
	want := `
# HELP ratelimit_store_health Health of each Redis server the store decides on, as it last changed: 1 healthy, 0.75 failing, 0.5 probing, 0 unavailable.
# TYPE ratelimit_store_health gauge
ratelimit_store_health{node="` + unavailable + `"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ratelimit_store_health"); err != nil {
		t.Error(err)
	}
}
