package sim

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// maxWholeSeconds bounds a timestamp's integer part so that it fits a
// time.Duration (±292 years) with room to add a window: 9e9 s is the year
// 2255 as a Unix time.
const maxWholeSeconds = 9_000_000_000

// parseSeconds reads a non-negative decimal number of seconds with at most
// nine decimal places ("0.90", "1700000000.123456") exactly, without going
// through a float: 0.9 s is 900,000,000 ns, not 899,999,999.
func parseSeconds(s string) (time.Duration, error) {
	if strings.HasPrefix(s, "-") {
		return 0, errors.New("negative: timestamps are seconds since 0, never before")
	}
	whole, frac, hasDot := strings.Cut(s, ".")
	if whole == "" || !allDigits(whole) || hasDot && (frac == "" || !allDigits(frac)) {
		return 0, errors.New("not a number of seconds (digits, optionally a '.' and more digits)")
	}
	if len(frac) > 9 {
		return 0, errors.New("more than 9 decimal places")
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > maxWholeSeconds {
		return 0, errors.New("too large (at most 9000000000 seconds)")
	}
	var ns int64
	if frac != "" {
		ns, _ = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
	}
	return time.Duration(w)*time.Second + time.Duration(ns), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// formatSeconds writes d as seconds with the fewest decimals (at least
// two) that keep it exact: 900ms is "0.90", 1ms is "0.001".
func formatSeconds(d time.Duration) string {
	s := strconv.FormatInt(int64(d/time.Second), 10)
	f := strconv.FormatInt(int64(d%time.Second)+int64(time.Second), 10)[1:]
	f = strings.TrimRight(f, "0")
	for len(f) < 2 {
		f += "0"
	}
	return s + "." + f
}
