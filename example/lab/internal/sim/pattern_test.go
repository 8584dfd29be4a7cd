package sim

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestParse(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		in   string
		want []Request
	}{
		{"one_timestamp", "0.5\n", []Request{{500 * ms, DefaultKey}}},
		{"comments_and_blank_lines", "# header\n\n  \n0.1\n# more\n0.2", []Request{{100 * ms, DefaultKey}, {200 * ms, DefaultKey}}},
		{"keys_and_spaces", " 0.1 , alice \n0.2,bob\n0.3,\n", []Request{{100 * ms, "alice"}, {200 * ms, "bob"}, {300 * ms, DefaultKey}}},
		{"crlf_line_ends", "0.1,a\r\n0.2,b\r\n", []Request{{100 * ms, "a"}, {200 * ms, "b"}}},
		{"sorted_stably", "0.3,a\n0.1,b\n0.3,c\n0.2,d\n", []Request{{100 * ms, "b"}, {200 * ms, "d"}, {300 * ms, "a"}, {300 * ms, "c"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(strings.NewReader(tt.in), "x.csv")
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(p.Requests, tt.want) {
				t.Errorf("Parse(%q) = %v, want %v", tt.in, p.Requests, tt.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // the whole error text
		is   error
	}{
		{"empty", "", "sim: pattern has no requests: x.csv holds no timestamp", ErrEmptyPattern},
		{"only_comments", "# nothing\n\n", "sim: pattern has no requests: x.csv holds no timestamp", ErrEmptyPattern},
		{"header_line", "time,key\n0.1,a\n", `x.csv:1: timestamp "time": not a number of seconds (digits, optionally a '.' and more digits) (comment a header line out with "#")`, nil},
		{"bad_third_line", "0.1\n0.2\nabc\n", `x.csv:3: timestamp "abc": not a number of seconds (digits, optionally a '.' and more digits) (comment a header line out with "#")`, nil},
		{"negative", "# c\n-0.5\n", `x.csv:2: timestamp "-0.5": negative: timestamps are seconds since 0, never before`, nil},
		{"three_fields", "0.1,a,b\n", "x.csv:1: 3 fields, want a timestamp and at most a key", nil},
		{"too_precise", "0.1234567891\n", `x.csv:1: timestamp "0.1234567891": more than 9 decimal places`, nil},
		{"long_line", "0.1\n" + strings.Repeat("9", maxLine+1) + "\n", "x.csv:2: sim: pattern too large: line longer than 65536 bytes", ErrPatternTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tt.in), "x.csv")
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Parse(%.40q) error = %v, want %q", tt.in, err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("Parse(%.40q) error %v is not %v", tt.in, err, tt.is)
			}
		})
	}
}

func TestParseTooManyRequests(t *testing.T) {
	in := strings.Repeat("1\n", MaxRequests+1)
	_, err := Parse(strings.NewReader(in), "big.csv")
	want := "big.csv:1000001: sim: pattern too large: more than 1000000 requests"
	if err == nil || err.Error() != want || !errors.Is(err, ErrPatternTooLarge) {
		t.Fatalf("Parse(%d lines) error = %v, want %q", MaxRequests+1, err, want)
	}
}

func TestParseReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	_, err := Parse(iotest.ErrReader(boom), "x.csv")
	if !errors.Is(err, boom) || err.Error() != "sim: read x.csv: disk on fire" {
		t.Fatalf("Parse(failing reader) error = %v, want it to wrap %v", err, boom)
	}
}

func TestWriteCSVRoundTrip(t *testing.T) {
	p := &Pattern{Name: "rt", Requests: []Request{{0, "a"}, {900 * time.Millisecond, "b"}, {1_000_000_001, "a"}}}
	var buf bytes.Buffer
	if err := p.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	q, err := Parse(&buf, "rt")
	if err != nil {
		t.Fatalf("Parse(WriteCSV(p)): %v", err)
	}
	if !reflect.DeepEqual(q, p) {
		t.Errorf("Parse(WriteCSV(p)) = %v, want %v", q, p)
	}
	if err := p.Shift(-time.Second).WriteCSV(&buf); err == nil {
		t.Error("WriteCSV of an instant before the epoch: got nil error")
	}
}

// The lab's built-in patterns must parse and say what their comments say.
func TestBuiltinPatternFiles(t *testing.T) {
	tests := []struct {
		file        string
		n           int
		first, last time.Duration
	}{
		{"edge.csv", 20, 900 * time.Millisecond, 1090 * time.Millisecond},
		{"steady.csv", 50, 0, 3920 * time.Millisecond},
		{"burst.csv", 50, 500 * time.Millisecond, 2524 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p := loadPattern(t, tt.file)
			got := []any{len(p.Requests), p.Requests[0].At, p.Requests[len(p.Requests)-1].At, p.Keys()}
			want := []any{tt.n, tt.first, tt.last, 1}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: (requests, first, last, keys) = %v, want %v", tt.file, got, want)
			}
		})
	}
}

func loadPattern(t *testing.T, file string) *Pattern {
	t.Helper()
	f, err := os.Open("../../testdata/patterns/" + file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := Parse(f, strings.TrimSuffix(file, ".csv"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// FuzzParse checks that no input makes Parse panic, that what it accepts
// is sorted and within bounds, and that writing it back reads the same.
func FuzzParse(f *testing.F) {
	f.Add("0.90\n0.91,alice\n# c\n\n1.00 , bob\n")
	f.Add("time,key\n")
	f.Add("3\n1\n2\n")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := Parse(strings.NewReader(in), "fuzz")
		if err != nil {
			return
		}
		for i, r := range p.Requests {
			if r.At < 0 || r.Key == "" || i > 0 && r.At < p.Requests[i-1].At {
				t.Fatalf("Parse(%q): request %d = %+v out of order or bounds", in, i, r)
			}
		}
		var buf bytes.Buffer
		if err := p.WriteCSV(&buf); err != nil {
			t.Fatal(err)
		}
		q, err := Parse(&buf, "fuzz")
		if err != nil || !reflect.DeepEqual(p, q) {
			t.Fatalf("Parse(WriteCSV(Parse(%q))) = %v, %v; want %v", in, q, err, p)
		}
	})
}
