package keyfunc

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// request returns a GET request from remoteAddr with the given header
// lines, each a name and a value; a name given twice becomes two lines.
func request(remoteAddr string, hdr ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = remoteAddr
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	return r
}

// checkKey runs f on r and compares with want; want "" means an error
// wrapping ErrNoKey is expected.
func checkKey(t *testing.T, f Func, r *http.Request, want string) {
	t.Helper()
	got, err := f(r)
	if want == "" {
		if err == nil {
			t.Fatalf("got key %q, nil error; want an error wrapping ErrNoKey", got)
		}
		if !errors.Is(err, ErrNoKey) {
			t.Fatalf("got error %v; want one wrapping ErrNoKey", err)
		}
		if got != "" {
			t.Fatalf("got key %q with error %v; want no key", got, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("got error %v; want key %q", err, want)
	}
	if got != want {
		t.Fatalf("got key %q, want %q", got, want)
	}
}

// must returns a function that fails t when a constructor fails, so
// that must(t)(RemoteHost()) reads as one expression.
func must(t testing.TB) func(Func, error) Func {
	return func(f Func, err error) Func {
		t.Helper()
		if err != nil {
			t.Fatalf("constructor: %v", err)
		}
		return f
	}
}

func contextWith(r *http.Request, k, v any) context.Context {
	return context.WithValue(r.Context(), k, v)
}
