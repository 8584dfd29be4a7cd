package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/fixedwindow/ratelimit/internal/storetest"
)

// completeHTTP posts a prompt of words words to /api/complete.
func completeHTTP(h http.Handler, apiKey string, words int) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/api/complete", strings.NewReader(strings.Repeat("word ", words)))
	r.Header.Set("X-API-Key", apiKey)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestTokensSettledAfterTheAnswer: a starter customer's completions are
// admitted against a reservation of 1 token and charged, once answered,
// the 800 tokens the model reports: the third takes the day's 2,000 into
// debt (2,400), and the fourth is refused until Paris's midnight.
func TestTokensSettledAfterTheAnswer(t *testing.T) {
	paris := storetest.Zone(t, "Europe/Paris")
	s, clk := newTestService(t, time.Date(2026, 12, 3, 10, 0, 0, 0, paris))
	for i, want := range []int{200, 200, 200, 429} {
		if w := completeHTTP(s.http, "key-lumiere", 400); w.Code != want {
			t.Fatalf("completion %d: %d, want %d", i+1, w.Code, want)
		}
		clk.Advance(time.Minute) // under the starter's 5 a minute
	}
	if u := usageOf(t, s.http, "key-lumiere"); u.Rates.Windows[0].Used != 3 {
		t.Fatalf("requests used: %+v, want 3 (the refusal charged nothing)", u.Rates)
	}
	w := getPath(s.http, "key-lumiere", "/usage")
	if !strings.Contains(w.Body.String(), `"window":"day@Europe/Paris","limit":2000,"used":2400,`) {
		t.Fatalf("usage %s: want 2,400 tokens used of the day's 2,000", w.Body)
	}
	clk.Set(time.Date(2026, 12, 4, 0, 0, 0, 0, paris))
	if w := completeHTTP(s.http, "key-lumiere", 400); w.Code != http.StatusOK {
		t.Fatalf("at Paris's midnight: %d, want 200", w.Code)
	}
}

// TestGRPCDoorSameUsage: the gRPC door applies the same plans, in the
// same zones, to the same usage as HTTP: a starter customer who spent
// the day's 5 requests over HTTP is refused over gRPC, with the reset at
// Paris's midnight; a pro customer's gRPC completion is admitted and its
// tokens show in the HTTP /usage.
func TestGRPCDoorSameUsage(t *testing.T) {
	paris := storetest.Zone(t, "Europe/Paris")
	s, clk := newTestService(t, time.Date(2026, 12, 3, 10, 0, 0, 0, paris))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.grpc.Serve(lis) }()
	t.Cleanup(s.grpc.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	call := func(apiKey, prompt string) (metadata.MD, error) {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "x-api-key", apiKey)
		var trailer metadata.MD
		err := conn.Invoke(ctx, "/plans.Model/Complete", wrapperspb.String(prompt), new(wrapperspb.StringValue), grpc.Trailer(&trailer))
		return trailer, err
	}
	for range 5 {
		if w := get(s.http, "key-lumiere"); w.Code != http.StatusOK {
			t.Fatalf("HTTP quote: %d", w.Code)
		}
		clk.Advance(time.Minute)
	}
	trailer, err := call("key-lumiere", "hello")
	midnight := time.Date(2026, 12, 4, 0, 0, 0, 0, paris).Unix()
	if status.Code(err) != codes.ResourceExhausted || strings.Join(trailer.Get("x-ratelimit-reset"), "") != strconv.FormatInt(midnight, 10) {
		t.Fatalf("gRPC after the day's 5 over HTTP: %v, trailer %v; want RESOURCE_EXHAUSTED, reset %d", err, trailer, midnight)
	}
	if _, err := call("key-nullarbor", "one two three"); err != nil {
		t.Fatalf("pro over gRPC: %v", err)
	}
	w := getPath(s.http, "key-nullarbor", "/usage")
	if !strings.Contains(w.Body.String(), `"limit":100000,"used":6,`) || !strings.Contains(w.Body.String(), `"window":"day@Australia/Eucla","limit":500,"used":1,`) {
		t.Fatalf("usage after a gRPC completion: %s; want 6 tokens and 1 request on pro's limits in Eucla", w.Body)
	}
}
