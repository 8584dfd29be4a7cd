package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// tokens is the unit the model's tokens are counted in: a unit of the
// service's own, named with a vendor prefix as the draft asks. Its
// headers are X-RateLimit-*-Tokens.
const tokens = "acme-tokens"

// The limits of every API key.
const (
	requestsPerMinute = 60
	tokensPerMinute   = 40_000
	tokensPerMonth    = 1_000_000
	inFlight          = 4
	// defaultMaxTokens is the answer's bound for a request that sets
	// none, and maxMaxTokens the most one may ask.
	defaultMaxTokens = 512
	maxMaxTokens     = 8192
	maxBody          = 1 << 20
)

// plans are what each kind of customer may use: standard, the limits
// above; scale, more tokens and calls in flight.
var plans = map[string]*limiter.Plan{
	"standard": {Name: "standard"},
	"scale": {Name: "scale", Limits: map[string][]int64{"tokens": {4 * tokensPerMinute, 5 * tokensPerMonth}},
		Caps: map[string]int64{"in-flight": 2 * inFlight}},
}

// customers are the API keys, each one's plan and the zone their month
// follows.
var customers = map[string]struct{ plan, zone string }{
	"key-lumiere": {"standard", "Europe/Paris"},
	"key-hudson":  {"standard", "America/New_York"},
	"key-sakura":  {"scale", "Asia/Tokyo"},
}

// config is what newHandler builds the proxy with: the limiters' options
// (a shared store; a test adds its clock), the fake model, and an
// observer of the limits (a test's), if any.
type config struct {
	limiterOpts []limiter.Option
	model       *model
	observe     func(middleware.Event)
}

// newHandler builds the proxy: POST /v1/chat/completions forwarded to the
// model, under each API key's limits, and GET /usage, the key's balance.
// It returns a function that closes the limiters.
func newHandler(c config) (http.Handler, func(), error) {
	var closers []func() error
	closeAll := func() {
		for _, f := range closers {
			_ = f()
		}
	}
	fail := func(err error) (http.Handler, func(), error) {
		closeAll()
		return nil, nil, err
	}
	requests, err := limiter.New(limiter.MustPolicy("requests", limiter.PerMinute(requestsPerMinute)), c.limiterOpts...)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, requests.Close)
	running, err := limiter.NewInFlight("in-flight", inFlight, c.limiterOpts...)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, running.Close)
	hw, err := headers.New(headers.WithDraftHeaders(), headers.WithUnitHeaders())
	if err != nil {
		return fail(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(&url.URL{Scheme: "http", Host: "model.internal"})
			pr.Out.Header.Del("Authorization") // the customer's key stays here
		},
		Transport:      handlerTransport{c.model},
		ModifyResponse: tapUsage,
		ErrorHandler:   upstreamFailed,
		FlushInterval:  -1, // every token as it comes
	}
	// One limit of tokens for every customer (a minute, and a month from
	// the 1st at midnight), in the customer's zone and under their plan's
	// limits (WithPlans): UTC stands for every zone.
	p, err := limiter.NewPolicy("tokens", limiter.PerMinute(tokensPerMinute), limiter.PerMonthIn(tokensPerMonth, time.UTC))
	if err != nil {
		return fail(err)
	}
	if p, err = p.WithUnit(tokens); err != nil {
		return fail(err)
	}
	spent, err := limiter.New(p, c.limiterOpts...)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, spent.Close)
	opts := []middleware.Option{
		middleware.WithKey(apiKey),
		middleware.WithReported(spent, nil, reservation),
		middleware.WithInFlight(running, nil),
		middleware.WithHeaders(hw),
		middleware.WithPlans(func(r *http.Request) (*limiter.Plan, string, error) {
			acct := customers[bearer(r)] // known: checked before
			return plans[acct.plan], acct.zone, nil
		}),
	}
	if c.observe != nil {
		opts = append(opts, middleware.WithObserver(c.observe))
	}
	mw, err := middleware.New(requests, opts...)
	if err != nil {
		return fail(err)
	}
	limited := readChat(mw(proxy))
	mux := http.NewServeMux()
	mux.Handle("POST /v1/chat/completions", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := customers[bearer(r)]; !ok {
			http.Error(w, "unknown API key", http.StatusUnauthorized)
			return
		}
		limited.ServeHTTP(w, r)
	}))
	mux.HandleFunc("GET /usage", func(w http.ResponseWriter, r *http.Request) {
		key := bearer(r)
		acct, ok := customers[key]
		if !ok {
			http.Error(w, "unknown API key", http.StatusUnauthorized)
			return
		}
		l, err := spent.For(plans[acct.plan], acct.zone)
		var used limiter.Usage
		if err == nil {
			used, err = l.Usage(r.Context(), key)
		}
		if err != nil {
			http.Error(w, "usage unavailable", http.StatusServiceUnavailable)
			return
		}
		calls, err := requests.Usage(r.Context(), key)
		if err != nil {
			http.Error(w, "usage unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(struct {
			Plan     string        `json:"plan"`
			Zone     string        `json:"zone"`
			Tokens   limiter.Usage `json:"tokens"`
			Requests limiter.Usage `json:"requests"`
		}{acct.plan, acct.zone, used, calls})
	})
	return mux, closeAll, nil
}

// bearer returns the API key of r's Authorization: Bearer header, or "".
func bearer(r *http.Request) string {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return key
}

// apiKey keys every limit by the API key.
func apiKey(r *http.Request) (string, error) {
	if key := bearer(r); key != "" {
		return key, nil
	}
	return "", fmt.Errorf("%w: no Authorization: Bearer", keyfunc.ErrNoKey)
}

// chatKey is the context key of a request's parsed *chatRequest.
type chatKey struct{}

// readChat reads and checks the chat request's body, before the limits:
// the reservation is estimated from it, and a body that cannot be served
// is refused without charge (400). The model gets the body as it came,
// its max_tokens set.
func readChat(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		var req chatRequest
		if err == nil {
			err = json.Unmarshal(body, &req)
		}
		switch {
		case err != nil:
			http.Error(w, "body: not a chat request", http.StatusBadRequest)
			return
		case len(req.Messages) == 0:
			http.Error(w, "body: no messages", http.StatusBadRequest)
			return
		case req.MaxTokens < 0 || req.MaxTokens > maxMaxTokens:
			http.Error(w, fmt.Sprintf("body: max_tokens must be 1 to %d", maxMaxTokens), http.StatusBadRequest)
			return
		case req.MaxTokens == 0:
			req.MaxTokens = defaultMaxTokens
			if body, err = json.Marshal(req); err != nil {
				http.Error(w, "body: not a chat request", http.StatusBadRequest)
				return
			}
		}
		if n, most := req.promptEstimate()+req.MaxTokens, minuteTokens(r); n > most {
			// Never admitted, whatever the wait: no Retry-After helps.
			http.Error(w, fmt.Sprintf("body: the prompt and max_tokens may cost %d tokens, more than the %d a minute allows", n, most), http.StatusRequestEntityTooLarge)
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), chatKey{}, &req))
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// minuteTokens returns the tokens a minute the plan of r's customer
// allows.
func minuteTokens(r *http.Request) int64 {
	if l := plans[customers[bearer(r)].plan].Limits["tokens"]; len(l) > 0 {
		return l[0]
	}
	return tokensPerMinute
}

// reservation is what a chat request is admitted at: its prompt, as
// estimated, and the longest answer it allows. The settle returns what
// the answer did not use, and charges what the estimate missed.
func reservation(r *http.Request) int64 {
	req := r.Context().Value(chatKey{}).(*chatRequest)
	return req.promptEstimate() + req.MaxTokens
}

// tapUsage reads the model's answer as it passes to the client and
// reports its tokens (middleware.Report): the usage the model states, in
// the last event of a stream or in the body of an answer; for a stream
// that ends without one (the client left), the prompt's estimate and the
// tokens streamed until then. An answer that is no success is reported
// as the prompt's estimate alone: the model read it.
func tapUsage(resp *http.Response) error {
	ctx := resp.Request.Context()
	req, _ := ctx.Value(chatKey{}).(*chatRequest)
	if req == nil {
		return errors.New("llmproxy: answer to no chat request")
	}
	t := &usageTap{ReadCloser: resp.Body, ctx: ctx, prompt: req.promptEstimate(),
		stream: strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")}
	if resp.StatusCode != http.StatusOK {
		t.report(t.prompt)
	}
	resp.Body = t
	return nil
}

// upstreamFailed answers a call the model did not answer (its client
// left first, or the model failed): the model may have read the prompt,
// so the call is charged the prompt's estimate, not its reservation.
func upstreamFailed(w http.ResponseWriter, r *http.Request, err error) {
	if req, ok := r.Context().Value(chatKey{}).(*chatRequest); ok {
		middleware.Report(r.Context(), tokens, req.promptEstimate())
	}
	if r.Context().Err() != nil {
		return // no one to answer
	}
	http.Error(w, "model unavailable", http.StatusBadGateway)
}

// A usageTap is the body of the model's answer, read by the proxy for its
// client: it finds the usage in what passes, and reports it once.
type usageTap struct {
	io.ReadCloser
	ctx      context.Context
	prompt   int64
	stream   bool
	line     []byte // a stream's line so far; a JSON answer's body
	deltas   int64  // the tokens streamed
	once     sync.Once
	reported bool
}

func (t *usageTap) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	t.scan(p[:n])
	if err == io.EOF && !t.stream {
		var a struct{ Usage *usage }
		if json.Unmarshal(t.line, &a) == nil && a.Usage != nil {
			t.report(a.Usage.TotalTokens)
		}
	}
	return n, err
}

// scan reads b, the next bytes of the answer: a stream line by line, a
// JSON answer kept whole, up to maxBody.
func (t *usageTap) scan(b []byte) {
	if !t.stream {
		if len(t.line)+len(b) <= maxBody {
			t.line = append(t.line, b...)
		}
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			t.line = append(t.line, b...)
			return
		}
		t.line = append(t.line, b[:i]...)
		t.event(t.line)
		t.line, b = t.line[:0], b[i+1:]
	}
}

// event reads one line of a stream: a token, or the usage.
func (t *usageTap) event(line []byte) {
	data, ok := bytes.CutPrefix(line, []byte("data: "))
	if !ok || bytes.Equal(data, []byte("[DONE]")) {
		return
	}
	var e struct {
		Choices []json.RawMessage
		Usage   *usage
	}
	if json.Unmarshal(data, &e) != nil {
		return
	}
	if e.Usage != nil {
		t.report(e.Usage.TotalTokens)
		return
	}
	t.deltas += int64(len(e.Choices))
}

// report reports n tokens, once.
func (t *usageTap) report(n int64) {
	t.once.Do(func() {
		t.reported = true
		middleware.Report(t.ctx, tokens, n)
	})
}

// Close reports, for an answer that stated no usage, what it can tell:
// the prompt and the tokens streamed.
func (t *usageTap) Close() error {
	if !t.reported {
		t.report(t.prompt + t.deltas)
	}
	return t.ReadCloser.Close()
}
