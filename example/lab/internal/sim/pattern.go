package sim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// MaxRequests bounds the requests of one pattern, so that a wrong file
// (a binary, a whole disk image) fails quickly instead of filling memory.
const MaxRequests = 1_000_000

// maxLine bounds one line of a pattern file.
const maxLine = 64 << 10

// DefaultKey is the key of requests whose line names none.
const DefaultKey = "client"

// A Request is one request of a pattern.
type Request struct {
	// At is the request's instant as an offset from the Unix epoch, so
	// that 0.90 s falls in the window [0 s, 1 s) as the limiter sees it.
	At time.Duration
	// Key is the client the request counts against.
	Key string
}

// A Pattern is a replayable list of requests in time order. The zero
// Pattern has no requests; Simulate refuses it.
type Pattern struct {
	// Name labels the pattern in tables and plots.
	Name string
	// Requests are sorted by At; requests with equal instants keep their
	// order of appearance.
	Requests []Request
}

// Parse reads a pattern in the lab's CSV form: one request per line, a
// timestamp in decimal seconds ("0.90", "1700000000.25"), then optionally
// a comma and a key. Blank lines and lines starting with '#' are skipped;
// spaces around fields are ignored; fields are not quoted. Lines need not
// be in time order (logs written by several threads rarely are): the
// requests are sorted, stably. Errors name the line: "name:12: ...".
func Parse(r io.Reader, name string) (*Pattern, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	p := &Pattern{Name: name}
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		req, err := parseLine(text)
		if err != nil {
			return nil, &ParseError{Name: name, Line: line, Err: err}
		}
		if len(p.Requests) == MaxRequests {
			return nil, &ParseError{Name: name, Line: line, Err: fmt.Errorf("%w: more than %d requests", ErrPatternTooLarge, MaxRequests)}
		}
		p.Requests = append(p.Requests, req)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, &ParseError{Name: name, Line: line + 1, Err: fmt.Errorf("%w: line longer than %d bytes", ErrPatternTooLarge, maxLine)}
		}
		return nil, fmt.Errorf("sim: read %s: %w", name, err)
	}
	if len(p.Requests) == 0 {
		return nil, fmt.Errorf("%w: %s holds no timestamp", ErrEmptyPattern, name)
	}
	sortRequests(p)
	return p, nil
}

func sortRequests(p *Pattern) {
	sort.SliceStable(p.Requests, func(i, j int) bool { return p.Requests[i].At < p.Requests[j].At })
}

func parseLine(text string) (Request, error) {
	fields := strings.Split(text, ",")
	if len(fields) > 2 {
		return Request{}, fmt.Errorf("%d fields, want a timestamp and at most a key", len(fields))
	}
	ts := strings.TrimSpace(fields[0])
	at, err := parseSeconds(ts)
	if err != nil {
		hint := ""
		if hasLetter(ts) {
			hint = ` (comment a header line out with "#")`
		}
		return Request{}, fmt.Errorf("timestamp %q: %v%s", ts, err, hint)
	}
	key := DefaultKey
	if len(fields) == 2 {
		if k := strings.TrimSpace(fields[1]); k != "" {
			key = k
		}
	}
	return Request{At: at, Key: key}, nil
}

func hasLetter(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }) >= 0
}

// Keys returns the number of distinct keys in the pattern.
func (p *Pattern) Keys() int {
	seen := make(map[string]struct{})
	for _, r := range p.Requests {
		seen[r.Key] = struct{}{}
	}
	return len(seen)
}

// Shift returns a copy of p with every request moved by d. The lab's
// exercise uses it to start the edge pattern half a second earlier.
func (p *Pattern) Shift(d time.Duration) *Pattern {
	q := &Pattern{Name: p.Name, Requests: make([]Request, len(p.Requests))}
	for i, r := range p.Requests {
		q.Requests[i] = Request{At: r.At + d, Key: r.Key}
	}
	return q
}

// WriteCSV writes p in the form Parse reads. Parse refuses instants before
// the epoch, so WriteCSV does too.
func (p *Pattern) WriteCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, r := range p.Requests {
		if r.At < 0 {
			return fmt.Errorf("sim: write %s: instant %v is before the epoch", p.Name, r.At)
		}
		fmt.Fprintf(bw, "%s,%s\n", formatSeconds(r.At), r.Key)
	}
	return bw.Flush()
}
