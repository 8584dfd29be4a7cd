package keyfunc

import (
	"testing"

	"github.com/fixedwindow/ratelimit/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }
