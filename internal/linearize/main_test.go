package linearize

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestMain quiets go-redis's own log (a dial refused by a server the
// faults stopped, once a second per pool): what failed is in the
// histories.
func TestMain(m *testing.M) {
	redis.SetLogger(quiet{})
	os.Exit(m.Run())
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
