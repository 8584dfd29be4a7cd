package middleware_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// 60 requests and 40,000 tokens a minute per API key: a call is admitted
// against its max_tokens, charged at once, and settled at the tokens the
// model used, which the handler reports once it knows them.
func ExampleWithReported() {
	clk := limitertest.New(time.Date(2026, 12, 3, 12, 0, 30, 0, time.UTC))
	requests, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(60)), limiter.WithClock(clk))
	if err != nil {
		log.Fatal(err)
	}
	defer requests.Close()
	tokens, err := limiter.New(limiter.MustPolicy("tokens", limiter.PerMinute(40_000)).MustUnit("acme-tokens"), limiter.WithClock(clk))
	if err != nil {
		log.Fatal(err)
	}
	defer tokens.Close()
	apiKey, err := keyfunc.Header("X-API-Key")
	if err != nil {
		log.Fatal(err)
	}
	hw, err := headers.New(headers.WithUnitHeaders())
	if err != nil {
		log.Fatal(err)
	}
	maxTokens := func(r *http.Request) int64 { // the most the call can cost
		n, _ := strconv.ParseInt(r.URL.Query().Get("max_tokens"), 10, 64)
		return n
	}
	mw, err := middleware.New(requests, middleware.WithKey(apiKey),
		middleware.WithReported(tokens, nil, maxTokens), middleware.WithHeaders(hw))
	if err != nil {
		log.Fatal(err)
	}
	model := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		used := int64(1_250) // read from the model's usage
		middleware.Report(r.Context(), "acme-tokens", used)
	})
	r := httptest.NewRequest(http.MethodPost, "/v1/chat?max_tokens=4000", nil)
	r.Header.Set("X-API-Key", "k-1")
	w := httptest.NewRecorder()
	mw(model).ServeHTTP(w, r)
	// The headers go out at the answer's first byte: this handler, which
	// wrote nothing, reported first, so they say what it cost.
	fmt.Println("sent, tokens left:", w.Header().Get("X-RateLimit-Remaining-Tokens"))
	key, err := apiKey(r) // the key the limits count under
	if err != nil {
		log.Fatal(err)
	}
	u, err := tokens.Usage(r.Context(), key)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("settled, tokens used:", u.Windows[0].Used)
	// Output:
	// sent, tokens left: 38750
	// settled, tokens used: 1250
}
