package keyfunc

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
)

// BenchmarkKey measures each key function on the path every request takes,
// against the baseline of the seed material: net.SplitHostPort and the
// host string as the key.
func BenchmarkKey(b *testing.B) {
	const n = 10000
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = "10." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255) + ".7:" + strconv.Itoa(40000+i%1000)
	}
	v6 := make([]string, n)
	for i := range v6 {
		v6[i] = "[2001:db8:" + strconv.FormatInt(int64(i), 16) + "::" + strconv.FormatInt(int64(i%97+1), 16) + "]:443"
	}
	reqs := func(remote []string, hdr ...string) []*http.Request {
		rs := make([]*http.Request, len(remote))
		for i, a := range remote {
			rs[i] = &http.Request{RemoteAddr: a, Header: http.Header{}}
			for j := 0; j+1 < len(hdr); j += 2 {
				rs[i].Header.Add(hdr[j], hdr[j+1])
			}
		}
		return rs
	}
	run := func(name string, f Func, rs []*http.Request) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := f(rs[i%len(rs)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
	run("baseline_split_host_port", func(r *http.Request) (string, error) {
		h, _, err := net.SplitHostPort(r.RemoteAddr)
		return h, err
	}, reqs(addrs))
	host, _ := RemoteHost()
	run("remote_host_v4", host, reqs(addrs))
	run("remote_host_v6", host, reqs(v6))
	bare := make([]string, n) // as chi's RealIP leaves RemoteAddr
	for i, a := range addrs {
		bare[i] = a[:strings.LastIndexByte(a, ':')]
	}
	run("remote_host_v4_bare", host, reqs(bare))
	xff, _ := TrustedProxy(XForwardedFor, []string{"10.0.0.0/8"})
	run("trusted_xff_2_hops", xff, reqs(addrs, "X-Forwarded-For", "198.51.100.9, 10.1.1.1"))
	fwd, _ := TrustedProxy(Forwarded, []string{"10.0.0.0/8"})
	run("trusted_forwarded_2_hops", fwd, reqs(addrs, "Forwarded", `for=198.51.100.9;proto=https, for="10.1.1.1"`))
	hdr, _ := Header("X-API-Key")
	run("header", hdr, reqs(addrs[:1], "X-API-Key", "k-1234567890"))
	hashed, _ := Header("X-API-Key", WithHashedValues())
	run("header_hashed", hashed, reqs(addrs[:1], "X-API-Key", "k-1234567890"))
}

// BenchmarkRouteKey measures the route key on a router of 50 routes: in
// chi, where the pattern is asked of the root router (Routes.Find) before
// routing, and inside a ServeMux, where r.Pattern is read (what
// RoutePattern did everywhere before it asked chi), and around one.
func BenchmarkRouteKey(b *testing.B) {
	ok := func(http.ResponseWriter, *http.Request) {}
	root := chi.NewRouter()
	mux := http.NewServeMux()
	for i := range 10 {
		res := "/res" + strconv.Itoa(i)
		root.Get(res, ok)
		mux.HandleFunc("GET /api/v1"+res, ok)
		mux.HandleFunc("GET /api/v1"+res+"/{id}", ok)
		mux.HandleFunc("POST /api/v1"+res+"/{id}", ok)
		mux.HandleFunc("GET /api/v1"+res+"/{id}/items", ok)
	}
	root.Route("/api/v1", func(r chi.Router) {
		for i := range 10 {
			r.Route("/res"+strconv.Itoa(i), func(r chi.Router) {
				r.Get("/", ok)
				r.Get("/{id}", ok)
				r.Post("/{id}", ok)
				r.Get("/{id}/items", ok)
			})
		}
	})
	chiReq := func(path string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		rctx := chi.NewRouteContext()
		rctx.Routes = root // as in the root r.Use, before routing
		return r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, rctx))
	}
	muxReq := func(path string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		_, r.Pattern = mux.Handler(r)
		return r
	}
	run := func(name string, f Func, r *http.Request, want string) {
		b.Run(name, func(b *testing.B) {
			if k, err := f(r); err != nil || k != want {
				b.Fatalf("got key %q, error %v; want %q", k, err, want)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := f(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	run("chi_flat", RoutePattern(), chiReq("/res7"), "route:/res7")
	run("chi_nested_2_routers", RoutePattern(), chiReq("/api/v1/res7/42/items"), "route:/api/v1/res7/{id}/items")
	run("chi_nested_endpoint", Endpoint(), chiReq("/api/v1/res7/42/items"), "route:GET /api/v1/res7/{id}/items")
	run("servemux_inside_r_pattern", RoutePattern(), muxReq("/api/v1/res7/42/items"), "route:GET /api/v1/res7/{id}/items")
	around, _ := ServeMuxPattern(mux)
	run("servemux_around", around, httptest.NewRequest(http.MethodGet, "/api/v1/res7/42/items", nil), "route:GET /api/v1/res7/{id}/items")
}
