package sim

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/fixedwindow/ratelimit/internal/testfixture"
)

// TestSharedTraffic replays the patterns of the repository's top-level
// testdata/traffic, which the limiter's own tests replay too, through the
// lab's parser and models: each model named in a file's expect line must
// admit the count given there, and the parser must read the same requests
// as the shared reader.
func TestSharedTraffic(t *testing.T) {
	testfixture.EachTraffic(t, func(t *testing.T, file string, tr *testfixture.Traffic) {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		p, err := Parse(f, tr.Name)
		if err != nil {
			t.Fatalf("Parse(%s): %v", file, err)
		}
		if len(p.Requests) != len(tr.Requests) {
			t.Fatalf("Parse(%s): got %d requests, want %d", file, len(p.Requests), len(tr.Requests))
		}
		for i, r := range p.Requests {
			if r.At != tr.Requests[i].At || r.Key != tr.Requests[i].Key {
				t.Fatalf("Parse(%s): request %d is %v %q, want %v %q", file, i, r.At, r.Key, tr.Requests[i].At, tr.Requests[i].Key)
			}
		}
		var names []string
		for name := range tr.Admitted {
			names = append(names, name)
		}
		slices.Sort(names)
		results, err := Simulate(context.Background(), p, Config{Limit: tr.Limit, Window: tr.Window}, names)
		if err != nil {
			t.Fatalf("Simulate(%s, %v): %v", tr.Name, names, err)
		}
		for _, r := range results {
			if want := tr.Admitted[r.Limiter]; r.Allowed != want {
				t.Errorf("%s: %s admitted %d, want %d (its expect line)", tr.Name, r.Limiter, r.Allowed, want)
			}
		}
	})
}
