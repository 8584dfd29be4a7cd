package console_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fixedwindow/ratelimit/middleware/console"
)

// TestStreamAsksAgainEveryMinute: an open live view asks Authorize
// again once a minute, not more, and ends when it refuses, with an
// event "forbidden" naming the key.
func TestStreamAsksAgainEveryMinute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var asked atomic.Int64
		var revoked atomic.Bool
		fx := newFixture(t, nil, func(c *console.Config) {
			c.Authorize = func(*http.Request) (string, console.Access) {
				asked.Add(1)
				if revoked.Load() {
					return admin, 0
				}
				return admin, console.Change
			}
		})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan *httptestRecorder, 1)
		go func() {
			done <- fx.serve(newRequest(http.MethodGet, "/admin/limits/events?key=acme").WithContext(ctx), nil)
		}()
		time.Sleep(59 * time.Second)
		synctest.Wait()
		if n := asked.Load(); n != 1 {
			t.Fatalf("asked %d times in 59 s, want 1", n)
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := asked.Load(); n != 2 {
			t.Fatalf("asked %d times in 61 s, want 2", n)
		}
		revoked.Store(true)
		time.Sleep(time.Minute)
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("the stream goes on after Authorize refused it")
		}
		ev := fx.takeEvents()
		if last := ev[len(ev)-1]; last.Action != "forbidden" || last.Key != "acme" || last.Who != admin {
			t.Fatalf("last event %+v, want forbidden of acme's stream", last)
		}
	})
}
