package headers

import "time"

// RetryAfterSeconds returns the Retry-After value for a wait of d: whole
// seconds, rounded up so that a client waiting that long never arrives
// before the window resets, and at least 1, because "Retry-After: 0"
// invites an immediate retry that would be refused. 29.5s gives 30, 1ms
// gives 1, exactly 30s gives 30, and zero or a negative wait gives 1.
func RetryAfterSeconds(d time.Duration) int64 {
	if d <= time.Second {
		return 1
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

// ceilSeconds returns a wait of d in whole seconds rounded up, and 0 for a
// wait that is not positive. It gives the draft's reset parameter, which
// may be 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return RetryAfterSeconds(d)
}

// unixCeil returns t in Unix seconds, rounded up: a reset announced for a
// whole second must not come before the real boundary of a window whose
// length is not a whole number of seconds.
func unixCeil(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() != 0 {
		s++
	}
	return s
}
