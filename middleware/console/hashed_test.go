package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/fixedwindow/ratelimit/middleware/console"
)

// TestListRefusesHashedKeys: a lister that returns the hashed keys
// redisstore.WithKeyHash stores (as a SCAN of Redis would) gets an error
// that says so, on the JSON listing and on the page, and no hash is
// listed as if it could be looked up.
func TestListRefusesHashedKeys(t *testing.T) {
	fx := newFixture(t, nil, func(c *console.Config) {
		c.List = func(context.Context, string) ([]string, error) {
			return []string{"cust-1", "hmac:3q2-7wAAAAAAAAAAAAAAAA"}, nil
		}
	})
	w := fx.get("/admin/limits/keys?prefix=")
	if body := w.Body.String(); w.Code == http.StatusOK || !strings.Contains(body, "hashed keys") || strings.Contains(body, "cust-1") {
		t.Fatalf("keys listed by a lister of hashes: %d %s; want an error saying the keys are hashed", w.Code, body)
	}
	page := fx.get("/admin/limits/?prefix=c").Body.String()
	if !strings.Contains(page, "hashed keys") || strings.Contains(page, `?key=hmac:`) {
		t.Fatalf("the page's listing of hashes:\n%s", page)
	}
}
