package grpclimit_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/console"
	"github.com/fixedwindow/ratelimit/middleware/grpclimit"
)

// The personal data of TestNoPersonalDataInRedis's traffic, none of
// which may reach Redis.
const (
	clientAddr = "203.0.113.77"
	clientPath = "/v1/customers/asha-private"
	apiKey     = "key-asha-0123"
)

// TestNoPersonalDataInRedis: with redisstore.WithKeyHash, HTTP and gRPC
// traffic keyed by address, by address and path, and by an API key sent
// as a header and as metadata, holding in-flight slots, settling a
// reported cost and resetting a key, writes no address, path or API key
// to any Redis key or value; every key's hash tag is the hashed key.
// Limiter.Usage and Reset and the console find the customer by the clear
// key, and the API key counts one budget across both doors.
func TestNoPersonalDataInRedis(t *testing.T) {
	client := redistest.Shared(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "test:grpclimit-privacy:" + hex.EncodeToString(b[:]) + ":"
	secret := []byte("a secret of 32 bytes, not random")
	store, err := redisstore.New(client, redisstore.WithPrefix(prefix), redisstore.WithTimeout(5*time.Second), redisstore.WithKeyHash(secret))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	clk := limitertest.New(time.Date(2026, 7, 31, 12, 0, 10, 0, time.UTC))
	mk := func(p *limiter.Policy) *limiter.Limiter {
		l, err := limiter.New(p, limiter.WithStore(store), limiter.WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	api := mk(limiter.MustPolicy("api", limiter.PerMinute(100)))
	paths := mk(limiter.MustPolicy("paths", limiter.PerMinute(100)))
	keys := mk(limiter.MustPolicy("keys", limiter.PerMinute(10)))
	tokens := mk(limiter.MustPolicy("tokens", limiter.PerMinute(1000)).MustUnit("acme-tokens"))
	exports, err := limiter.NewInFlight("exports", 2, limiter.WithStore(store), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exports.Close() })

	header := keyfunc.Must(keyfunc.Header("X-Api-Key"))
	path := keyfunc.Func(func(r *http.Request) (string, error) { return "path:" + r.URL.Path, nil })
	entered, release := make(chan struct{}), make(chan struct{})
	h := middleware.MustNew(api,
		middleware.WithKey(keyfunc.Must(keyfunc.RemoteHost())),
		middleware.WithLimiter(paths, keyfunc.Must(keyfunc.Join(keyfunc.Must(keyfunc.RemoteHost()), path))),
		middleware.WithLimiter(keys, header),
		middleware.WithReported(tokens, header, nil),
		middleware.WithInFlight(exports, header),
	)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		middleware.Report(r.Context(), "acme-tokens", 7)
		if r.URL.Path == "/export" {
			entered <- struct{}{}
			<-release
		}
	}))
	get := func(p string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, p, nil)
		r.RemoteAddr = clientAddr + ":4242"
		r.Header.Set("X-Api-Key", apiKey)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for range 3 {
		if w := get(clientPath); w.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", clientPath, w.Code, w.Body)
		}
	}
	md := grpclimit.Must(grpclimit.Metadata("x-api-key"))
	ic := newInterceptor(t, keys, grpclimit.WithKey(md), grpclimit.WithLimiter(api, grpclimit.PeerHost()), grpclimit.WithInFlight(exports, md))
	c := serve(t, interceptors(ic)...)
	if a := check(t, c, "x-api-key", apiKey); a.code != codes.OK {
		t.Fatalf("Check: %v", a.st)
	}
	if a := watch(t, c, "x-api-key", apiKey); !a.received {
		t.Fatalf("Watch: %v", a.st)
	}

	// One budget on both doors: 3 HTTP requests and 2 calls.
	ctx := context.Background()
	if u, err := keys.Usage(ctx, "hdr:X-Api-Key:"+apiKey); err != nil || u.Windows[0].Used != 5 {
		t.Fatalf("keys.Usage(clear key) = %+v, %v; want 5 used", u, err)
	}
	// Reset finds the clear key.
	pathKey := keyfunc.Must(keyfunc.Join(keyfunc.Must(keyfunc.RemoteHost()), path))
	r := httptest.NewRequest(http.MethodGet, clientPath, nil)
	r.RemoteAddr = clientAddr + ":4242"
	pk, err := pathKey(r)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := paths.Usage(ctx, pk); err != nil || u.Windows[0].Used != 3 {
		t.Fatalf("paths.Usage(%q) = %+v, %v; want 3 used", pk, u, err)
	}
	if err := paths.Reset(ctx, pk); err != nil {
		t.Fatal(err)
	}
	if u, err := paths.Usage(ctx, pk); err != nil || u.Windows[0].Used != 0 {
		t.Fatalf("paths.Usage(%q) after Reset = %+v, %v; want 0 used", pk, u, err)
	}

	// A request holds a slot while Redis is read.
	done := make(chan struct{})
	go func() {
		defer close(done)
		get("/export")
	}()
	<-entered
	defer func() {
		close(release)
		<-done
	}()
	if u, err := exports.Usage(ctx, "hdr:X-Api-Key:"+apiKey); err != nil || u.Held != 1 {
		t.Fatalf("exports.Usage(clear key) = %+v, %v; want 1 held", u, err)
	}

	found := scanFor(t, client, prefix, clientAddr, "127.0.0.1", clientPath, "asha-private", apiKey, "hdr:", "join:", "path:")
	for _, want := range []string{":api:", ":paths:", ":keys:", ":tokens:", ":exports:"} {
		if !strings.Contains(strings.Join(found, " "), want) {
			t.Errorf("no Redis key of %s under the test's prefix, in %q", want, found)
		}
	}

	// The console finds the customer by the clear key, with both doors'
	// usage.
	con, err := console.New(console.Config{
		Authorize: func(*http.Request) (string, console.Access) { return "support", console.Change },
		Observe:   func(console.Event) {},
		Limiters:  []*limiter.Limiter{api, keys, tokens},
		Caps:      []*limiter.InFlight{exports},
	})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	con.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/usage?key="+url.QueryEscape("hdr:X-Api-Key:"+apiKey), nil))
	var rep struct {
		Limiters []struct {
			Policy  string `json:"policy"`
			Windows []struct {
				Used int64 `json:"used"`
			} `json:"windows"`
		} `json:"limiters"`
		Caps []struct {
			Policy string `json:"policy"`
			Held   int64  `json:"held"`
		} `json:"caps"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &rep); err != nil || w.Code != http.StatusOK {
		t.Fatalf("console usage: %d %s (%v)", w.Code, w.Body, err)
	}
	used := map[string]int64{}
	for _, l := range rep.Limiters {
		if len(l.Windows) > 0 {
			used[l.Policy] = l.Windows[0].Used
		}
	}
	for _, cp := range rep.Caps {
		used[cp.Policy] = cp.Held
	}
	tu, err := tokens.Usage(ctx, "hdr:X-Api-Key:"+apiKey)
	if err != nil || tu.Windows[0].Used < 3*7 {
		t.Fatalf("tokens.Usage(clear key) = %+v, %v; want at least the 3 settled requests' 21", tu, err)
	}
	if want := map[string]int64{"api": 0, "keys": 6, "tokens": tu.Windows[0].Used, "exports": 1}; !equalUsed(used, want) {
		t.Errorf("console usage of the clear API key: got %v, want %v (body %s)", used, want, w.Body)
	}
}

func equalUsed(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if got, ok := a[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// scanFor reads every key under prefix and its value, whatever its type,
// and fails t if any holds one of raw, or if a key's hash tag is not a
// hashed key. It returns the keys, less the prefix.
func scanFor(t *testing.T, client *redis.Client, prefix string, raw ...string) []string {
	t.Helper()
	ctx := context.Background()
	var found []string
	iter := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		rest := strings.TrimPrefix(k, prefix)
		found = append(found, rest)
		var vals []string
		switch typ := client.Type(ctx, k).Val(); typ {
		case "string":
			vals = []string{client.Get(ctx, k).Val()}
		case "hash":
			for f, v := range client.HGetAll(ctx, k).Val() {
				vals = append(vals, f, v)
			}
		case "zset":
			vals = client.ZRange(ctx, k, 0, -1).Val()
		case "set":
			vals = client.SMembers(ctx, k).Val()
		case "list":
			vals = client.LRange(ctx, k, 0, -1).Val()
		case "none": // expired while scanned
		default:
			t.Errorf("key %q is a %s, which the test cannot read", rest, typ)
		}
		if !strings.HasPrefix(rest, "{hmac:") {
			t.Errorf("key %q: its hash tag is not a hashed key", rest)
		}
		for _, r := range raw {
			if strings.Contains(rest, r) {
				t.Errorf("key %q holds %q", rest, r)
			}
			for _, v := range vals {
				if strings.Contains(v, r) {
					t.Errorf("key %q: value %q holds %q", rest, v, r)
				}
			}
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return found
}
