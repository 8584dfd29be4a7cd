package chikey

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/fixedwindow/ratelimit/keyfunc"
)

const proxyPeer = "10.0.0.2:40000"

func TestClientIP(t *testing.T) {
	f, err := ClientIP()
	if err != nil {
		t.Fatalf("ClientIP(): %v", err)
	}
	tests := []struct {
		name       string
		mw         func(http.Handler) http.Handler
		remoteAddr string
		hdr        []string
		want       string // "" means an error wrapping keyfunc.ErrNoKey
	}{
		{"from_remote_addr", middleware.ClientIPFromRemoteAddr, "203.0.113.7:1", nil, "203.0.113.7"},
		{"from_remote_addr_bare", middleware.ClientIPFromRemoteAddr, "203.0.113.7", nil, "203.0.113.7"},
		{"from_remote_addr_ipv6_zone_dropped", middleware.ClientIPFromRemoteAddr, "[fe80::1%eth0]:1", nil, "ip6:fe80::/64"},
		{"from_xff_trusted", middleware.ClientIPFromXFF("10.0.0.0/8"), proxyPeer, []string{"X-Forwarded-For", "198.51.100.9"}, "198.51.100.9"},
		{"from_xff_untrusted_peer", middleware.ClientIPFromXFF("10.0.0.0/8"), "203.0.113.7:1", []string{"X-Forwarded-For", "198.51.100.9"}, "203.0.113.7"},
		{"from_header_ipv6_grouped", middleware.ClientIPFromHeader("X-Real-IP", "10.0.0.0/8"), proxyPeer, []string{"X-Real-IP", "2001:db8:1:2::3"}, "ip6:2001:db8:1:2::/64"},
		{"xff_garbage_no_ip", middleware.ClientIPFromXFF("10.0.0.0/8"), proxyPeer, []string{"X-Forwarded-For", "garbage"}, ""},
		{"no_chi_middleware", func(h http.Handler) http.Handler { return h }, "203.0.113.7:1", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tt.remoteAddr
			for i := 0; i+1 < len(tt.hdr); i += 2 {
				r.Header.Add(tt.hdr[i], tt.hdr[i+1])
			}
			var got string
			var err error
			tt.mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got, err = f(r)
			})).ServeHTTP(httptest.NewRecorder(), r)
			if tt.want == "" {
				if err == nil || !errors.Is(err, keyfunc.ErrNoKey) || got != "" {
					t.Fatalf("RemoteAddr %s, header %q: got key %q, error %v; want no key and an error wrapping ErrNoKey", tt.remoteAddr, tt.hdr, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("RemoteAddr %s, header %q: got key %q, error %v; want %q", tt.remoteAddr, tt.hdr, got, err, tt.want)
			}
		})
	}
}

// TestClientIPErrorSaysWhatToInstall keeps the hint that names the missing
// middleware in the error a misconfigured router gets.
func TestClientIPErrorSaysWhatToInstall(t *testing.T) {
	f, err := ClientIP()
	if err != nil {
		t.Fatalf("ClientIP(): %v", err)
	}
	_, err = f(httptest.NewRequest(http.MethodGet, "/", nil))
	if err == nil || !strings.Contains(err.Error(), "ClientIPFrom*") {
		t.Fatalf("got error %v; want one naming middleware.ClientIPFrom*", err)
	}
}

func TestClientIPOptions(t *testing.T) {
	f, err := ClientIP(keyfunc.WithIPv4Prefix(24))
	if err != nil {
		t.Fatalf("ClientIP(WithIPv4Prefix(24)): %v", err)
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "203.0.113.7:1"
	var got string
	middleware.ClientIPFromRemoteAddr(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, err = f(r)
	})).ServeHTTP(httptest.NewRecorder(), r)
	if err != nil || got != "203.0.113.0/24" {
		t.Fatalf("got key %q, error %v; want 203.0.113.0/24", got, err)
	}
	if _, err := ClientIP(keyfunc.WithIPv4Prefix(7)); !errors.Is(err, keyfunc.ErrInvalidOption) {
		t.Fatalf("ClientIP(WithIPv4Prefix(7)): got error %v, want one wrapping ErrInvalidOption", err)
	}
	// An option that does not concern addresses is refused, not ignored.
	for _, o := range []struct {
		name string
		opt  keyfunc.Option
	}{
		{"WithHashedValues()", keyfunc.WithHashedValues()},
		{"WithMaxKeyLen(100)", keyfunc.WithMaxKeyLen(100)},
	} {
		if _, err := ClientIP(o.opt); !errors.Is(err, keyfunc.ErrInvalidOption) || !strings.Contains(err.Error(), o.name+" does not apply") {
			t.Fatalf("ClientIP(%s): got error %v, want one wrapping ErrInvalidOption saying it does not apply", o.name, err)
		}
	}
}

// TestClientIPMisconfigured: with no ClientIPFrom* middleware before it the
// key function can never resolve, the server's mistake (ErrMisconfigured,
// a 500); chi failing closed on what a client sent is the client's (a
// 400, ErrNoKey alone).
func TestClientIPMisconfigured(t *testing.T) {
	f, err := ClientIP()
	if err != nil {
		t.Fatalf("ClientIP(): %v", err)
	}
	none := func(h http.Handler) http.Handler { return h }
	tests := []struct {
		name             string
		mw               func(http.Handler) http.Handler
		remoteAddr       string
		hdr              []string
		wantMisconfigure bool
	}{
		{"no_chi_middleware", none, "203.0.113.7:1", nil, true},
		// A bare address, as chi's RealIP leaves it, is no client's fault.
		{"no_chi_middleware_bare_remote_addr", none, "203.0.113.7", nil, true},
		{"trusted_proxy_sent_no_xff", middleware.ClientIPFromXFF("10.0.0.0/8"), proxyPeer, nil, true},
		{"xff_garbage_is_the_clients", middleware.ClientIPFromXFF("10.0.0.0/8"), proxyPeer, []string{"X-Forwarded-For", "garbage"}, false},
		{"no_chi_middleware_but_xff_sent", none, "203.0.113.7:1", []string{"X-Forwarded-For", "198.51.100.9"}, false},
		{"unparsable_remote_addr", middleware.ClientIPFromRemoteAddr, "@", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tt.remoteAddr
			for i := 0; i+1 < len(tt.hdr); i += 2 {
				r.Header.Add(tt.hdr[i], tt.hdr[i+1])
			}
			var err error
			tt.mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, err = f(r)
			})).ServeHTTP(httptest.NewRecorder(), r)
			if !errors.Is(err, keyfunc.ErrNoKey) {
				t.Fatalf("RemoteAddr %s, header %q: error %v, want one wrapping ErrNoKey", tt.remoteAddr, tt.hdr, err)
			}
			if got := errors.Is(err, keyfunc.ErrMisconfigured); got != tt.wantMisconfigure {
				t.Fatalf("RemoteAddr %s, header %q: error %v wraps ErrMisconfigured %v, want %v", tt.remoteAddr, tt.hdr, err, got, tt.wantMisconfigure)
			}
		})
	}
}
