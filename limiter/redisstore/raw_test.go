package redisstore

import (
	"errors"
	"testing"
)

func TestParseRaw(t *testing.T) {
	one := func(int) int { return 1 }
	tests := []struct {
		name string
		raw  string
		n    int
		want []result
		err  error
	}{
		{"one_request", "*5\r\n:0\r\n:0\r\n:1\r\n:1790000000000\r\n:7\r\n", 1,
			[]result{{allowed: true, at: 1790000000000, counts: [4]int64{7}}}, nil},
		{"two_requests_negative_count", "*8\r\n:12\r\n:345\r\n:0\r\n:5\r\n:-1\r\n:1\r\n:6\r\n:9007199254740992\r\n", 2,
			[]result{{at: 5, sec: 12, usec: 345, counts: [4]int64{-1}}, {allowed: true, at: 6, sec: 12, usec: 345, counts: [4]int64{1 << 53}}}, nil},
		{"count_mismatch", "*4\r\n:0\r\n:0\r\n:1\r\n:5\r\n", 1, nil, ErrBadReply},
		{"not_an_array", ":1\r\n", 1, nil, ErrBadReply},
		{"bulk_string_element", "*5\r\n:0\r\n:0\r\n$1\r\n1\r\n:5\r\n:7\r\n", 1, nil, ErrBadReply},
		{"trailing_bytes", "*5\r\n:0\r\n:0\r\n:1\r\n:5\r\n:7\r\nx", 1, nil, ErrBadReply},
		{"truncated", "*5\r\n:0\r\n:0\r\n:1\r\n:5\r\n:7", 1, nil, ErrBadReply},
		{"huge_number", "*5\r\n:0\r\n:0\r\n:1\r\n:5\r\n:12345678901234567890\r\n", 1, nil, ErrBadReply},
		{"empty", "", 1, nil, ErrBadReply},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := make([]result, tc.n)
			err := parseRaw([]byte(tc.raw), one, out)
			if !errors.Is(err, tc.err) {
				t.Fatalf("parseRaw(%q): got error %v, want %v", tc.raw, err, tc.err)
			}
			if err != nil {
				return
			}
			for i := range out {
				if out[i] != tc.want[i] {
					t.Fatalf("parseRaw(%q)[%d]: got %+v, want %+v", tc.raw, i, out[i], tc.want[i])
				}
			}
		})
	}
}

// FuzzParseRaw: no input panics the parser, and what it accepts has the
// announced shape.
func FuzzParseRaw(f *testing.F) {
	f.Add([]byte("*5\r\n:0\r\n:0\r\n:1\r\n:1790000000000\r\n:7\r\n"))
	f.Add([]byte("*8\r\n:12\r\n:345\r\n:0\r\n:5\r\n:-1\r\n:1\r\n:6\r\n:9\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		out := make([]result, 2)
		_ = parseRaw(b, func(int) int { return 1 }, out[:1])
		_ = parseRaw(b, func(int) int { return 1 }, out)
	})
}
