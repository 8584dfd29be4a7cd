package redisstore

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/fixedwindow/ratelimit/limiter"
)

// TestParseReplyRaw reads replies as the batcher gets them: raw RESP.
// Replies with Redis's clock (server) start with TIME, and a verdict
// below -2 is followed by the instant decided at.
func TestParseReplyRaw(t *testing.T) {
	one := func(int) int { return 1 }
	tests := []struct {
		name   string
		raw    string
		n      int
		server bool
		want   []result
		err    error
	}{
		{"one_request", "*5\r\n:0\r\n:0\r\n:-4\r\n:1790000000000\r\n:7\r\n", 1, true,
			[]result{{allowed: true, at: 1790000000000, counts: [4]int64{7}}}, nil},
		{"two_requests_negative_count", "*8\r\n:12\r\n:345\r\n:-3\r\n:5\r\n:-1\r\n:-4\r\n:6\r\n:9007199254740992\r\n", 2, true,
			[]result{{at: 5, sec: 12, usec: 345, counts: [4]int64{-1}}, {allowed: true, at: 6, sec: 12, usec: 345, counts: [4]int64{1 << 53}}}, nil},
		{"decided_at_time", "*6\r\n:12\r\n:345678\r\n:1\r\n:3\r\n:0\r\n:4\r\n", 2, true,
			[]result{{allowed: true, at: 12345, sec: 12, usec: 345678, counts: [4]int64{3}}, {at: 12345, sec: 12, usec: 345678, counts: [4]int64{4}}}, nil},
		{"application_clock", "*4\r\n:1\r\n:7\r\n:3\r\n:-1\r\n", 2, false,
			[]result{{allowed: true, counts: [4]int64{7}}, {allowed: true, granted: 2, counts: [4]int64{-1}}}, nil},
		{"instant_with_application_clock", "*3\r\n:-4\r\n:5\r\n:7\r\n", 1, false, nil, ErrBadReply},
		{"count_mismatch", "*3\r\n:0\r\n:0\r\n:1\r\n:5\r\n", 1, true, nil, ErrBadReply},
		{"count_mismatch_application_clock", "*3\r\n:1\r\n:5\r\n", 1, false, nil, ErrBadReply},
		{"not_an_array", ":1\r\n", 1, true, nil, ErrBadReply},
		{"bulk_string_element", "*5\r\n:0\r\n:0\r\n$1\r\n1\r\n:5\r\n:7\r\n", 1, true, nil, ErrBadReply},
		{"trailing_bytes", "*5\r\n:0\r\n:0\r\n:-4\r\n:5\r\n:7\r\nx", 1, true, nil, ErrBadReply},
		{"truncated", "*5\r\n:0\r\n:0\r\n:-4\r\n:5\r\n:7", 1, true, nil, ErrBadReply},
		{"huge_number", "*5\r\n:0\r\n:0\r\n:-4\r\n:5\r\n:12345678901234567890\r\n", 1, true, nil, ErrBadReply},
		{"empty", "", 1, true, nil, ErrBadReply},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := make([]result, tc.n)
			err := parseReply(&replyReader{raw: []byte(tc.raw)}, one, out, false, tc.server)
			if !errors.Is(err, tc.err) {
				t.Fatalf("parseReply(%q): got error %v, want %v", tc.raw, err, tc.err)
			}
			if err != nil {
				return
			}
			for i := range out {
				if out[i] != tc.want[i] {
					t.Fatalf("parseReply(%q)[%d]: got %+v, want %+v", tc.raw, i, out[i], tc.want[i])
				}
			}
		})
	}
}

// TestParseReplyParsed reads replies as go-redis parses them (Plain,
// and Batch per node on a Cluster), with the same rules as the raw ones.
func TestParseReplyParsed(t *testing.T) {
	one := func(int) int { return 1 }
	tests := []struct {
		name   string
		parsed any
		n      int
		node   bool // the reply of a node call
		want   []result
		err    error
	}{
		{"one_request", []any{int64(0), int64(0), int64(-4), int64(1790000000000), int64(7)}, 1, false,
			[]result{{allowed: true, at: 1790000000000, counts: [4]int64{7}}}, nil},
		{"two_requests_negative_count", []any{int64(12), int64(345), int64(-3), int64(5), int64(-1), int64(-4), int64(6), int64(1 << 53)}, 2, false,
			[]result{{at: 5, sec: 12, usec: 345, counts: [4]int64{-1}}, {allowed: true, at: 6, sec: 12, usec: 345, counts: [4]int64{1 << 53}}}, nil},
		{"count_mismatch", []any{int64(0), int64(0), int64(-4), int64(5)}, 1, false, nil, ErrBadReply},
		{"not_an_array", int64(1), 1, false, nil, ErrBadReply},
		{"nil", nil, 1, false, nil, ErrBadReply},
		{"string_element", []any{int64(0), int64(0), "1", int64(7)}, 1, false, nil, ErrBadReply},
		{"node_call_elsewhere", []any{int64(0), int64(0), int64(-1), int64(0), int64(-6), int64(6), int64(2)}, 2, true,
			[]result{{elsewhere: true}, {allowed: true, at: 6, granted: 2, counts: [4]int64{2}}}, nil},
		{"elsewhere_outside_a_node_call", []any{int64(0), int64(0), int64(-1), int64(0)}, 1, false, nil, ErrBadReply},
		{"off_clock", []any{int64(12), int64(345), int64(-2), int64(0), int64(-4), int64(6), int64(2)}, 2, false,
			[]result{{offClock: true, at: 12000, sec: 12, usec: 345}, {allowed: true, at: 6, sec: 12, usec: 345, counts: [4]int64{2}}}, nil},
		{"verdict_below_minus_two_application_clock", []any{int64(-3), int64(0), int64(0)}, 1, true, nil, ErrBadReply},
		// A verdict past what any admission grants (1 + MaxLimit) is
		// not an answer: never an admission of 2^63 units.
		{"verdict_past_the_largest_grant", []any{int64(0), int64(0), int64(limiter.MaxLimit + 2), int64(7)}, 1, false, nil, ErrBadReply},
		{"moved_verdict_min_int64", []any{int64(0), int64(0), int64(math.MinInt64), int64(6), int64(7)}, 1, false, nil, ErrBadReply},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := make([]result, tc.n)
			// Replies with Redis's clock, but for cases named so.
			server := !strings.HasSuffix(tc.name, "_application_clock")
			err := parseReply(&replyReader{parsed: tc.parsed, isParsed: true}, one, out, tc.node, server)
			if !errors.Is(err, tc.err) {
				t.Fatalf("parseReply(%v): got error %v, want %v", tc.parsed, err, tc.err)
			}
			if err != nil {
				return
			}
			for i := range out {
				if out[i] != tc.want[i] {
					t.Fatalf("parseReply(%v)[%d]: got %+v, want %+v", tc.parsed, i, out[i], tc.want[i])
				}
			}
		})
	}
}

// FuzzParseRaw: no raw input panics the parser, and what it accepts has
// the announced shape.
func FuzzParseRaw(f *testing.F) {
	f.Add([]byte("*5\r\n:0\r\n:0\r\n:-4\r\n:1790000000000\r\n:7\r\n"))
	f.Add([]byte("*8\r\n:12\r\n:345\r\n:-3\r\n:5\r\n:-1\r\n:-4\r\n:6\r\n:9\r\n"))
	f.Add([]byte("*4\r\n:1\r\n:7\r\n:0\r\n:9\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		out := make([]result, 2)
		for _, server := range []bool{false, true} {
			_ = parseReply(&replyReader{raw: b}, func(int) int { return 1 }, out[:1], false, server)
			_ = parseReply(&replyReader{raw: b}, func(int) int { return 1 }, out, true, server)
		}
	})
}
