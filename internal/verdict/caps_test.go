package verdict

import (
	"context"
	"net/http"
	"reflect"
	"testing"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/limiter"
)

// TestWriteAllCapsAlone: the caps of a request no rate decided are
// described by the draft fields alone, the outermost door's first, and
// not at all without them.
func TestWriteAllCapsAlone(t *testing.T) {
	held := func(name string, max int64) HeldCaps {
		f, err := limiter.NewInFlight(name, max)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		d, release, err := f.Acquire(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(release)
		var hc HeldCaps
		hc.add(f, "k", release, &d)
		return hc
	}
	outer := &CapsList{Caps: held("global", 100)}
	inner := &CapsList{Prev: outer, Caps: held("exports", 5)}

	draft, err := headers.New(headers.WithDraftHeaders())
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	WriteAll(draft, h, nil, nil, inner)
	want := http.Header{
		"Ratelimit":        {`"global";r=99, "exports";r=4`},
		"Ratelimit-Policy": {`"global";q=100;qu="concurrent-requests", "exports";q=5;qu="concurrent-requests"`},
	}
	if !reflect.DeepEqual(h, want) {
		t.Fatalf("headers %v, want %v", h, want)
	}

	legacy, err := headers.New()
	if err != nil {
		t.Fatal(err)
	}
	h = http.Header{}
	WriteAll(legacy, h, nil, nil, inner)
	if len(h) != 0 {
		t.Fatalf("caps alone without draft fields wrote %v, want nothing", h)
	}
}
