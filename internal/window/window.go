// Package window holds the arithmetic of epoch-aligned fixed windows that
// the limiter's decision rule and its stores share.
package window

// ID returns the id of the window of length windowMs that holds the
// instant ms (Unix milliseconds), and that window's start and end. Division
// floors, so instants before 1970 get ids that still increase with time.
func ID(ms, windowMs int64) (id, start, end int64) {
	id = ms / windowMs
	if ms%windowMs < 0 {
		id--
	}
	start = id * windowMs
	return id, start, start + windowMs
}
