package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/leakcheck"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// TestMain fails the package if a goroutine (a store's sweep, a model's
// answer) outlives the tests.
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// A proxy is the example served on a loopback port, a fresh store and a
// fake clock, with the settles it made.
type proxy struct {
	url     string
	clk     *limitertest.Clock
	settled chan middleware.Event
}

func newProxy(t *testing.T, at time.Time, m *model) *proxy {
	t.Helper()
	store, err := limiter.NewMemoryStore(limiter.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	p := &proxy{clk: limitertest.New(at), settled: make(chan middleware.Event, 64)}
	h, closeAll, err := newHandler(config{
		limiterOpts: []limiter.Option{limiter.WithStore(store), limiter.WithClock(p.clk)},
		model:       m,
		observe: func(e middleware.Event) {
			if e.Outcome == middleware.Settled {
				e.Request = nil
				p.settled <- e
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeAll)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// chat sends a chat request of a prompt, max_tokens and stream.
func (p *proxy) chat(t *testing.T, key, prompt string, maxTokens int, stream bool) *http.Response {
	t.Helper()
	body := fmt.Sprintf(`{"messages":[{"role":"user","content":%q}],"max_tokens":%d,"stream":%v}`, prompt, maxTokens, stream)
	req, err := http.NewRequest(http.MethodPost, p.url+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// settle waits for the next settle.
func (p *proxy) settle(t *testing.T) middleware.Event {
	t.Helper()
	select {
	case e := <-p.settled:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no settle in 10 s")
		return middleware.Event{}
	}
}

// balance is GET /usage: the tokens used in the minute and the month,
// and the month's reset.
type balance struct {
	minute, month int64
	monthReset    time.Time
	requests      int64
}

func (p *proxy) balance(t *testing.T, key string) balance {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.url+"/usage", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	type windows struct {
		Windows []struct {
			Used  int64
			Reset time.Time
		}
	}
	var u struct{ Tokens, Requests windows }
	if err := json.NewDecoder(resp.Body).Decode(&u); err != nil {
		t.Fatal(err)
	}
	if len(u.Tokens.Windows) != 2 || len(u.Requests.Windows) != 1 {
		t.Fatalf("usage %+v, want 2 windows of tokens, 1 of requests", u)
	}
	return balance{u.Tokens.Windows[0].Used, u.Tokens.Windows[1].Used, u.Tokens.Windows[1].Reset, u.Requests.Windows[0].Used}
}

// words returns a prompt of n words of one letter: n tokens to the
// model, 2n bytes to the proxy's estimate (n/2 tokens).
func words(n int) string { return strings.TrimSpace(strings.Repeat("a ", n)) }

// A streamed answer reaches the client event by event, and the call is
// settled at the usage of its last event: the reservation (estimate and
// max_tokens) shows in the headers, the usage in the counts.
func TestStreamSettledAtItsUsage(t *testing.T) {
	p := newProxy(t, time.Date(2026, 12, 3, 10, 0, 10, 0, time.UTC), &model{})
	resp := p.chat(t, "key-lumiere", "tell me about fixed windows", 6, true) // 27 bytes: 7 estimated; 5 words
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got := resp.Header.Get("X-RateLimit-Remaining-Tokens"); got != strconv.Itoa(40_000-7-6) {
		t.Fatalf("X-RateLimit-Remaining-Tokens %s, want %d: the reservation", got, 40_000-7-6)
	}
	if got := resp.Header.Get("RateLimit-Policy"); !strings.Contains(got, `"tokens-1m";q=40000;w=60;qu="acme-tokens"`) {
		t.Fatalf("RateLimit-Policy %s", got)
	}
	var events, usage int
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		switch line := sc.Text(); {
		case strings.Contains(line, `"delta"`):
			events++
		case strings.Contains(line, `"usage"`):
			usage++
			if !strings.Contains(line, `"total_tokens":11`) {
				t.Fatalf("usage %s, want 11 tokens", line)
			}
		}
	}
	if events != 6 || usage != 1 {
		t.Fatalf("%d tokens and %d usage events, want 6 and 1", events, usage)
	}
	if e := p.settle(t); e.Cost != 11 {
		t.Fatalf("settled at %d, want 11", e.Cost)
	}
	if b := p.balance(t, "key-lumiere"); b.minute != 11 || b.month != 11 || b.requests != 1 {
		t.Fatalf("balance %+v, want 11 tokens in the minute and the month, 1 request", b)
	}
}

// An answer whose usage passes its reservation (the estimate fell short)
// is charged in full, past the minute's limit: the key is in debt,
// refused with Retry-After to the minute's end, and admitted once it has
// ended. The refusal charges no request.
func TestDebtRefusesUntilTheMinuteEnds(t *testing.T) {
	p := newProxy(t, time.Date(2026, 12, 3, 10, 0, 15, 0, time.UTC), &model{})
	prompt := words(10_000) // 19,999 bytes: 5,000 estimated; 10,000 words
	for i := range 4 {
		resp := p.chat(t, "key-hudson", prompt, 100, false)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("call %d: %d", i+1, resp.StatusCode)
		}
		if e := p.settle(t); e.Cost != 10_100 {
			t.Fatalf("call %d settled at %d, want 10100", i+1, e.Cost)
		}
	}
	if b := p.balance(t, "key-hudson"); b.minute != 40_400 {
		t.Fatalf("used %d tokens, want 40400: past the limit, in debt", b.minute)
	}
	resp := p.chat(t, "key-hudson", "one more", 10, false)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "45" || resp.Header.Get("X-RateLimit-Remaining-Tokens") != "0" {
		t.Fatalf("in debt: %d Retry-After %q Remaining-Tokens %q, want 429, 45, 0", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("X-RateLimit-Remaining-Tokens"))
	}
	if b := p.balance(t, "key-hudson"); b.requests != 4 {
		t.Fatalf("%d requests counted, want 4: a refused call is charged by none", b.requests)
	}
	p.clk.Advance(45 * time.Second)
	resp = p.chat(t, "key-hudson", "one more", 10, false)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the next minute: %d", resp.StatusCode)
	}
	p.settle(t)
	if b := p.balance(t, "key-hudson"); b.minute != 6 || b.month != 40_406 {
		t.Fatalf("balance %+v, want 6 in the new minute, 40406 in the month", b)
	}
}

// A client that leaves mid-answer is charged the prompt's estimate and
// the tokens streamed until then, not its reservation.
func TestClientLeavingChargedForWhatWasStreamed(t *testing.T) {
	gate := make(chan struct{})
	p := newProxy(t, time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC), &model{gate: gate})
	ctx, cancel := context.WithCancel(context.Background())
	body := fmt.Sprintf(`{"messages":[{"role":"user","content":%q}],"max_tokens":500,"stream":true}`, words(400))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer key-lumiere")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range 3 {
			gate <- struct{}{}
		}
	}()
	sc := bufio.NewScanner(resp.Body)
	for got := 0; got < 3; got++ {
		for sc.Scan() && !strings.Contains(sc.Text(), `"delta"`) {
		}
	}
	cancel() // the client leaves
	resp.Body.Close()
	// 799 bytes: 200 estimated, and 3 tokens streamed.
	if e := p.settle(t); e.Cost != 203 {
		t.Fatalf("settled at %d, want 203: the prompt's estimate and 3 tokens", e.Cost)
	}
}

// A client that leaves before the model has answered anything is charged
// the prompt's estimate: the model may have read it.
func TestClientLeavingBeforeTheAnswer(t *testing.T) {
	arrived := make(chan struct{}, 1)
	p := newProxy(t, time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC), &model{arrived: arrived})
	ctx, cancel := context.WithCancel(context.Background())
	body := fmt.Sprintf(`{"messages":[{"role":"user","content":%q}],"max_tokens":500,"stream":true}`, words(400))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer key-lumiere")
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-arrived
	cancel()
	<-done
	if e := p.settle(t); e.Cost != 200 {
		t.Fatalf("settled at %d, want 200: the prompt's estimate, not the reservation of 700", e.Cost)
	}
}

// Four calls run at once per key; a fifth is refused until one ends, and
// charged nothing.
func TestFourInFlight(t *testing.T) {
	gate := make(chan struct{})
	p := newProxy(t, time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC), &model{gate: gate})
	var open []*http.Response
	for range 4 {
		resp := p.chat(t, "key-lumiere", "hold on", 1, true)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
		open = append(open, resp)
	}
	resp := p.chat(t, "key-lumiere", "hold on", 1, true)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(resp.Header.Get("RateLimit"), `"in-flight";r=0`) {
		t.Fatalf("a fifth at once: %d %q, want 429 with the cap at 0", resp.StatusCode, resp.Header.Get("RateLimit"))
	}
	if b := p.balance(t, "key-lumiere"); b.requests != 4 || b.minute != 4*(2+1) {
		t.Fatalf("balance %+v, want 4 requests and 4 reservations of 3 tokens", b)
	}
	go func() {
		for range open {
			gate <- struct{}{}
		}
	}()
	for _, r := range open {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
		p.settle(t)
	}
	resp = p.chat(t, "key-lumiere", "hold on", 1, false)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("once they ended: %d", resp.StatusCode)
	}
}

// Each customer's month starts at their own midnight on the 1st: at
// 23:30 UTC on 31 January, Paris is in February, New York in January.
func TestMonthInTheCustomersZone(t *testing.T) {
	p := newProxy(t, time.Date(2027, 1, 31, 23, 30, 0, 0, time.UTC), &model{})
	for _, tt := range []struct {
		key   string
		reset time.Time
	}{
		{"key-lumiere", time.Date(2027, 2, 28, 23, 0, 0, 0, time.UTC)}, // 1 March, Paris
		{"key-hudson", time.Date(2027, 2, 1, 5, 0, 0, 0, time.UTC)},    // 1 February, New York
	} {
		if b := p.balance(t, tt.key); !b.monthReset.Equal(tt.reset) {
			t.Errorf("%s: month resets at %v, want %v", tt.key, b.monthReset, tt.reset)
		}
	}
}

// Bad requests are refused before the limits, and charge nothing.
func TestBadRequestsChargeNothing(t *testing.T) {
	p := newProxy(t, time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC), &model{})
	for _, tt := range []struct {
		key, body string
		want      int
	}{
		{"key-nobody", `{"messages":[{"role":"user","content":"hi"}]}`, http.StatusUnauthorized},
		{"key-lumiere", `{"messages":`, http.StatusBadRequest},
		{"key-lumiere", `{"messages":[]}`, http.StatusBadRequest},
		{"key-lumiere", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":99999}`, http.StatusBadRequest},
		{"key-lumiere", fmt.Sprintf(`{"messages":[{"role":"user","content":%q}],"max_tokens":8000}`, strings.Repeat("word ", 30_000)), http.StatusRequestEntityTooLarge},
	} {
		req, _ := http.NewRequest(http.MethodPost, p.url+"/v1/chat/completions", strings.NewReader(tt.body))
		req.Header.Set("Authorization", "Bearer "+tt.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s %s: %d, want %d", tt.key, tt.body, resp.StatusCode, tt.want)
		}
	}
	if b := p.balance(t, "key-lumiere"); b.requests != 0 || b.minute != 0 {
		t.Fatalf("balance %+v, want nothing charged", b)
	}
}
