package keyfunc

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
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
