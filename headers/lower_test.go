package headers

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fixedwindow/ratelimit/limiter"
)

// TestLower: the lower-case Writer writes the very values of the Writer it
// came from, under the same names in lower case, on an admission and a
// denial, with and without the draft fields and renamed fields.
func TestLower(t *testing.T) {
	p := limiter.MustPolicy("api", limiter.PerMinute(10))
	for _, tt := range []struct {
		name string
		opts []Option
	}{
		{"default", nil},
		{"draft", []Option{WithDraftHeaders()}},
		{"draft_only_renamed", []Option{WithDraftHeaders(), WithoutLegacyHeaders(), WithNames(Names{RateLimit: "X-Quota"})}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWriter(t, tt.opts...)
			lw := w.Lower()
			l, _ := newLimiter(t, p, noon30)
			for _, take := range []int{1, 10} {
				d := allow(t, l, take)
				want, got := http.Header{}, map[string][]string{}
				w.Write(want, &d)
				lw.Write(got, &d)
				if len(got) != len(want) || len(got) == 0 {
					t.Fatalf("allowed=%v: lower wrote %v, want the fields of %v", d.Allowed, got, want)
				}
				for name, vs := range want {
					if g := got[strings.ToLower(name)]; len(g) != 1 || g[0] != vs[0] {
						t.Fatalf("allowed=%v: %s = %q, want %q", d.Allowed, strings.ToLower(name), g, vs)
					}
				}
			}
			if lw.Names() == w.Names() || strings.ToLower(lw.Names().RateLimit) != lw.Names().RateLimit {
				t.Fatalf("Names: lower %+v, canonical %+v", lw.Names(), w.Names())
			}
		})
	}
}
