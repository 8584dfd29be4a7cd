package verdict

import (
	"strings"
	"testing"

	"github.com/fixedwindow/ratelimit/limiter"
)

type noPolicy struct{}

func (noPolicy) Policy() *limiter.Policy { return nil }

func TestCheck(t *testing.T) {
	ok := limiter.MustNew(limiter.MustPolicy("api", limiter.PerMinute(1)))
	defer ok.Close()
	tests := []struct {
		name string
		l    Policied
		want string // "" for no error
	}{
		{"nil", nil, "limiter is nil"},
		{"typed_nil", (*limiter.Limiter)(nil), "limiter is a nil *limiter.Limiter"},
		{"no_policy", noPolicy{}, "limiter has no policy"},
		{"ok", ok, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.l)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Check = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Check = %v, want an error saying %q", err, tt.want)
			}
		})
	}
}
