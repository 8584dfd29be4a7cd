package otelmetrics_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
)

func health(node string, v float64) metricdata.DataPoint[float64] {
	return metricdata.DataPoint[float64]{Attributes: attribute.NewSet(attribute.String("ratelimit.store.node", node)), Value: v}
}

func wantHealth(points ...metricdata.DataPoint[float64]) metricdata.Metrics {
	return metricdata.Metrics{
		Name:        "ratelimit.store.health",
		Description: "Health of each Redis server the store decides on, as it last changed: 1 healthy, 0.75 failing, 0.5 probing, 0 unavailable.",
		Data:        metricdata.Gauge[float64]{DataPoints: points},
	}
}

func TestObserveStoreReportsHealthPerNode(t *testing.T) {
	f := newFixture(t)
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
		// Not health: ignored.
		{Kind: redisstore.CorruptValue, Err: errors.New(`redisstore: corrupt value: key "rl:{user:42}"`)},
		{Kind: redisstore.RiskyMemoryPolicy, Err: errors.New("noeviction")},
	} {
		f.m.ObserveStore(e)
	}
	metricdatatest.AssertEqual(t, wantHealth(health("10.0.0.1:6379", 0), health("10.0.0.2:6379", 0.5), health("10.0.0.3:6379", 1)),
		f.collect(t)["ratelimit.store.health"], metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
}

// The gauge follows a real store: a server that stops answering opens
// its breaker, and the observer passed to redisstore.WithObserver says so.
func TestObserveStoreWiredToRedisStore(t *testing.T) {
	f := newFixture(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // connections are now refused
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer client.Close()
	opened := make(chan string, 1)
	store, err := redisstore.New(client, redisstore.WithBreaker(1, time.Hour), redisstore.WithObserver(func(e redisstore.Event) {
		f.m.ObserveStore(e)
		if e.Kind == redisstore.HealthChanged && e.To == redisstore.Unavailable {
			select {
			case opened <- e.Node:
			default:
			}
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(5)), limiter.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Allow(context.Background(), "192.0.2.1", 1); !errors.Is(err, redisstore.ErrUnavailable) {
		t.Fatalf("Allow with Redis away: error %v, want ErrUnavailable", err)
	}
	var node string
	select {
	case node = <-opened:
	case <-time.After(5 * time.Second):
		t.Fatal("the breaker did not report opening")
	}
	metricdatatest.AssertEqual(t, wantHealth(health(node, 0)), f.collect(t)["ratelimit.store.health"], metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
}
