package testfixture

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A Traffic is a pattern of testdata/traffic: requests in the lab's CSV
// form (a timestamp in decimal seconds from the Unix epoch, optionally a
// comma and a key; '#' starts a comment line) and, on a comment line
// starting "# expect:", the rate to replay it under and the number of
// requests each limiter must admit:
//
//	# expect: limit=10 window=1s fixed-window=20 sliding-log=10
type Traffic struct {
	Name     string
	Requests []Request // sorted by At, stably
	Limit    int64
	Window   time.Duration
	// Admitted maps a limiter's name, as the lab's simulator names it
	// ("fixed-window", "sliding-log", ...), to the requests it admits.
	Admitted map[string]int
}

// A Request is one request of a Traffic.
type Request struct {
	At  time.Duration // since the Unix epoch
	Key string        // "client" when the line names none, as in the lab
}

// ReadTraffic reads the pattern at path.
func ReadTraffic(path string) (*Traffic, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tr := &Traffic{Name: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), Admitted: map[string]int{}}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "# expect:"); ok {
			if err := tr.parseExpect(rest); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", path, n, err)
			}
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		ts, key, _ := strings.Cut(line, ",")
		key = strings.TrimSpace(key)
		if key == "" {
			key = "client"
		}
		sec, err := strconv.ParseFloat(strings.TrimSpace(ts), 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		tr.Requests = append(tr.Requests, Request{At: time.Duration(sec*1e3+0.5) * time.Millisecond, Key: key})
	}
	if tr.Limit == 0 || len(tr.Admitted) == 0 || len(tr.Requests) == 0 {
		return nil, fmt.Errorf("%s: want requests and an \"# expect:\" line with limit, window and admitted counts", path)
	}
	sort.SliceStable(tr.Requests, func(i, j int) bool { return tr.Requests[i].At < tr.Requests[j].At })
	return tr, nil
}

func (tr *Traffic) parseExpect(s string) error {
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return fmt.Errorf("expect: %q is not name=value", f)
		}
		var err error
		switch k {
		case "limit":
			tr.Limit, err = strconv.ParseInt(v, 10, 64)
		case "window":
			tr.Window, err = time.ParseDuration(v)
		default:
			tr.Admitted[k], err = strconv.Atoi(v)
		}
		if err != nil {
			return fmt.Errorf("expect: %s: %w", k, err)
		}
	}
	return nil
}
