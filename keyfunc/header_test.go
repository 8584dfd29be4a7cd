package keyfunc

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestHeader(t *testing.T) {
	long := strings.Repeat("k", 300)
	tests := []struct {
		name string
		opts []Option
		hdr  []string
		want string
	}{
		{"value", nil, []string{"X-API-Key", "k-123"}, "hdr:X-Api-Key:k-123"},
		{"spaces_trimmed", nil, []string{"X-API-Key", "  k-123 "}, "hdr:X-Api-Key:k-123"},
		{"value_with_colons_kept", nil, []string{"X-API-Key", "a:b:c"}, "hdr:X-Api-Key:a:b:c"},
		{"missing", nil, nil, ""},
		{"other_header_only", nil, []string{"X-Other", "v"}, ""},
		{"empty", nil, []string{"X-API-Key", ""}, ""},
		{"blank", nil, []string{"X-API-Key", "   "}, ""},
		{"repeated_is_ambiguous", nil, []string{"X-API-Key", "a", "X-API-Key", "b"}, ""},
		{"long_value_hashed", nil, []string{"X-API-Key", long}, hashKey("hdr:X-Api-Key:" + long)},
		{"hashed_on_request", []Option{WithHashedValues()}, []string{"X-API-Key", "k-123"}, hashKey("hdr:X-Api-Key:k-123")},
		{"bound_raised", []Option{WithMaxKeyLen(400)}, []string{"X-API-Key", long}, "hdr:X-Api-Key:" + long},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := must(t)(Header("x-api-key", tt.opts...))
			checkKey(t, f, request("192.0.2.1:1", tt.hdr...), tt.want)
		})
	}
}

func TestHeaderBadName(t *testing.T) {
	for _, name := range []string{"", "X API Key", "X-Key:", "X-Ké"} {
		t.Run(name, func(t *testing.T) {
			if _, err := Header(name); !errors.Is(err, ErrInvalidOption) {
				t.Fatalf("Header(%q): got error %v, want ErrInvalidOption", name, err)
			}
		})
	}
}

func TestPrincipal(t *testing.T) {
	type ctxUser struct{}
	accessor := func(r *http.Request) (string, bool) {
		u, ok := r.Context().Value(ctxUser{}).(string)
		return u, ok
	}
	f := must(t)(Principal(accessor))
	tests := []struct {
		name string
		user any
		want string
	}{
		{"user", "42", "user:42"},
		{"absent", nil, ""},
		{"empty_id", "", ""},
		{"long_id_hashed", strings.Repeat("u", 300), hashKey("user:" + strings.Repeat("u", 300))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := request("192.0.2.1:1")
			if tt.user != nil {
				r = r.WithContext(contextWith(r, ctxUser{}, tt.user))
			}
			checkKey(t, f, r, tt.want)
		})
	}
	if _, err := Principal(nil); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("Principal(nil): got error %v, want ErrInvalidOption", err)
	}
}

// TestHeaderKeyIsHeaders: HeaderKey gives a value the key Header gives a
// request carrying it, under the same options, and checks its arguments
// as Header does, naming itself.
func TestHeaderKeyIsHeaders(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"default", nil},
		{"hashed_values", []Option{WithHashedValues()}},
		{"max_key_len_80", []Option{WithMaxKeyLen(80)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := Must(Header("x-api-key", tc.opts...))
			key, err := HeaderKey("x-api-key", tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range []string{"k-123", strings.Repeat("k", 90), strings.Repeat("k", 300)} {
				want, err := h(&http.Request{Header: http.Header{"X-Api-Key": {v}}})
				if got := key(v); err != nil || got != want {
					t.Errorf("HeaderKey(%.10q...) = %q, want Header's %q (%v)", v, got, want, err)
				}
			}
		})
	}
	for _, tc := range []struct {
		name   string
		header string
		opts   []Option
	}{
		{"bad_name", "x api key", nil},
		{"address_option", "x-api-key", []Option{WithIPv4Prefix(24)}},
	} {
		if _, err := HeaderKey(tc.header, tc.opts...); !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "HeaderKey") {
			t.Errorf("%s: HeaderKey: %v, want ErrInvalidOption naming HeaderKey", tc.name, err)
		}
	}
}
