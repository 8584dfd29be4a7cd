package redisstore

import (
	"context"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// healthChanges returns e's HealthChanged events as "from→to".
func (e *events) healthChanges() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.got {
		if ev.Kind == HealthChanged {
			out = append(out, ev.From.String()+"→"+ev.To.String())
		}
	}
	return out
}

// With Redis stopped, a decision says why: the dials were refused, even
// though go-redis's dial attempts outlast the 100 ms a decision has and
// the call itself ends in "context deadline exceeded". Health is Failing
// from the first failure, with an event that says so, and Unavailable
// once the breaker opens.
func TestStoppedRedisNamed(t *testing.T) {
	srv := redistest.StartServer(t)
	srv.Kill()
	c := redistest.Client(t, srv.Addr())
	var ev events
	s2, err := New(c, WithPrefix(testPrefix(t)), WithObserver(ev.observe))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	l2 := newLimiter(t, limiter.MustPolicy("api", limiter.PerMinute(10)), s2, limitertest.New(t0))
	for i := 1; i <= defaultBreakerFailures; i++ {
		_, err := l2.Allow(context.Background(), "k", 1)
		// The text docs/redis.md shows.
		wantText := "redisstore: redis could not decide: connection refused: dial tcp " + srv.Addr() +
			": connect: connection refused (no connection within the timeout: context deadline exceeded)"
		if !errors.Is(err, ErrUnavailable) || reasonOf(err) != "connection_refused" || err.Error() != wantText {
			t.Fatalf("decision %d with Redis stopped: %v (reason %q), want ErrUnavailable naming the refused connection", i, err, reasonOf(err))
		}
		want := Failing
		if i == defaultBreakerFailures {
			want = Unavailable
		}
		if h := s2.Health()[srv.Addr()]; h != want {
			t.Fatalf("after %d failed decisions: health %v, want %v", i, h, want)
		}
	}
	if got, want := strings.Join(ev.healthChanges(), " "), "healthy→failing failing→unavailable"; got != want {
		t.Fatalf("health events %q, want %q", got, want)
	}
	ev.mu.Lock()
	first := ev.got[0]
	ev.mu.Unlock()
	if reasonOf(first.Err) != "connection_refused" {
		t.Fatalf("the failing event's error %v, want it named connection_refused", first.Err)
	}
	if got, want := first.String(), srv.Addr()+" healthy → failing: connection refused: dial tcp "+srv.Addr(); !strings.HasPrefix(got, want) {
		t.Fatalf("the event as logged: %q, want it to start %q", got, want)
	}
}

// A server that takes the call and never answers is named too: the
// decision's timeout says which node kept it waiting, for a decision and
// for a cap's count alike.
func TestSilentRedisNamed(t *testing.T) {
	p := redistest.StartProxy(t, redistest.SharedAddr)
	c := redistest.Client(t, p.Addr())
	s := newStore(t, c, WithTimeout(200*time.Millisecond))
	l := newLimiter(t, limiter.MustPolicy("api", limiter.PerMinute(10)), s, limitertest.New(t0))
	f, err := limiter.NewInFlight("exports", 2, limiter.WithStore(s))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := l.Allow(context.Background(), "k", 1); err != nil {
		t.Fatalf("through the proxy before it falls silent: %v", err)
	}
	p.SetDelay(time.Second)
	// The socket's own timeout names the server ("read tcp
	// 127.0.0.1:5→127.0.0.1:6: i/o timeout"); the context's does not, and
	// gets "(no answer from 127.0.0.1:6)".
	_, err = l.Allow(context.Background(), "k", 1)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) || reasonOf(err) != "timeout" ||
		!strings.HasPrefix(err.Error(), "redisstore: redis could not decide: timeout: ") || !strings.Contains(err.Error(), p.Addr()) {
		t.Fatalf("a decision Redis kept waiting: %v (reason %q), want a timeout naming %s", err, reasonOf(err), p.Addr())
	}
	if _, err := f.Usage(context.Background(), "k"); err == nil || !strings.Contains(err.Error(), p.Addr()) {
		t.Fatalf("a cap's count Redis kept waiting: %v, want it to name %s", err, p.Addr())
	}
}

// A success after failures makes a server Healthy again, and says so.
func TestFailingThenHealthy(t *testing.T) {
	srv := redistest.StartServer(t)
	c := redistest.Client(t, srv.Addr())
	var ev events
	s := newStore(t, c, WithObserver(ev.observe), WithTimeout(300*time.Millisecond))
	l := newLimiter(t, limiter.MustPolicy("api", limiter.PerMinute(10)), s, limitertest.New(t0))
	srv.Kill()
	if _, err := l.Allow(context.Background(), "k", 1); err == nil {
		t.Fatal("decided with Redis killed")
	}
	srv.Restart()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := l.Allow(context.Background(), "k", 1); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no decision within 10 s of the restart")
		}
	}
	if h := s.Health()[srv.Addr()]; h != Healthy {
		t.Fatalf("health after a success: %v, want healthy", h)
	}
	if got := strings.Join(ev.healthChanges(), " "); !strings.HasPrefix(got, "healthy→failing") || !strings.HasSuffix(got, "→healthy") {
		t.Fatalf("health events %q, want healthy→failing ... →healthy", got)
	}
}

// Ping finds, before any traffic, what the first decision would have
// met, each named: a wrong address, a name that does not resolve, a
// password refused, a certificate not trusted, an ACL user without
// the prefix's keys; and passes on a Redis that can decide, with the
// store's least-privilege ACL.
func TestPing(t *testing.T) {
	srv := redistest.StartServer(t)
	dead := redistest.StartServer(t)
	dead.Kill()
	tlsSrv := redistest.StartTLSServer(t)
	if err := redistest.Client(t, srv.Addr()).ConfigSet(context.Background(), "requirepass", "s3cret").Err(); err != nil {
		t.Fatal(err)
	}
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: "s3cret", ContextTimeoutEnabled: true})
	defer admin.Close()
	prefix := testPrefix(t)
	setACLUser(t, admin, "limiter", aclRules(prefix, "pw", aclCommands(t, admin, false)))
	setACLUser(t, admin, "elsewhere", aclRules("other:", "pw", aclCommands(t, admin, false)))
	client := func(o redis.Options) *redis.Client {
		o.ContextTimeoutEnabled, o.DialTimeout = true, time.Second
		c := redis.NewClient(&o)
		t.Cleanup(func() { c.Close() })
		return c
	}
	tests := []struct {
		name       string
		c          *redis.Client
		wantReason string
		wantText   string
	}{
		{"stopped", client(redis.Options{Addr: dead.Addr()}), "connection_refused", "redisstore: ping " + dead.Addr() + ": connection refused: dial tcp"},
		{"name_not_resolving", client(redis.Options{Addr: "no-such-host.invalid:6379"}), "dns", "redisstore: ping no-such-host.invalid:6379: dns lookup: dial tcp: lookup no-such-host.invalid"},
		{"wrong_password", client(redis.Options{Addr: srv.Addr(), Password: "guess"}), "auth", "auth: WRONGPASS"},
		{"no_password", client(redis.Options{Addr: srv.Addr()}), "auth", "auth: NOAUTH"},
		{"tls_untrusted_certificate", client(redis.Options{Addr: tlsSrv.TLSAddr, TLSConfig: &tls.Config{ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}}),
			"tls", "redisstore: ping " + tlsSrv.TLSAddr + ": tls handshake: tls: failed to verify certificate"},
		{"tls_trusted", client(redis.Options{Addr: tlsSrv.TLSAddr, TLSConfig: &tls.Config{RootCAs: tlsSrv.Roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}}), "", ""},
		{"acl_without_the_prefix", client(redis.Options{Addr: srv.Addr(), Username: "elsewhere", Password: "pw"}), "permission_denied", "redisstore: ping: probe decision:"},
		{"ok_least_privilege", client(redis.Options{Addr: srv.Addr(), Username: "limiter", Password: "pw"}), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.c, WithPrefix(prefix), WithFailOpen())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err = s.Ping(ctx)
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("Ping: %v, want nil", err)
				}
				return
			}
			if err == nil || reasonOf(err) != tt.wantReason || !strings.Contains(err.Error(), tt.wantText) {
				t.Fatalf("Ping: %v (reason %q), want reason %q and text %q", err, reasonOf(err), tt.wantReason, tt.wantText)
			}
		})
	}
}

// Ping visits every master of a Cluster.
func TestPingCluster(t *testing.T) {
	cl := redistest.SharedCluster(t)
	s := newStore(t, cl.Client(t))
	if _, err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping on a healthy Cluster: %v", err)
	}
}
