package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// TestNoticeSaysOnlyWhatHappened: the page says a key was reset only
// on the redirect a reset made, for the person who made it and the key
// reset: ?done=reset written by hand, or the redirect's done on another
// key or for another person, shows nothing.
func TestNoticeSaysOnlyWhatHappened(t *testing.T) {
	fx := newFixture(t, nil, nil)
	w := fx.postForm("/admin/limits/reset", url.Values{"key": {"acme"}, "reason": {"r"}, "csrf_token": {fx.token(t)}, "confirm": {"reset"}})
	done := w.Header().Get("Location")[len("./?key=acme&done="):]
	for _, tc := range []struct {
		name, target string
		hdr          []string
		want         bool
	}{
		{"the_redirect", "?key=acme&done=" + done, nil, true},
		{"forged_by_hand", "?key=acme&done=reset", nil, false},
		{"nothing_done", "?key=acme", nil, false},
		{"another_key", "?key=globex&done=" + done, nil, false},
		{"another_person", "?key=acme&done=" + done, []string{"X-Test-Who", "mallory"}, false},
		{"altered", "?key=acme&done=" + strings.Replace(done, "S2V5", "S2V6", 1), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := fx.get("/admin/limits/"+tc.target, tc.hdr...).Body.String()
			if got := strings.Contains(body, `id="notice"`); got != tc.want {
				t.Fatalf("notice shown %v, want %v:\n%s", got, tc.want, body)
			}
		})
	}
}

// peekHook is a memory store that runs after once, after the next peek
// (a Usage), to move the clock between a refund's read and its refund.
type peekHook struct {
	*limiter.MemoryStore
	after func()
}

func (s *peekHook) Take(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	d, err := s.MemoryStore.Take(ctx, req)
	if f := s.after; req.Peek && f != nil {
		s.after = nil
		f()
	}
	return d, err
}

// TestRefundSaysWhatItReturned: the notice of a refund, on the page and
// in the JSON, says what each window got back: all of it, or nothing for
// a window that ended between the read and the refund.
func TestRefundSaysWhatItReturned(t *testing.T) {
	mem, err := limiter.NewMemoryStore()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	store := &peekHook{MemoryStore: mem}
	fx := newFixture(t, store, nil)
	fx.spend(t, "acme", 3)
	w := fx.postForm("/admin/limits/refund", url.Values{"key": {"acme"}, "policy": {"api"}, "amount": {"2"}, "reason": {"r"}, "csrf_token": {fx.token(t)}})
	page := fx.get("/admin/limits/" + w.Header().Get("Location")[len("./"):]).Body.String()
	if want := `Refund of 2 under &#34;api&#34; applied at 2026-07-31 12:00:10 UTC: 2 returned.`; !strings.Contains(page, want) {
		t.Fatalf("page lacks %s:\n%s", want, page)
	}

	fx.clk.Advance(30 * time.Second) // 12:00:40: the minute has 1 used, the day 1
	token := fx.token(t)
	store.after = func() { fx.clk.Advance(30 * time.Second) }
	w = fx.postJSON("/admin/limits/refund", `{"key":"acme","reason":"r","policy":"api","amount":1}`, token)
	var rep struct {
		Notice string `json:"notice"`
	}
	decode(t, w, &rep)
	if want := `Refund of 1 under "api" applied at 2026-07-31 12:01:10 UTC: returned 0 to 1m0s (its window had ended), 1 to day@Europe/Paris.`; !strings.HasPrefix(rep.Notice, want) {
		t.Fatalf("status %d, notice %q, want %q", w.Code, rep.Notice, want)
	}
	u, err := fx.api.Usage(context.Background(), "acme")
	if err != nil || u.Windows[1].Used != 0 {
		t.Fatalf("day used %+v, %v; want 0", u.Windows, err)
	}
	if w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
}
